"""What a render writes, and what its outputs carry.

outputs (opening the writer of a request) · output_checks (what may be written where) · writers
(video, image sequences, mattes) · provenance (the metadata and fingerprints of a frame) · prints
(a render's fingerprints and metadata, worked out before its first frame).
"""
