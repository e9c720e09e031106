"""Shots: a video or an image sequence rendered through the frame pipeline, in five wings.

Each wing answers one question and imports only the wings below it, bottom to top:
contract (what a render is asked: the request, its command-line codec, which frames, the input)
· plan (who is swapped where: the ShotPlan) · output (what is written and what it carries) ·
run (how a render goes: pass 1, pass 2, their threads, the tally, a plan without a render) ·
looks (quick pictures for hosts).
"""
