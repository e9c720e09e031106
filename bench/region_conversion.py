"""CPU milliseconds of pass 2's colour stage per frame, whole-frame conversion against region
frames: the whole decoded yuv420p picture to BGR (io.video.yuv.yuv_to_bgr) against the box
around one face that a swap converts when the pictures pass through
(io.video.frame.DecodedFrame.pixels_for of the swapper crop's footprint, with and without a
restorer's crop), and a frame without a face (nothing converted). 1080p and 4K; the swapper's
crop square is a fifth of the frame height. The rotated_ cases are the same upright frame of a
clip stored sideways (display rotation 90): the whole stored picture converted and turned
upright, with numpy's turn and with OpenCV's (the reader's, as for the frames still converted
whole), against the stored box of each face converted and turned upright. --bits 10: the same
for a 10-bit ProRes 422 picture (yuv422p10le, BT.709 limited range, to BGR uint16), with
swscale's whole conversion (bgr48le) beside io.video.yuv's.

    python bench/region_conversion.py [--rounds 30] [--bits 10]

Prints one JSON object: the median CPU ms (process time, so other load counts less) per case,
and each box's size.
"""

from __future__ import annotations

import numpy as np
from colour import cpu_ms, per_size_main, smooth_scene

from facefuse.geometry import template_points
from facefuse.io.video import DecodedFrame
from facefuse.io.video.yuv import yuv_planes, yuv_to_bgr
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.paste import crop_footprint
from facefuse.types import Roi, enclosing

# (template, crop px) of inswapper's crop and of GFPGAN's (REFERENCE.md section 3)
SWAPPER, RESTORER = ("arcface_128", 128), ("ffhq_512", 512)
_BT709 = 1


def _footprint(width: int, height: int, specs: list[tuple[str, int]]) -> Roi:
    """The union of the crops' footprints of a face whose swapper crop is a fifth of the frame
    high, mid-frame (its landmarks are the swapper's template at that size)."""
    side = height / 5.0
    kps5 = template_points(SWAPPER[0], 1) * side + (width / 2 - side / 2, height / 3)
    box = enclosing(crop_footprint((height, width), kps5, template, size)
                    for template, size in specs)
    assert box is not None
    return box


def _scene(width: int, height: int, bits: int) -> np.ndarray:
    """smooth_scene, at 16 bits with a fine ramp (the low two of 10 bits vary) for bits 10."""
    scene = smooth_scene(width, height)
    if bits == 8:
        return scene
    deep = scene.astype(np.uint16) * 257
    return deep + np.minimum((np.arange(width, dtype=np.uint16) % 64 * 4)[None, :, None],
                             65535 - deep)


def _measure(width: int, height: int, rounds: int, bits: int = 8) -> dict[str, object]:
    """Each case's median CPU ms for one frame size (bits 10: yuv422p10le)."""
    fmt = "yuv422p10le" if bits == 10 else "yuv420p"
    picture = bgr_to_picture(_scene(width, height, bits), fmt, _BT709, False)
    assert picture is not None
    def pending() -> DecodedFrame:  # a frame of its own each time: it keeps what it converts
        return DecodedFrame.of_picture(picture, "bgr48le" if bits == 10 else "bgr24")

    boxes = {name: pending().pixels_for(_footprint(width, height, specs)).box
             for name, specs in (("swap", [SWAPPER]), ("swap_and_restore", [SWAPPER, RESTORER]))}
    out: dict[str, object] = {"whole_frame_ms": cpu_ms(lambda: pending().to_ndarray(), rounds)}
    if bits == 10:
        out["swscale_whole_frame_ms"] = cpu_ms(lambda: picture.to_ndarray(format="bgr48le"),
                                               rounds)
    for name, box in boxes.items():
        out[f"one_face_{name}_ms"] = cpu_ms(lambda box=box: pending().region(box), rounds)
        out[f"one_face_{name}_box"] = f"{box.x1 - box.x0}x{box.y1 - box.y0}"
    out["no_face_ms"] = cpu_ms(lambda: pending().converted(), rounds)
    stored = bgr_to_picture(np.ascontiguousarray(np.rot90(_scene(width, height, bits), -1)),
                            fmt, _BT709, False)
    turned_planes = yuv_planes(stored)
    assert turned_planes is not None
    def turned() -> DecodedFrame:  # upright width x height, as above
        return DecodedFrame.of_picture(stored, "bgr48le" if bits == 10 else "bgr24", turns=1)

    out["rotated_whole_frame_numpy_turn_ms"] = cpu_ms(  # numpy's turn of the whole frame
        lambda: np.ascontiguousarray(np.rot90(yuv_to_bgr(turned_planes), 1)), rounds)
    out["rotated_whole_frame_ms"] = cpu_ms(lambda: turned().to_ndarray(), rounds)
    for name, box in boxes.items():
        out[f"rotated_one_face_{name}_ms"] = cpu_ms(lambda box=box: turned().region(box), rounds)
    return out


def main() -> int:
    return per_size_main(__doc__.splitlines()[0], _measure, 30)


if __name__ == "__main__":
    raise SystemExit(main())
