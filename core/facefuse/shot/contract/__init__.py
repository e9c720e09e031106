"""What a render is asked to do: the request hosts build, its command-line codec and the input.

request (RenderRequest and the reports a render gives back) · commandline and option_types (the
request as command-line arguments and back) · frames (which frames a render analyses and renders)
· inputs (the shot a render reads: a video or an image sequence behind one interface).
"""
