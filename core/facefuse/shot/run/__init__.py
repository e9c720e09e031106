"""How a render goes: pass 1 analyses, pass 2 swaps and writes, on threads of their own.

render (the entry: one request rendered) · pass_one and frame_analysis (the analysis of the
range) · early_targets (pass 2's targets while pass 1 runs) · pass_two (read, swap, write) ·
streaming and held_frames (the threads and the frames they hand on) · tally (what was done) ·
replacement (which finished frames a render would replace) · plan_only (the plan, no render).
"""
