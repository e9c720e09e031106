"""Quick looks for hosts: stills of a few frames and preview pictures, through a render.

stills (a handful of frames rendered to pictures) · previews (source thumbnails, face overlays,
face pickers, a frame rendered for a host's viewer).
"""
