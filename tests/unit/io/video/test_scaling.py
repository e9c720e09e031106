"""io.video.scaling: swscale contexts kept per thread and per set of options."""

from __future__ import annotations

import threading

import av
import numpy as np

from facefuse.io.video.scaling import Scalers

SMALL = {"format": "bgr24", "width": 32, "height": 24, "interpolation": 0x20}


def _picture(seed: int) -> av.VideoFrame:
    rng = np.random.default_rng(seed)
    return av.VideoFrame.from_ndarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8),
                                      format="bgr24").reformat(format="yuv420p")


def test_the_same_pictures_as_pyav_reformat():
    scalers = Scalers()
    for seed in range(4):
        picture = _picture(seed)
        for options in (SMALL, {"format": "yuv444p"}, {"format": "bgr24"}):
            got = scalers.reformat(picture, **options).to_ndarray()
            assert np.array_equal(got, picture.reformat(**options).to_ndarray())


def test_one_context_per_thread_and_set_of_options():
    scalers = Scalers()
    for seed in range(3):  # alternating options, as a writer through 4:4:4 does
        scalers.reformat(_picture(seed), **SMALL)
        scalers.reformat(_picture(seed), format="yuv444p")
    kept = dict(scalers._local.kept)
    assert len(kept) == 2
    scalers.reformat(_picture(9), **SMALL)
    assert dict(scalers._local.kept) == kept  # the same objects, none added

    elsewhere: list[int] = []
    thread = threading.Thread(target=lambda: (scalers.reformat(_picture(0), **SMALL),
                                              elsewhere.append(len(scalers._local.kept))))
    thread.start()
    thread.join()
    assert elsewhere == [1]  # another thread has contexts of its own
    assert all(a is b for a, b in zip(kept.values(), scalers._local.kept.values()))
