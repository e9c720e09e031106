"""Accuracy and CPU cost of the YUV <-> BGR conversions, swscale's (before io.yuv) and io.yuv's.

    python bench/colour.py --clip a.mp4 --clip b.mp4 [--frames 10] [--bt709] [--out colour.json]

Accuracy: the reference is the float64 formula of io.yuv's docstring, rounded to the nearest
level, on the same 4:4:4 planes (swscale's chroma upsampling, which both paths share). For the
reader it is applied to each decoded picture, for the writer to the BGR frame the reader gave;
reported are the share of values off the reference and the largest error, per clip (writer10:
the same frame as uint16 to 10-bit 4:4:4, as ProRes / DNxHR 444 are written). --bt709
adds a copy of the first clip re-encoded tagged BT.709 (limited range), built with PyAV.
Cost: per-frame CPU milliseconds (process time, the median of repeats) of each conversion on
the first picture of every clip, before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np

from facefuse.io import yuv
from facefuse.io.analysis_pictures import analysis_picture


def reference_bgr(planes: list[np.ndarray], matrix: yuv.YuvMatrix) -> np.ndarray:
    """The float64 formula, rounded: BGR uint8 from 4:4:4 planes."""
    yuv444 = np.stack(planes, axis=-1).astype(np.float64)
    coefficients = matrix.to_bgr()
    out = yuv444 @ coefficients[:, :3].T + coefficients[:, 3]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def reference_yuv(bgr: np.ndarray, matrix: yuv.YuvMatrix, levels: int = 1) -> np.ndarray:
    """The float64 inverse formula, rounded: (H, W, 3) Y, Cb, Cr levels (levels=4: 10-bit)."""
    coefficients = matrix.from_bgr() * levels
    out = bgr.astype(np.float64) @ coefficients[:, :3].T + coefficients[:, 3]
    return np.clip(np.rint(out), 0, 256 * levels - 1).astype(np.uint16)


def old_reader(picture: Any) -> np.ndarray:
    full = yuv.full_chroma(picture)
    return full.to_ndarray(format="bgr24")


def old_writer_444(bgr: np.ndarray) -> Any:
    return av.VideoFrame.from_ndarray(bgr, format="bgr24").reformat(
        format="yuv444p", dst_colorspace="itu709", dst_color_range=1)


def errors(values: np.ndarray, reference: np.ndarray) -> tuple[int, int, int]:
    """(values off the reference, values, largest error)."""
    diff = np.abs(values.astype(np.int32) - reference)
    return int(np.count_nonzero(diff)), diff.size, int(diff.max())


def accuracy(clip: Path, frames: int) -> dict[str, Any]:
    """Old and new reader and writer against the reference over a clip's first frames."""
    totals = {key: [0, 0, 0] for key in ("reader_old", "reader_new", "writer_old", "writer_new",
                                          "writer10_old", "writer10_new")}
    tags = None
    with av.open(str(clip)) as container:
        for index, picture in enumerate(container.decode(video=0)):
            if index >= frames:
                break
            full = yuv.full_chroma(picture)
            matrix = yuv.matrix_of(picture)
            if full is None or matrix is None:
                raise SystemExit(f"{clip}: {picture.format.name} is not on the io.yuv path")
            tags = (picture.format.name, picture.colorspace, picture.color_range, matrix)
            ref = reference_bgr(yuv.picture_planes(full), matrix)
            new = yuv.picture_to_bgr(picture)
            assert new is not None
            out_matrix = yuv.matrix_for(1, 1, "yuv444p")
            assert out_matrix is not None
            ref_out = reference_yuv(new, out_matrix)
            old_out = np.stack(yuv.picture_planes(old_writer_444(new)), axis=-1)
            new_out = np.stack(yuv.bgr_to_yuv444(new, out_matrix), axis=-1)
            deep = new.astype(np.uint16) * 257
            ref10 = reference_yuv(new, out_matrix, levels=4)
            old10 = np.stack([np.frombuffer(p, "<u2").reshape(p.height, -1)[:, :p.width] for p in
                              av.VideoFrame.from_ndarray(deep, format="bgr48le").reformat(
                                  format="yuv444p10le", dst_colorspace="itu709",
                                  dst_color_range=1).planes], axis=-1)
            new10 = np.stack(yuv.bgr_to_yuv444(deep, out_matrix, bits=10), axis=-1)
            for key, (values, reference) in {
                    "reader_old": (old_reader(picture), ref), "reader_new": (new, ref),
                    "writer_old": (old_out, ref_out), "writer_new": (new_out, ref_out),
                    "writer10_old": (old10, ref10), "writer10_new": (new10, ref10)}.items():
                off, count, worst = errors(values, reference)
                totals[key] = [totals[key][0] + off, totals[key][1] + count,
                               max(totals[key][2], worst)]
    return {"clip": str(clip), "tags": repr(tags), **{
        key: {"share_off": off / count, "max_error": worst} for key, (off, count, worst)
        in totals.items()}}


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
    """Per-conversion CPU ms, before and after, on the clip's first picture."""
    with av.open(str(clip)) as container:
        picture = next(container.decode(video=0))
    bgr = yuv.picture_to_bgr(picture)
    assert bgr is not None
    deep = bgr.astype(np.uint16) * 257

    def old_deep(fmt: str) -> Any:
        return av.VideoFrame.from_ndarray(deep, format="bgr48le").reformat(
            format=fmt, dst_colorspace="itu709", dst_color_range=1)

    return {"clip": str(clip), "size": f"{picture.width}x{picture.height}", "ms": {
        "upsample_to_444": cpu_ms(lambda: yuv.full_chroma(picture)),
        "reader_old": cpu_ms(lambda: old_reader(picture)),
        "reader_new": cpu_ms(lambda: yuv.picture_to_bgr(picture)),
        "writer_yuv420p_old": cpu_ms(lambda: old_writer_444(bgr).reformat(format="yuv420p")),
        "writer_yuv420p_new": cpu_ms(lambda: yuv.bgr_to_picture(bgr, "yuv420p", 1, False)),
        "writer_yuv422p10le_old": cpu_ms(lambda: old_deep("yuv422p10le")),
        "writer_yuv422p10le_new": cpu_ms(lambda: yuv.bgr_to_picture(deep, "yuv422p10le", 1, False)),
        "writer_yuv444p10le_old": cpu_ms(lambda: old_deep("yuv444p10le")),
        "writer_yuv444p10le_new": cpu_ms(lambda: yuv.bgr_to_picture(deep, "yuv444p10le", 1, False)),
        **analysis_costs(picture)}}


def analysis_costs(picture: Any) -> dict[str, float]:
    """Pass 1's picture and one 400 px face box of it, before and after; nothing for a
    picture no larger than the detector (which takes the full conversion)."""
    small = analysis_picture(picture, 640)
    if small is None:
        return {}
    x0, y0 = picture.width // 3, picture.height // 4
    box = (x0, y0, min(picture.width, x0 + 400), min(picture.height, y0 + 400))

    def old_region() -> np.ndarray:
        planes = np.stack([p[box[1]:box[3], box[0]:box[2]]
                           for p in yuv.picture_planes(small.picture)])
        return av.VideoFrame.from_ndarray(planes, format=small.picture.format.name
                                          ).to_ndarray(format="bgr24")

    return {"analysis_picture": cpu_ms(lambda: analysis_picture(picture, 640)),
            "region_400px_box_old": cpu_ms(old_region),
            "region_400px_box_new": cpu_ms(lambda: small.region(box))}


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
            frame = yuv.bgr_to_picture(yuv.picture_to_bgr(picture), "yuv420p", 1, False)
            frame.pts = index
            target.mux(stream.encode(frame))
        target.mux(stream.encode(None))
    return out


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
