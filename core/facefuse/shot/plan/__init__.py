"""Who is swapped where: the shot plan a render, a preview, the review and the hosts all read.

analysis (pass 1's detections, cached) · cuts · tracking (faces into tracks) · people (tracks into
people) · smoothing · overrides and override_fit (the user's corrections, fitted to the frames
rendered) · plan (the ShotPlan and make_plan) · options (the options a request's plan is made
with, and the checks of who has a source).
"""
