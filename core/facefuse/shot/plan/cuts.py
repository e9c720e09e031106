"""Shot cuts, found from the frames the analysis pass decodes anyway.

Each decoded frame gets a small signature: a colour histogram (16 bins per BGR channel) of a
64 x 36 area-filtered copy and a 32 x 18 thumbnail, both of its display-referred picture (the
same conversion the detector sees). Two consecutive frames are a cut when both

- the histogram distance (half the L1 distance of the normalised histograms, mean over the
  three channels: the share of the picture whose colour changed bins, 0..1) is at least
  HISTOGRAM_CUT, and
- the mean absolute difference of the thumbnails (0..1 of full scale) is at least PIXEL_CUT.

The histogram ignores motion (a pan or a turning head keeps its colours), the thumbnail
difference ignores a global shift of colours that leaves the picture in place; a new shot
changes both. Measured on the clips in ../shared/testdata: consecutive frames of one shot stay
below 0.04 (histogram) and 0.02 (thumbnail), any frame of one clip against any frame of another
is above 0.23 and 0.09; the thresholds sit about four times above the first. A cut between two
shots of very similar framing and colour (two angles of one scene) can pass unnoticed; a
dissolve is not a cut. The signatures are cached with the detections, so cuts cost nothing on
a re-render.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np

from ...geometry import DisplayConversion, to_display_uint8

HISTOGRAM_WH = (64, 36)  # (width, height) of the copy the histogram is taken from
THUMBNAIL_WH = (32, 18)  # (width, height) of the stored thumbnail
HISTOGRAM_BINS = 16
HISTOGRAM_CUT = 0.15
PIXEL_CUT = 0.05


@dataclass(frozen=True, slots=True, eq=False)
class FrameSignature:
    """What cut detection keeps of one frame.

    histogram: float32 (3, HISTOGRAM_BINS), each BGR channel's row sums to 1.
    thumbnail: uint8 (18, 32, 3) BGR, display-referred.
    """

    histogram: np.ndarray
    thumbnail: np.ndarray


def frame_signature(frame: np.ndarray, colour: DisplayConversion | None = None
                    ) -> FrameSignature:
    """The signature of a frame (any engine dtype, BGR(A); see types.py); colour converts a
    plate's space to display, as for detection (None: already display-referred)."""
    # Resize first, alpha and all (a channel view of a 4K plate would be copied whole).
    pixels = frame if frame.flags.c_contiguous else np.ascontiguousarray(frame)
    shrunk = cv2.resize(pixels, HISTOGRAM_WH, interpolation=cv2.INTER_AREA)
    small = to_display_uint8(np.ascontiguousarray(shrunk[..., :3]), colour)
    thumbnail = cv2.resize(small, THUMBNAIL_WH, interpolation=cv2.INTER_AREA)
    levels = small.reshape(-1, 3) // (256 // HISTOGRAM_BINS)
    counts = np.stack([np.bincount(levels[:, c], minlength=HISTOGRAM_BINS) for c in range(3)])
    histogram = (counts / levels.shape[0]).astype(np.float32)
    return FrameSignature(histogram, thumbnail)


def signature_change(a: FrameSignature, b: FrameSignature) -> tuple[float, float]:
    """(histogram distance, thumbnail difference) between two frames, each 0..1 (see the module
    docstring)."""
    histogram = 0.5 * float(np.abs(a.histogram.astype(np.float64) - b.histogram).sum(axis=1)
                            .mean())
    pixels = float(np.abs(a.thumbnail.astype(np.float64) - b.thumbnail).mean()) / 255.0
    return histogram, pixels


def is_cut(a: FrameSignature, b: FrameSignature) -> bool:
    """Whether frame b starts a new shot after frame a (both thresholds met)."""
    histogram, pixels = signature_change(a, b)
    return histogram >= HISTOGRAM_CUT and pixels >= PIXEL_CUT


def find_cuts(signatures: Mapping[int, FrameSignature]) -> tuple[int, ...]:
    """The frame numbers that start a new shot, ascending. Frames are compared with the previous
    frame number that has a signature (a frame that failed to decode is stepped over); the first
    frame never counts as a cut."""
    numbers = sorted(signatures)
    return tuple(b for a, b in itertools.pairwise(numbers)
                 if is_cut(signatures[a], signatures[b]))


def shot_index(frame: int, cuts: tuple[int, ...]) -> int:
    """Which shot (0 before the first cut, 1 after it, ...) a frame number lies in."""
    return int(np.searchsorted(np.asarray(cuts, dtype=np.int64), frame, side="right"))


# --------------------------------------------------------------------------------------------
# Storage with the analysis (arrays in the analysis cache's .npz).

SIGNATURE_ARRAYS = ("signature_frames", "histograms", "thumbnails")


def pack_signatures(signatures: Mapping[int, FrameSignature]) -> dict[str, np.ndarray]:
    """Signatures as arrays: frame numbers (K,), histograms (K, 3, bins), thumbnails
    (K, h, w, 3)."""
    numbers = sorted(signatures)
    bins_shape, thumb_shape = (3, HISTOGRAM_BINS), (THUMBNAIL_WH[1], THUMBNAIL_WH[0], 3)
    return {
        "signature_frames": np.asarray(numbers, np.int64),
        "histograms": np.asarray([signatures[n].histogram for n in numbers],
                                 np.float32).reshape(-1, *bins_shape),
        "thumbnails": np.asarray([signatures[n].thumbnail for n in numbers],
                                 np.uint8).reshape(-1, *thumb_shape),
    }


def signatures_problem(data: Mapping[str, np.ndarray]) -> str | None:
    """Why packed signatures cannot be trusted, or None: arrays present, of the expected shapes
    and types, histograms finite and each row summing to 1, frame numbers unique."""
    absent = [name for name in SIGNATURE_ARRAYS if name not in data]
    if absent:
        return f"it lacks {', '.join(absent)}"
    frames, histograms, thumbnails = (data[name] for name in SIGNATURE_ARRAYS)
    count = len(frames)
    if frames.ndim != 1 or not np.issubdtype(frames.dtype, np.integer):
        return "signature frame numbers are not a list of integers"
    if len(np.unique(frames)) != count:
        return "a frame has two signatures"
    if histograms.shape != (count, 3, HISTOGRAM_BINS) or histograms.dtype != np.float32:
        return f"histograms have shape {histograms.shape} {histograms.dtype}"
    if thumbnails.shape != (count, THUMBNAIL_WH[1], THUMBNAIL_WH[0], 3) or (
            thumbnails.dtype != np.uint8):
        return f"thumbnails have shape {thumbnails.shape} {thumbnails.dtype}"
    if not np.all(np.isfinite(histograms)) or not np.allclose(histograms.sum(axis=2), 1.0,
                                                             atol=1e-3):
        return "histograms are not normalised"
    return None


def unpack_signatures(data: Mapping[str, np.ndarray]) -> dict[int, FrameSignature]:
    """The inverse of pack_signatures (check untrusted arrays with signatures_problem first)."""
    return {int(n): FrameSignature(h.copy(), t.copy())
            for n, h, t in zip(data["signature_frames"].tolist(), data["histograms"],
                               data["thumbnails"])}
