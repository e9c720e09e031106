"""Who is swapped where: the shot plan a render, a preview, the review and the hosts all read.

analysis (pass 1's detections, cached) · cuts · tracking (faces into tracks) · people (tracks into
people) · casting (who is swapped with which source, and the checks of who has one) ·
smoothing · overrides and override_fit (the user's corrections, fitted to the frames rendered)
· options (what a request's plan is made with) · make (make_plan) · plan (the ShotPlan).
"""
