"""facefuse: a local face replacement engine (detect, align, embed, swap, enhance, paste back)."""

__version__ = "0.1.0"
