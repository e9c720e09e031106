"""Accuracy and CPU cost of the YUV <-> BGR conversions, swscale's and io.video.yuv's.

    python bench/colour.py --clip a.mp4 --clip b.mp4 [--frames 10] [--bt709] [--out colour.json]

Accuracy, reader: io.video.yuv's conversion (its own bilinear chroma upsampling at the codec's
siting, then the matrix) against the float64 formula of the same filter rounded to the nearest
level ("reader_vs_reference"), and how far it lies from two other conversions: io.video.yuv's
matrix on swscale's 4:4:4 planes ("reader_vs_444") and swscale's whole conversion through 4:4:4
("reader_vs_swscale"). Writer: the float64 inverse formula applied to the BGR frame the reader
gave, against io.video.yuv's and swscale's 4:4:4 planes (writer10: the same frame as uint16 to
10-bit 4:4:4, as ProRes / DNxHR 444 are written). Reported per clip: the share of values that
differ, the largest and the mean difference. --bt709 adds a copy of the first clip re-encoded
tagged BT.709 (limited range), built with PyAV.
Cost: per-frame CPU milliseconds (process time, the median of repeats) of each conversion on
the first picture of every clip, swscale's and io.video.yuv's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np

from facefuse.io.video import DecodedFrame, yuv, yuv_write
from facefuse.types import Roi


def reference_yuv(bgr: np.ndarray, matrix: yuv.YuvMatrix, levels: int = 1) -> np.ndarray:
    """The float64 inverse formula, rounded: (H, W, 3) Y, Cb, Cr levels (levels=4: 10-bit)."""
    coefficients = matrix.from_bgr() * levels
    out = bgr.astype(np.float64) @ coefficients[:, :3].T + coefficients[:, 3]
    return np.clip(np.rint(out), 0, 256 * levels - 1).astype(np.uint16)


def reference_upsampled_bgr(planes: yuv.YuvPlanes, rounded: bool = True) -> np.ndarray:
    """The float64 formula of io.video.yuv's conversion, rounded (rounded False: not): each chroma
    sample sits at luma row 2i + 1/2 (4:2:0) and column 2j (MPEG-2) or 2j + 1/2 (centred),
    linear in between, the edge samples repeated beyond the picture. 10-bit planes: the
    levels divided by 4 and the result times 257 (uint16, Y 940 = 65535)."""
    height, width = planes.y.shape

    def linear(values: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
        low = np.floor(positions).astype(int)
        weight = (positions - low).reshape((-1, 1) if axis == 0 else (1, -1))
        last = values.shape[axis] - 1
        return (np.take(values, np.clip(low, 0, last), axis=axis) * (1 - weight)
                + np.take(values, np.clip(low + 1, 0, last), axis=axis) * weight)

    def upsampled(plane: np.ndarray) -> np.ndarray:
        values = plane.astype(np.float64)
        if planes.down == 2:
            values = linear(values, (np.arange(height) - 0.5) / 2, axis=0)
        if planes.across == 2:
            offset = 0.5 if planes.centred else 0.0
            values = linear(values, (np.arange(width) - offset) / 2, axis=1)
        return values

    yuv444 = np.stack([planes.y.astype(np.float64), upsampled(planes.cb),
                       upsampled(planes.cr)], axis=-1)
    coefficients = planes.matrix.to_bgr()
    deep = planes.bits == 10
    out = (yuv444 / (4.0 if deep else 1.0)) @ coefficients[:, :3].T + coefficients[:, 3]
    if deep:
        out *= 257.0
    if not rounded:
        return out
    return np.clip(np.rint(out), 0, 65535 if deep else 255).astype(np.uint16 if deep else np.uint8)


def swscale_reader(picture: Any) -> np.ndarray:
    """swscale's whole conversion through 4:4:4."""
    full = yuv.full_chroma(picture)
    return full.to_ndarray(format="bgr24")


def reader_444(picture: Any) -> np.ndarray:
    """io.video.yuv's matrix on swscale's 4:4:4 planes."""
    full = yuv.full_chroma(picture)
    matrix = yuv.matrix_of(picture)
    assert full is not None and matrix is not None
    y, cb, cr = yuv.picture_planes(full)
    return yuv.yuv444_to_bgr(y, cb, cr, matrix)


def swscale_writer_444(bgr: np.ndarray) -> Any:
    return av.VideoFrame.from_ndarray(bgr, format="bgr24").reformat(
        format="yuv444p", dst_colorspace="itu709", dst_color_range=1)


def errors(values: np.ndarray, reference: np.ndarray) -> tuple[int, int, int, int]:
    """(values off the reference, values, largest error, sum of the errors)."""
    diff = np.abs(values.astype(np.int32) - reference)
    return int(np.count_nonzero(diff)), diff.size, int(diff.max()), int(diff.sum())


