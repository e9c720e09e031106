"""Shots: a video or an image sequence rendered through the frame pipeline, frame by frame.

request (the public contract hosts build and read) · frames (which frames a render does) ·
inputs / outputs (readers and writers behind one interface each) · analysis, tracking,
smoothing (pass 1: the shot-level decisions) · render (the job: pass 1, then pass 2 through
streaming) · provenance (metadata and resume fingerprints) · previews (quick looks for hosts).
"""
