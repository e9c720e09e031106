"""What a host shows of a clip before anything is analysed: its frame numbers.

The input is opened the way a render opens it (FFmpeg for a video, the files of an image
sequence), so the numbers are those a RenderRequest's `frames` name: a video's count from
`start_number`, a sequence's its files' own (1001-1100 for name.1001.exr ... name.1100.exr).
"""

from __future__ import annotations


def clip_frames(spec: str, start_number: int = 1, conform_vfr: bool = False) -> tuple[int, ...]:
    """The frame numbers of a video file or an image-sequence pattern, ascending; InputError
    (one sentence) when it cannot be opened."""
    from ..shot.contract.inputs import open_input  # FFmpeg and OpenImageIO load with the first clip

    shot = open_input(spec, start_number, conform_vfr)
    try:
        return tuple(shot.frame_numbers)
    finally:
        shot.close()