def io_yuv_pictures(container: Any, clip: Path, frames: int, bits: int
                    ) -> Iterator[tuple[Any, yuv.YuvPlanes]]:
    """The first `frames` decoded pictures of `container` (the open `clip`) with their io.video.yuv
    planes; SystemExit when one is not on io.video.yuv's path at `bits`."""
    centred = yuv.chroma_centred(container.streams.video[0].codec_context.name)
    for index, picture in enumerate(container.decode(video=0)):
        if index >= frames:
            return
        planes = yuv.yuv_planes(picture, centred)
        if planes is None or planes.bits != bits:
            raise SystemExit(f"{clip}: {picture.format.name} (tags {picture.colorspace}, "
                             f"{picture.color_range}) is not on io.video.yuv's {bits}-bit path")
        yield picture, planes


def accuracy(clip: Path, frames: int) -> dict[str, Any]:
    """The reader and the writer against their references over a clip's first frames."""
    totals = {key: [0, 0, 0, 0] for key in (
        "reader_vs_reference", "reader_vs_444", "reader_vs_swscale", "writer_swscale",
        "writer_io_yuv", "writer10_swscale", "writer10_io_yuv")}
    tags = None
    with av.open(str(clip)) as container:
        for picture, planes in io_yuv_pictures(container, clip, frames, bits=8):
            tags = (picture.format.name, picture.colorspace, picture.color_range,
                    planes.matrix, "centred" if planes.centred else "co-sited")
            read = yuv.yuv_to_bgr(planes)
            out_matrix = yuv.matrix_for(1, 1, "yuv444p")
            assert out_matrix is not None
            ref_out = reference_yuv(read, out_matrix)
            swscale_out = np.stack(yuv.picture_planes(swscale_writer_444(read)), axis=-1)
            io_yuv_out = np.stack(yuv_write.bgr_to_yuv444(read, out_matrix), axis=-1)
            deep = read.astype(np.uint16) * 257
            ref10 = reference_yuv(read, out_matrix, levels=4)
            swscale_planes = av.VideoFrame.from_ndarray(deep, format="bgr48le").reformat(
                format="yuv444p10le", dst_colorspace="itu709", dst_color_range=1).planes
            swscale10 = np.stack([np.frombuffer(p, "<u2").reshape(p.height, -1)[:, :p.width]
                                  for p in swscale_planes], axis=-1)
            io_yuv10 = np.stack(yuv_write.bgr_to_yuv444(deep, out_matrix, bits=10), axis=-1)
            pairs = {"reader_vs_reference": (read, reference_upsampled_bgr(planes)),
                     "reader_vs_444": (read, reader_444(picture)),
                     "reader_vs_swscale": (read, swscale_reader(picture)),
                     "writer_swscale": (swscale_out, ref_out),
                     "writer_io_yuv": (io_yuv_out, ref_out),
                     "writer10_swscale": (swscale10, ref10), "writer10_io_yuv": (io_yuv10, ref10)}
            for key, (values, reference) in pairs.items():
                off, count, worst, total = errors(values, reference)
                totals[key] = [totals[key][0] + off, totals[key][1] + count,
                               max(totals[key][2], worst), totals[key][3] + total]
    return {"clip": str(clip), "tags": repr(tags), **{
        key: {"share_off": off / count, "max_error": worst, "mean_error": total / count}
        for key, (off, count, worst, total) in totals.items()}}


def cpu_ms(work: Callable[[], Any], repeats: int = 15) -> float:
    """Median CPU milliseconds of one call."""
    work()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append((time.process_time() - start) * 1000)
    return round(statistics.median(times), 2)


def costs(clip: Path) -> dict[str, Any]:
    """Per-conversion CPU ms, swscale's and io.video.yuv's, on the clip's first picture."""
    with av.open(str(clip)) as container:
        picture = next(container.decode(video=0))
        centred = yuv.chroma_centred(container.streams.video[0].codec_context.name)
    bgr = yuv.picture_to_bgr(picture, centred)
    assert bgr is not None
    deep = bgr.astype(np.uint16) * 257

    def swscale_deep(fmt: str) -> Any:
        return av.VideoFrame.from_ndarray(deep, format="bgr48le").reformat(
            format=fmt, dst_colorspace="itu709", dst_color_range=1)

    def io_yuv(frame: np.ndarray, fmt: str) -> Any:
        return yuv_write.bgr_to_picture(frame, fmt, 1, False)

    return {"clip": str(clip), "size": f"{picture.width}x{picture.height}", "ms": {
        "upsample_to_444": cpu_ms(lambda: yuv.full_chroma(picture)),
        "reader_swscale": cpu_ms(lambda: swscale_reader(picture)),
        "reader_444": cpu_ms(lambda: reader_444(picture)),
        "reader_io_yuv": cpu_ms(lambda: yuv.picture_to_bgr(picture, centred)),
        "writer_yuv420p_swscale": cpu_ms(
            lambda: swscale_writer_444(bgr).reformat(format="yuv420p")),
        "writer_yuv420p_io_yuv": cpu_ms(lambda: io_yuv(bgr, "yuv420p")),
        "writer_yuv422p10le_swscale": cpu_ms(lambda: swscale_deep("yuv422p10le")),
        "writer_yuv422p10le_io_yuv": cpu_ms(lambda: io_yuv(deep, "yuv422p10le")),
        "writer_yuv444p10le_swscale": cpu_ms(lambda: swscale_deep("yuv444p10le")),
        "writer_yuv444p10le_io_yuv": cpu_ms(lambda: io_yuv(deep, "yuv444p10le")),
        **analysis_costs(picture, centred)}}


