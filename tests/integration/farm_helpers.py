"""Helpers for the farm tests (tests/integration/test_farm_*.py): real `facefuse render`
processes, their JSON progress, and what they leave in the output folder.

Clips are generated here: media_factory's marker (frame i carries marker i) on a scrolling
gradient with a real face (astronaut.png) composited in and moving, so the real YuNet detector
finds one face per frame and the landmark smoothing makes every frame depend on its neighbours.
The swapper is the colour contract model (it paints the face one flat colour), so a changed
landmark shows in the pixels. The `farm` fixture (tests/integration/conftest.py) renders a
120-frame clip once per session; renders that only need pass 2 share the analysis cache that
reference render filled. Every process started with `start` is killed after its test if it is
still running (kill_started, called by an autouse fixture in the same conftest.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import OpenImageIO as oiio

from facefuse.config import Settings
from tests.media_factory import MARKER_BITS, MARKER_BLOCK_PX, MARKER_ORIGIN_PX, marked_frame
from tests.render_media import linear_to_srgb, make_face_clip

CLIP_FRAMES = 120
SIZE = (320, 240)
FACE_PX = 130
MARKER_AREA = (2 * MARKER_ORIGIN_PX[0] + MARKER_BITS * MARKER_BLOCK_PX,  # (width, height)
               2 * MARKER_ORIGIN_PX[1] + MARKER_BLOCK_PX)
QUEUE_DEPTH = 4  # render.QUEUE_FRAMES / streaming depth: frames in flight per queue
SIGTERM_EXIT = 143
FRAMES_FAILED_EXIT = 5
SHORT_FRAMES, LONG_FRAMES = 60, 400  # the memory test's clips
TEMP_NAME = re.compile(r"^\.(?P<stem>.+)\.[0-9a-f]{8}\.tmp\.(?P<ext>png|exr)$")


# --- clips -------------------------------------------------------------------------------------

def _face_patch(testdata: Path) -> np.ndarray:
    face = cv2.imread(str(testdata / "media" / "astronaut.png"), cv2.IMREAD_COLOR)
    return cv2.resize(face[0:300, 100:400], (FACE_PX, FACE_PX), interpolation=cv2.INTER_AREA)


def farm_clip(testdata: Path, size: tuple[int, int] = SIZE) -> dict[str, Any]:
    """make_face_clip's arguments for the farm's clip: an MJPEG .mkv at 24 fps whose frame i
    (render frame i + 1) shows marker i on a scrolling gradient and the face at a position that
    moves smoothly."""
    patch = _face_patch(testdata)
    width, height = size
    background = marked_frame(0, size)

    def picture(i: int) -> np.ndarray:
        frame = np.roll(background, 2 * i, axis=1)
        frame[:MARKER_AREA[1], :MARKER_AREA[0]] = marked_frame(i, MARKER_AREA)
        x = (width - FACE_PX) // 2 + round(0.12 * width * np.sin(i / 9.0))
        y = max(40, (height - FACE_PX) // 2 + round(0.05 * height * np.cos(i / 7.0)))
        frame[y:y + FACE_PX, x:x + FACE_PX] = patch
        return frame

    return {"face": None, "picture": picture, "size": size, "codec": "mjpeg", "timecode": None,
            "audio": None, "gop": None, "matrix": None}


# --- files -------------------------------------------------------------------------------------

def read_pixels(path: Path) -> np.ndarray:
    """The pixels of an image file, read with OpenImageIO directly; fails on any read error
    (a truncated or half-written file): PNG as uint8, EXR as float32."""
    image = oiio.ImageInput.open(str(path))
    assert image is not None, f"{path.name} does not open: {oiio.geterror()}"
    try:
        kind = "uint8" if str(image.spec().format) == "uint8" else "float"
        pixels = image.read_image(format=kind)
        error = image.geterror()
    finally:
        image.close()
    assert pixels is not None and not error, f"{path.name} is not complete: {error}"
    return pixels


def fingerprint_of(path: Path) -> str:
    image = oiio.ImageInput.open(str(path))
    assert image is not None, oiio.geterror()
    try:
        return str(image.spec().getattribute("facefuse:fingerprint"))
    finally:
        image.close()


def as_uint8(pixels: np.ndarray) -> np.ndarray:
    """8-bit display code values of a PNG (as is) or of a half EXR written from a
    display-referred 8-bit frame (which holds scene-linear values: sRGB-encoded back here)."""
    if pixels.dtype == np.uint8:
        return pixels
    return np.clip(np.rint(linear_to_srgb(pixels) * 255.0), 0, 255).astype(np.uint8)


def frame_files(folder: Path, ext: str = "png") -> dict[int, Path]:
    """Final-name outputs out.NNNN.ext by frame number (hidden temporary files excluded)."""
    found = {}
    for path in folder.iterdir():
        match = re.fullmatch(rf"out\.(\d{{4}})\.{ext}", path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def temp_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("."))


def assert_only_outputs(folder: Path, ext: str, max_temps: int) -> dict[int, Path]:
    """Every entry of `folder` is a final-name frame or a hidden temporary of one; at most
    `max_temps` temporaries. Returns the final frames."""
    frames = frame_files(folder, ext)
    temps = temp_files(folder)
    others = set(folder.iterdir()) - set(frames.values()) - set(temps)
    assert not others, f"unexpected files: {sorted(p.name for p in others)}"
    for temp in temps:
        assert TEMP_NAME.match(temp.name), f"unexpected hidden file {temp.name}"
    assert len(temps) <= max_temps, f"{len(temps)} temporary files left: {temps}"
    return frames


def assert_identical_to(files: dict[int, Path], reference: dict[int, Path]) -> None:
    for number, path in files.items():
        read_pixels(path)
        assert path.read_bytes() == reference[number].read_bytes(), f"frame {number} differs"


# --- processes ---------------------------------------------------------------------------------

@dataclass
class Farm:
    root: Path
    clip: Path
    cache: Path  # FACEFUSE_CACHE of renders that reuse the analysis (at cache.parent/analysis)
    models: Path
    source: Path
    detector: Path
    recogniser: Path
    swapper: Path
    reference: dict[int, Path]  # uninterrupted full render, PNG
    reference_log: list[dict]
    reference_seconds: float

    def command(self, output: Path | str, *extra: str, clip: Path | None = None,
                verbose: bool = False) -> list[str]:
        return [sys.executable, "-m", "facefuse", *(["-v"] if verbose else []), "render",
                "-i", str(clip or self.clip), "-o", str(output), "-s", str(self.source),
                "--detector", str(self.detector), "--recogniser",
                str(self.recogniser), "--swapper", str(self.swapper), "--providers", "cpu",
                "--models-dir", str(self.models), "--offline", "--progress", "json", *extra]

    def env(self, cache: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(FACEFUSE_CACHE=str(cache or self.cache), FACEFUSE_MODELS=str(self.models),
                   FACEFUSE_OFFLINE="1")
        return env

    def settings(self) -> Settings:
        """What the command line above asks for, for in-process render() calls."""
        return Settings(detector=str(self.detector), recogniser=str(self.recogniser),
                        swapper=str(self.swapper), providers=("CPUExecutionProvider",),
                        models_dir=self.models, cache_dir=self.cache, offline=True)


@dataclass
class Run:
    returncode: int
    lines: list[dict]
    stderr: str

    @property
    def summary(self) -> dict:
        assert self.lines and "summary" in self.lines[-1], f"no summary line: {self.stderr}"
        return self.lines[-1]["summary"]

    @property
    def frames(self) -> list[dict]:
        return [line for line in self.lines if "frame" in line]


_STARTED: list[subprocess.Popen] = []


def kill_started() -> None:
    """Kill (and reap) every render process `start` launched that is still running."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _deliverable_signals() -> None:
    """SIGINT and SIGTERM handled and unblocked here, so a child started next gets them at their
    defaults, as a render node's job runner starts a task. Children inherit an ignored or
    blocked signal (and Python keeps an inherited SIG_IGN): in the whole suite something before
    these tests left the renders deaf to SIGINT, so a SIGINT test saw the render finish. A
    handler set again here is reset to the default in the child by exec."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def start(farm: Farm, command: list[str], log: Path, cache: Path | None = None
          ) -> subprocess.Popen:
    """Start a render; its stdout (JSON lines) and stderr go to log.out and log.err."""
    _deliverable_signals()
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=farm.env(cache),
                                cwd=farm.root)
    _STARTED.append(proc)
    return proc


def finish(proc: subprocess.Popen, log: Path, timeout: float = 120) -> Run:
    proc.wait(timeout=timeout)
    return collect(proc.returncode, log)


def collect(returncode: int, log: Path) -> Run:
    out = log.with_suffix(".out").read_text()
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    return Run(returncode, lines, log.with_suffix(".err").read_text())


def run(farm: Farm, command: list[str], log: Path, cache: Path | None = None) -> Run:
    return finish(start(farm, command, log, cache), log)


def wait_for_frames(proc: subprocess.Popen, folder: Path, count: int, ext: str,
                    timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while len(frame_files(folder, ext)) < count:
        assert proc.poll() is None, (f"the render ended (rc {proc.returncode}) before "
                                     f"{count} frames were written")
        assert time.monotonic() < deadline, f"fewer than {count} frames after {timeout} s"
        time.sleep(0.01)


def wait_for_lines(proc: subprocess.Popen, log: Path, count: int, needle: str = "",
                   timeout: float = 90) -> None:
    """Until the child printed `count` JSON lines (or, with needle, logged it on stderr)."""
    deadline = time.monotonic() + timeout
    while True:
        if needle:
            ready = needle in log.with_suffix(".err").read_text()
        else:
            ready = log.with_suffix(".out").read_text().count("\n") >= count
        if ready:
            return
        assert proc.poll() is None, f"the render ended (rc {proc.returncode}) too early"
        assert time.monotonic() < deadline, f"not ready after {timeout} s"
        time.sleep(0.01)


def rendered_farm(root: Path, frames: int, testdata: Path, contract_dir: Path,
                  cache: Path) -> Farm:
    """A `frames`-frame face clip with the real YuNet, the contract recogniser and colour
    swapper, and its uninterrupted reference render (PNG), which every frame must swap."""
    clip = make_face_clip(root / "shot.mkv", frames=frames, **farm_clip(testdata))
    farm = Farm(root=root, clip=clip,
                cache=cache, models=root / "models", source=testdata / "media" / "obama.jpg",
                detector=testdata / "models" / "face_detection_yunet_2023mar.onnx",
                recogniser=contract_dir / "recogniser_512.onnx",
                swapper=contract_dir / "colour_swapper.onnx",
                reference={}, reference_log=[], reference_seconds=0.0)
    farm.models.mkdir()
    ref = root / "ref"
    ref.mkdir()
    started = time.perf_counter()
    result = run(farm, farm.command(ref / "out.####.png"), ref)
    farm.reference_seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    farm.reference, farm.reference_log = frame_files(ref), result.lines
    assert list(farm.reference) == list(range(1, frames + 1))
    assert result.summary["swapped"] == frames, "the detector must find the face everywhere"
    return farm