def analysis_costs(picture: Any, centred: bool) -> dict[str, float]:
    """Pass 1's picture and one 400 px face box of it, by swscale's 4:4:4 path (swscale's 4:4:4
    picture, `small` shrunk from it, the box converted from its planes) and from the decoded
    planes; nothing for a picture no larger than the detector (which takes the full
    conversion)."""
    def frame(of: Any = picture) -> DecodedFrame:  # a frame of its own: it keeps its conversions
        return DecodedFrame.of_picture(of, "bgr24", centred=centred and of is picture)

    small = frame().small(640)
    if small is None:
        return {}
    x0, y0 = picture.width // 3, picture.height // 4
    box = Roi(x0, y0, min(picture.width, x0 + 400), min(picture.height, y0 + 400))
    size = small.pixels.shape[1], small.pixels.shape[0]
    full = picture.reformat(format="yuv444p")

    def swscale444_picture() -> Any:
        return picture.reformat(format="yuv444p").reformat(
            format="bgr24", width=size[0], height=size[1], interpolation="AREA").to_ndarray()

    return {"analysis_picture_swscale444": cpu_ms(swscale444_picture),
            "analysis_picture_planes": cpu_ms(lambda: frame().small(640)),
            "region_400px_box_swscale444": cpu_ms(lambda: frame(full).region(box)),
            "region_400px_box_planes": cpu_ms(lambda: frame().region(box))}


def bt709_copy(clip: Path, folder: Path, frames: int) -> Path:
    """The clip's first frames re-encoded as H.264 tagged BT.709 limited range."""
    out = folder / f"{clip.stem}-bt709.mp4"
    with av.open(str(clip)) as source, av.open(str(out), "w") as target:
        stream = target.add_stream("libx264", rate=25, options={"crf": "12"})
        stream.width, stream.height = source.streams.video[0].width, source.streams.video[0].height
        stream.pix_fmt = "yuv420p"
        stream.codec_context.colorspace, stream.codec_context.color_range = 1, 1
        for index, picture in enumerate(source.decode(video=0)):
            if index >= frames:
                break
            frame = yuv_write.bgr_to_picture(yuv.picture_to_bgr(picture), "yuv420p", 1, False)
            assert frame is not None
            frame.pts = index
            target.mux(stream.encode(frame))
        target.mux(stream.encode(None))
    return out


FRAME_SIZES = {"1080p": (1920, 1080), "4k": (3840, 2160)}


def smooth_scene(width: int, height: int) -> np.ndarray:
    """A BGR uint8 picture of smooth random colour (noise 16x upscaled), the same every call."""
    import cv2

    small = np.random.default_rng(0).integers(0, 256, (height // 16, width // 16, 3), np.uint8)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)


def per_size_main(description: str, measure: Callable[..., dict[str, Any]],
                  rounds: int) -> int:
    """The main() of a script timing one conversion per frame size on one thread (OpenCV
    single-threaded, as a pass-2 thread's cost): `measure(width, height, rounds, bits)` per
    size of FRAME_SIZES, printed as one JSON object; --rounds overrides `rounds`, --bits 8|10
    picks the pictures' bit depth."""
    import cv2

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--bits", type=int, choices=(8, 10), default=8)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    results = {name: measure(width, height, args.rounds, args.bits)
               for name, (width, height) in FRAME_SIZES.items()}
    print(json.dumps(results, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="YUV <-> BGR accuracy and cost.")
    parser.add_argument("--clip", type=Path, action="append", required=True)
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--bt709", action="store_true")
    parser.add_argument("--cost", type=Path, action="append", default=[],
                        help="clips to time the conversions on (e.g. a 1080p and a 4K one)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        clips = list(args.clip)
        if args.bt709:
            clips.append(bt709_copy(clips[0], Path(folder), args.frames))
        result = {"accuracy": [accuracy(clip, args.frames) for clip in clips],
                  "cost": [costs(clip) for clip in args.cost]}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
