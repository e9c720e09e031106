"""`facefuse render` on a farm: real processes, real signals, real numbers.

What is checked here (render correctness in general lives in test_render.py):
- Kill and resume: SIGKILL mid-render leaves only complete frames under final names (at most one
  stale hidden temporary, the frame being written); a re-run skips exactly the finished frames
  (damaged ones are rendered again) and ends byte-identical to an uninterrupted render. SIGTERM
  cancels between frames: exit 143, complete frames only, no temporary file, resumable; also
  during pass 1 (nothing cached), on a video output (no file at all) and while waiting for
  another process's analysis. SIGINT: exit 130, complete frames only.
- Resume semantics: a changed plate is rendered again; an equivalent --frames range is not.
- --chunk N/M in concurrent processes gives exactly the frames of the range, byte-identical to
  one unchunked render; a process that analyses covers the whole --frames range, two sharing a
  cache analyse once. Overlapping ranges rendered concurrently never expose a damaged frame.
- Peak RSS of a 400-frame render equals that of a 60-frame one (streaming, bounded queues).
- render() through the API: cancel() stops between frames and leaves complete frames (a video
  output: nothing at all); on_progress gets one report per frame, in order.
- --progress json: one line per frame and a summary line (frames, done, skipped, failed, fps).
- Decode failures mid-clip (zeroed MJPEG packets: the container still indexes them, the decoder
  cannot decode them) are reported by number, the rest is finished, exit 5; --fail-fast stops
  at the first; a video output keeps one picture per frame.

Clips are generated here: media_factory's marker (frame i carries marker i) on a scrolling
gradient with a real face (astronaut.png) composited in and moving, so the real YuNet detector
finds one face per frame and the landmark smoothing makes every frame depend on its neighbours.
The swapper is the colour contract model (it paints the face one flat colour), so a changed
landmark shows in the pixels. Renders that only need pass 2 share the analysis cache the
module's reference render filled.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import OpenImageIO as oiio
import pytest

from facefuse.config import Settings
from facefuse.shot.outputs import WRITE_WORKERS
from facefuse.shot.render import render
from facefuse.shot.request import FrameReport, RenderRequest
from tests.media_factory import (
    MARKER_BITS,
    MARKER_BLOCK_PX,
    MARKER_ORIGIN_PX,
    marked_frame,
    read_marker,
)

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


# --- clips -----------------------------------------------------------------------------------

def _face_patch(testdata: Path) -> np.ndarray:
    face = cv2.imread(str(testdata / "media" / "astronaut.png"), cv2.IMREAD_COLOR)
    return cv2.resize(face[0:300, 100:400], (FACE_PX, FACE_PX), interpolation=cv2.INTER_AREA)


def make_face_clip(path: Path, frames: int, testdata: Path, size: tuple[int, int] = SIZE,
                   zeroed: tuple[int, ...] = ()) -> Path:
    """An MJPEG .mkv at 24 fps: frame i (render frame i + 1) shows marker i on a scrolling
    gradient and the face at a position that moves smoothly. `zeroed`: 0-based indices whose
    packet payloads are then overwritten with zeros in the file (same length: the demuxer still
    indexes every frame, the decoder cannot decode those)."""
    patch = _face_patch(testdata)
    width, height = size
    background = marked_frame(0, size)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mjpeg", rate=Fraction(24))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuvj444p"
        for i in range(frames):
            frame = np.roll(background, 2 * i, axis=1)
            frame[:MARKER_AREA[1], :MARKER_AREA[0]] = marked_frame(i, MARKER_AREA)
            x = (width - FACE_PX) // 2 + round(0.12 * width * np.sin(i / 9.0))
            y = max(40, (height - FACE_PX) // 2 + round(0.05 * height * np.cos(i / 7.0)))
            frame[y:y + FACE_PX, x:x + FACE_PX] = patch
            picture = av.VideoFrame.from_ndarray(frame, format="bgr24")
            picture = picture.reformat(format="yuvj444p", dst_color_range=2)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    if zeroed:
        _zero_packets(path, zeroed)
    return path


def _zero_packets(path: Path, indices: tuple[int, ...]) -> None:
    with av.open(str(path)) as container:
        packets = [(p.pos, bytes(p)) for p in container.demux(container.streams.video[0])
                   if p.size]
    data = bytearray(path.read_bytes())
    for index in indices:
        pos, payload = packets[index]
        start = data.index(payload[:64], pos)
        data[start:start + len(payload)] = bytes(len(payload))
    path.write_bytes(bytes(data))


# --- files -----------------------------------------------------------------------------------

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
    """8-bit code values of a PNG (as is) or of a half EXR written from an 8-bit frame."""
    if pixels.dtype == np.uint8:
        return pixels
    return np.clip(np.rint(pixels * 255.0), 0, 255).astype(np.uint8)


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


# --- processes -------------------------------------------------------------------------------

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


@pytest.fixture(autouse=True)
def _no_render_outlives_its_test() -> object:
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start(farm: Farm, command: list[str], log: Path, cache: Path | None = None
          ) -> subprocess.Popen:
    """Start a render; its stdout (JSON lines) and stderr go to log.out and log.err."""
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


# --- the shared reference ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory, testdata: Path, contract_dir: Path) -> Farm:
    """A 120-frame clip and its uninterrupted reference render (which also fills the shared
    analysis cache, so the interrupted renders below spend their time in pass 2)."""
    root = tmp_path_factory.mktemp("farm")
    farm = Farm(root=root, clip=make_face_clip(root / "shot.mkv", CLIP_FRAMES, testdata),
                cache=root / "cache", models=root / "models",
                source=testdata / "media" / "obama.jpg",
                detector=testdata / "models" / "face_detection_yunet_2023mar.onnx",
                recogniser=contract_dir / "recogniser_512.onnx",
                swapper=contract_dir / "colour_swapper.onnx",
                reference={}, reference_log=[], reference_seconds=0.0)
    farm.models.mkdir()
    ref = root / "ref"
    ref.mkdir()
    started = time.perf_counter()
    result = run(farm, farm.command(ref / "out.####.png"), root / "ref")
    farm.reference_seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    farm.reference = frame_files(ref)
    farm.reference_log = result.lines
    assert list(farm.reference) == list(range(1, CLIP_FRAMES + 1))
    assert result.summary["swapped"] == CLIP_FRAMES, "the detector must find the face everywhere"
    return farm


def assert_identical_to(files: dict[int, Path], reference: dict[int, Path]) -> None:
    for number, path in files.items():
        read_pixels(path)
        assert path.read_bytes() == reference[number].read_bytes(), f"frame {number} differs"


# --- 1. kill and resume ------------------------------------------------------------------------

def test_sigkill_leaves_complete_frames_and_a_rerun_finishes_identically(farm: Farm,
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    command = farm.command(out / "out.####.png")
    proc = start(farm, command, tmp_path / "killed")
    wait_for_frames(proc, out, 30, "png")
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL

    # Only complete frames under final names; the frames being encoded when the process died
    # (at most WRITE_WORKERS at once) may remain as hidden temporaries.
    done = assert_only_outputs(out, "png", max_temps=WRITE_WORKERS)
    assert 30 <= len(done) < CLIP_FRAMES, "the kill must land mid-render"
    first_missing = min(set(range(1, CLIP_FRAMES + 1)) - set(done))
    assert max(done) < first_missing + WRITE_WORKERS, "frames are written nearly in order"
    assert_identical_to(done, farm.reference)
    stale = temp_files(out)

    # What a crash on a file system without atomic rename (or a full disk) leaves: a truncated
    # and an empty file under final names. A re-run must render those again, not skip them.
    damaged = (3, 7)
    data = done[damaged[0]].read_bytes()
    done[damaged[0]].write_bytes(data[:len(data) // 2])
    done[damaged[1]].write_bytes(b"")
    kept = [n for n in done if n not in damaged]

    resumed = run(farm, command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    summary = resumed.summary
    assert summary["skipped"] == len(kept)
    assert summary["swapped"] + summary["no_face"] == CLIP_FRAMES - len(kept)
    assert summary["frames"] == CLIP_FRAMES and summary["failed"] == []
    assert [r["frame"] for r in resumed.frames if r["status"] == "skipped"] == kept
    final = assert_only_outputs(out, "png", max_temps=len(stale))
    assert list(final) == list(range(1, CLIP_FRAMES + 1))
    assert_identical_to(final, farm.reference)
    print(f"\nSIGKILL after {len(done)} frames, {len(stale)} stale temporary file(s) "
          f"{[p.name for p in stale]}; resume skipped {summary['skipped']}")


def test_sigterm_cancels_cleanly_with_exit_143_and_resumes(farm: Farm, tmp_path: Path) -> None:
    """EXR output this time: half float written from 8-bit frames holds the same code values."""
    out = tmp_path / "out"
    out.mkdir()
    command = farm.command(out / "out.####.exr")
    proc = start(farm, command, tmp_path / "termed")
    wait_for_frames(proc, out, 25, "exr")
    proc.send_signal(signal.SIGTERM)
    cancelled = finish(proc, tmp_path / "termed", timeout=60)

    assert cancelled.returncode == SIGTERM_EXIT, cancelled.stderr
    assert cancelled.summary["cancelled"] is True
    assert cancelled.summary["failed"] == []
    done = assert_only_outputs(out, "exr", max_temps=0)  # a clean stop leaves no temporary
    assert 25 <= len(done) < CLIP_FRAMES
    reported = [r["frame"] for r in cancelled.frames]
    assert reported == list(done) == list(range(1, len(done) + 1)), \
        "exactly the reported frames are on disk"
    for number, path in done.items():
        expected = read_pixels(farm.reference[number])
        assert np.array_equal(as_uint8(read_pixels(path))[..., :3], expected[..., :3]), number

    resumed = run(farm, command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.summary["skipped"] == len(done)
    assert resumed.summary["swapped"] == CLIP_FRAMES - len(done)
    final = assert_only_outputs(out, "exr", max_temps=0)
    assert list(final) == list(range(1, CLIP_FRAMES + 1))
    for number, path in final.items():
        expected = read_pixels(farm.reference[number])
        assert np.array_equal(as_uint8(read_pixels(path))[..., :3], expected[..., :3]), number
        assert read_marker(as_uint8(read_pixels(path))[..., 2::-1]) == number - 1


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


def test_sigint_exits_130_with_complete_frames_and_no_temporary(farm: Farm,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = start(farm, farm.command(out / "out.####.png"), tmp_path / "interrupted")
    wait_for_frames(proc, out, 20, "png")
    proc.send_signal(signal.SIGINT)
    interrupted = finish(proc, tmp_path / "interrupted", timeout=60)
    assert interrupted.returncode == 130, interrupted.stderr
    done = assert_only_outputs(out, "png", max_temps=0)
    assert 20 <= len(done) < CLIP_FRAMES
    assert [r["frame"] for r in interrupted.frames] == list(done) == list(range(1, len(done) + 1))
    assert_identical_to(done, farm.reference)


def test_sigterm_on_a_video_output_leaves_no_file(farm: Farm, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "video"
    proc = start(farm, farm.command(out / "out.mkv", "--codec", "mjpeg"), log)
    wait_for_lines(proc, log, 20)
    assert any(p.name.endswith(".tmp.mkv") for p in out.iterdir()), "being written"
    proc.send_signal(signal.SIGTERM)
    result = finish(proc, log, timeout=60)
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True and result.summary["swapped"] < CLIP_FRAMES
    assert list(out.iterdir()) == [], "neither the video nor its temporary file may remain"


def test_sigterm_during_analysis_exits_143_promptly_and_caches_nothing(
        farm: Farm, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "early"
    cache = tmp_path / "node" / "embeddings"
    proc = start(farm, farm.command(out / "out.####.png", verbose=True), log, cache=cache)
    wait_for_lines(proc, log, 0, needle=f"analysing {CLIP_FRAMES} frames")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    result = finish(proc, log, timeout=60)
    stopped_s = time.monotonic() - signalled
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True
    assert result.summary["swapped"] == result.summary["no_face"] == 0
    assert result.frames == [] and list(out.iterdir()) == []
    assert stopped_s < 10, f"took {stopped_s:.1f} s to stop"
    assert not list((cache / "analysis").glob("*.npz")), "a partial analysis was cached"
    print(f"\nSIGTERM during pass 1: stopped {stopped_s:.2f} s after the signal")


def test_a_rerun_over_a_changed_plate_renders_again(farm: Farm, testdata: Path,
                                                   tmp_path: Path) -> None:
    """The plate was replaced (new conform or grade, same file name) and the shot is rendered
    again into the same folder with the same settings: the old frames show the old plate, so
    none may be skipped as finished."""
    out = tmp_path / "out"
    out.mkdir()
    for path in list(farm.reference.values())[:12]:
        shutil.copy2(path, out / path.name)
    plate = tmp_path / "shot.mkv"
    make_face_clip(plate, 12, testdata, size=(352, 240))  # another plate: a wider conform
    result = run(farm, farm.command(out / "out.####.png", clip=plate), tmp_path / "again",
                 cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert result.summary["skipped"] == 0, "frames of the old plate were kept as finished"
    assert result.summary["swapped"] == 12
    assert all(read_pixels(path).shape[1] == 352 for path in frame_files(out).values())


def test_an_equivalent_frame_range_skips_the_finished_frames(farm: Farm,
                                                             tmp_path: Path) -> None:
    """A farm job resubmitted with --frames naming exactly the clip's range analyses the same
    frames and renders the same pixels, so the finished frames must be skipped."""
    out = tmp_path / "out"
    shutil.copytree(farm.reference[1].parent, out)
    result = run(farm, farm.command(out / "out.####.png", "--frames", f"1-{CLIP_FRAMES}"),
                 tmp_path / "again")
    assert result.returncode == 0, result.stderr
    assert result.summary["skipped"] == CLIP_FRAMES, result.summary
    assert_identical_to(frame_files(out), farm.reference)


def test_sigterm_while_waiting_for_another_process_analysis_stops_promptly(
        farm: Farm, tmp_path: Path) -> None:
    """Two chunks of one shot share a cache: the second waits for the first's analysis. A
    SIGTERM to the waiting one must cancel it now, not when the other process is done."""
    cache = tmp_path / "shared" / "embeddings"
    first_log, second_log = tmp_path / "first", tmp_path / "second"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first = start(farm, farm.command(tmp_path / "a" / "out.####.png", "--chunk", "1/2",
                                     verbose=True), first_log, cache=cache)
    try:
        wait_for_lines(first, first_log, 0, needle=f"analysing {CLIP_FRAMES} frames")
        second = start(farm, farm.command(tmp_path / "b" / "out.####.png", "--chunk", "2/2",
                                          verbose=True), second_log, cache=cache)
        wait_for_lines(second, second_log, 0, needle="waiting for another process")
        assert first.poll() is None and not first_log.with_suffix(".out").read_text(), \
            "the first process must still be in pass 1 (no frame written yet)"
        second.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait()
        latency = time.monotonic() - signalled
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    assert latency < 3, (f"the waiting process took {latency:.1f} s to honour SIGTERM: it "
                         "waited for the other process's analysis to end")
    result = collect(second.returncode, second_log)
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True and result.frames == []


# --- 2. chunks and overlapping ranges ---------------------------------------------------------

def test_concurrent_chunks_equal_one_unchunked_render(farm: Farm, tmp_path: Path) -> None:
    """Three processes render --frames 11-58 --chunk N/3 into one folder at the same time, two
    sharing an empty cache, one with its own (as on another farm node). A process that analyses
    must analyse the whole range (48 frames), the two sharing a cache only once, and the union
    must be byte-identical to one unchunked render of 11-58."""
    first, last, size = 11, 58, 16
    frames = ("--frames", f"{first}-{last}")
    out, ref, solo = (tmp_path / name for name in ("out", "ref", "solo"))
    for folder in (out, ref, solo):
        folder.mkdir()
    caches = {1: "shared", 2: "shared", 3: "own"}  # two nodes share a cache, one does not
    procs = [start(farm, farm.command(out / "out.####.png", *frames, "--chunk", f"{n}/3",
                                      verbose=True),
                   tmp_path / f"chunk{n}", cache=tmp_path / caches[n] / "embeddings")
             for n in (1, 2, 3)]
    reference = run(farm, farm.command(ref / "out.####.png", *frames), tmp_path / "ref")
    chunks = [finish(p, tmp_path / f"chunk{n}") for n, p in enumerate(procs, 1)]

    assert reference.returncode == 0, reference.stderr
    expected = frame_files(ref)
    assert list(expected) == list(range(first, last + 1))
    slices = [list(range(first + size * i, first + size * (i + 1))) for i in range(3)]
    for n, (chunk, numbers) in enumerate(zip(chunks, slices), 1):
        assert chunk.returncode == 0, chunk.stderr
        assert chunk.summary["frames"] == chunk.summary["swapped"] == size
        assert [r["frame"] for r in chunk.frames] == numbers
    analysed = [f"analysing {last - first + 1} frames" in chunk.stderr for chunk in chunks]
    assert analysed[2], "chunk 3 (own cache) did not analyse the whole --frames range"
    assert analysed[0] != analysed[1], "exactly one of the chunks sharing a cache analyses"
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(first, last + 1))
    assert_identical_to(files, expected)

    # The check above can fail: a process that analysed only its own chunk decides otherwise
    # (tracks and the zero-phase smoothing look at the neighbours on both sides).
    middle = slices[1]
    alone = run(farm, farm.command(solo / "out.####.png", "--frames",
                                   f"{middle[0]}-{middle[-1]}"), tmp_path / "solo")
    assert alone.returncode == 0, alone.stderr
    differing = [n for n, path in frame_files(solo).items()
                 if not np.array_equal(read_pixels(path), read_pixels(expected[n]))]
    assert differing, "a chunk analysed alone should differ somewhere from the full-range render"
    print(f"\nframes {middle[0]}-{middle[-1]} analysed alone differ from the {first}-{last} "
          f"render at {len(differing)} of {len(middle)} frames")


def test_overlapping_ranges_in_concurrent_processes_never_corrupt_a_frame(
        farm: Farm, tmp_path: Path) -> None:
    """1-40, 20-60 and 20-60 again, at the same time, into one folder, while this test keeps
    reading the contested frames. Every file must read completely at all times and end
    byte-identical to the reference render of the range whose fingerprint it carries
    (--frames ranges are analysed and smoothed as wholes, so different ranges are different
    renders; the same range twice writes the same bytes)."""
    out = tmp_path / "out"
    out.mkdir()
    ranges = ("1-40", "20-60", "20-60")
    procs = [start(farm, farm.command(out / "out.####.png", "--frames", r), tmp_path / f"p{i}")
             for i, r in enumerate(ranges)]
    deadline = time.monotonic() + 120
    reads, corrupt = 0, []
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for number, path in frame_files(out).items():
            if 20 <= number <= 40:  # written by two or three processes
                try:
                    read_pixels(path)
                    reads += 1
                except AssertionError as exc:
                    corrupt.append(str(exc))
        time.sleep(0.05)
    runs = [finish(p, tmp_path / f"p{i}") for i, p in enumerate(procs)]
    for result in runs:
        assert result.returncode == 0, result.stderr
    assert not corrupt, corrupt[:3]

    refs: dict[str, dict[int, Path]] = {}
    folders = {r: tmp_path / f"ref{r}" for r in ranges[:2]}
    ref_procs = []
    for r, folder in folders.items():
        folder.mkdir()
        ref_procs.append(start(farm, farm.command(folder / "out.####.png", "--frames", r),
                               folder))
    for proc, folder in zip(ref_procs, folders.values()):
        assert finish(proc, folder).returncode == 0
        files = frame_files(folder)
        refs[fingerprint_of(next(iter(files.values())))] = files
    assert len(refs) == 2, "the two ranges carry different fingerprints"

    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(1, 61))
    owners = {}
    for number, path in files.items():
        fingerprint = fingerprint_of(path)
        assert fingerprint in refs, f"frame {number} carries an unknown fingerprint"
        assert path.read_bytes() == refs[fingerprint][number].read_bytes(), number
        owners[number] = ranges[list(refs).index(fingerprint)]
    by_range = list(refs.values())
    differ = [n for n in range(20, 41)
              if not np.array_equal(read_pixels(by_range[0][n]), read_pixels(by_range[1][n]))]
    print(f"\n{reads} reads of contested frames while they were replaced, none damaged; "
          f"frames 20-40 last written by {sorted({owners[n] for n in range(20, 41)})}; the "
          f"two ranges' renders differ in pixels at {len(differ)} of those 21 frames")


# --- 3. memory -------------------------------------------------------------------------------

def _peak_rss_mb(farm: Farm, command: list[str], log: Path,
                 cache: Path) -> tuple[float, float, Run]:
    """Peak resident memory (MB) and CPU seconds of one render process: its own rusage, through
    wait4 (RUSAGE_CHILDREN would report the largest child this test process ever had)."""
    proc = start(farm, command, log, cache)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime,
            collect(proc.returncode, log))


def test_peak_memory_does_not_grow_with_shot_length(farm: Farm, testdata: Path,
                                                    tmp_path: Path) -> None:
    """60 and 400 frames at 640x360 (0.7 MB a frame: keeping every decoded frame would cost
    240 MB more), each through both passes (own empty cache) into an MJPEG video."""
    size = (640, 360)
    peaks, seconds, cpu = {}, {}, {}
    for frames in (SHORT_FRAMES, LONG_FRAMES):
        clip = make_face_clip(tmp_path / f"clip{frames}.mkv", frames, testdata, size=size)
        command = farm.command(tmp_path / f"out{frames}.mkv", "--codec", "mjpeg", clip=clip)
        started = time.perf_counter()
        peaks[frames], cpu[frames], result = _peak_rss_mb(farm, command, tmp_path / f"mem{frames}",
                                             tmp_path / f"cache{frames}" / "embeddings")
        seconds[frames] = time.perf_counter() - started
        assert result.returncode == 0, result.stderr
        assert result.summary["swapped"] == frames
    print(f"\npeak RSS at {size[0]}x{size[1]}: "
          + ", ".join(f"{n} frames {peaks[n]:.1f} MB ({seconds[n]:.1f} s, {cpu[n]:.1f} s CPU)"
                    for n in peaks))
    assert peaks[LONG_FRAMES] < peaks[SHORT_FRAMES] * 1.10 + 24, peaks


# --- 4. cancel through the API ----------------------------------------------------------------

def test_api_cancel_leaves_complete_frames_and_reports_each_frame_in_order(
        farm: Farm, tmp_path: Path) -> None:
    reports: list[FrameReport] = []
    request = RenderRequest(sources=(farm.source,), input=str(farm.clip),
                            output=str(tmp_path / "out.####.png"), settings=farm.settings())
    summary = render(request, reports.append, lambda: len(reports) >= 10)

    assert summary.cancelled and summary.failed == ()
    numbers = [r.frame for r in reports]
    assert numbers == list(range(1, len(numbers) + 1))
    assert 10 <= len(numbers) <= 10 + 2 * QUEUE_DEPTH + 2, "cancel() is checked between frames"
    assert summary.swapped == len(numbers) and summary.skipped == 0
    for report in reports:
        assert report.status == "swapped" and report.faces == 1 and report.error == ""
        assert {"decode", "swap"} <= set(report.ms) and all(v >= 0 for v in report.ms.values())
    files = assert_only_outputs(tmp_path, "png", max_temps=0)
    assert list(files) == numbers, "exactly the reported frames are on disk"
    for number, path in files.items():
        assert np.array_equal(read_pixels(path), read_pixels(farm.reference[number])), number


def test_api_video_output_reports_every_frame_and_a_cancel_leaves_no_file(
        farm: Farm, tmp_path: Path) -> None:
    settings = farm.settings()
    reports: list[FrameReport] = []
    whole = tmp_path / "whole.mkv"
    summary = render(RenderRequest(sources=(farm.source,), input=str(farm.clip),
                                   output=str(whole), settings=settings, frames=(5, 34),
                                   codec="mjpeg"), reports.append)
    assert not summary.cancelled and summary.frames == summary.swapped == 30
    assert [r.frame for r in reports] == list(range(5, 35))
    assert [p.name for p in tmp_path.iterdir()] == ["whole.mkv"]

    out = tmp_path / "cancelled"
    out.mkdir()
    reports.clear()
    summary = render(RenderRequest(sources=(farm.source,), input=str(farm.clip),
                                   output=str(out / "cut.mkv"), settings=settings,
                                   codec="mjpeg"), reports.append, lambda: len(reports) >= 8)
    assert summary.cancelled
    assert [r.frame for r in reports] == list(range(1, len(reports) + 1))
    assert len(reports) < CLIP_FRAMES
    assert list(out.iterdir()) == [], "a cancelled video leaves neither file nor temporary"


# --- 5. --progress json --------------------------------------------------------------------------

def test_progress_json_has_one_line_per_frame(farm: Farm) -> None:
    lines = farm.reference_log
    frames, summary = lines[:-1], lines[-1]
    assert [line["frame"] for line in frames] == list(range(1, CLIP_FRAMES + 1))
    for line in frames:
        assert set(line) == {"frame", "status", "faces", "ms"}
        assert line["status"] == "swapped" and line["faces"] == 1
        assert {"decode", "swap", "paste"} <= set(line["ms"])
        assert all(isinstance(v, (int, float)) and v >= 0 for v in line["ms"].values())
    record = summary["summary"]
    assert record["frames"] == CLIP_FRAMES and record["swapped"] == CLIP_FRAMES
    assert record["skipped"] == 0 and record["failed"] == [] and record["cancelled"] is False
    assert 0 < record["fps"] and record["seconds"] > 0
    assert record["fps"] == pytest.approx(CLIP_FRAMES / record["seconds"], rel=0.01)
    print(f"\nreference render: {CLIP_FRAMES} frames in {farm.reference_seconds:.1f} s "
          f"(summary {record['seconds']} s, {record['fps']} fps)")


def test_progress_json_summary_counts_done_frames(farm: Farm) -> None:
    """The summary names frames, done, skipped, failed and fps (done = swapped + no_face)."""
    record = farm.reference_log[-1]["summary"]
    assert {"frames", "done", "skipped", "failed", "fps"} <= set(record), sorted(record)
    assert record["done"] == record["swapped"] + record["no_face"] == CLIP_FRAMES


# --- 6. decode failures --------------------------------------------------------------------------

def test_undecodable_frames_are_reported_the_rest_finished_exit_5(farm: Farm, testdata: Path,
                                                                  tmp_path: Path) -> None:
    broken = (10, 11, 20)  # 0-based clip indices: render frames 11, 12 and 21
    failing = [i + 1 for i in broken]
    clip = make_face_clip(tmp_path / "broken.mkv", 30, testdata, zeroed=broken)
    out, fast = tmp_path / "out", tmp_path / "fast"
    out.mkdir()
    fast.mkdir()
    cache = tmp_path / "cache"

    result = run(farm, farm.command(out / "out.####.png", clip=clip), tmp_path / "all", cache)
    assert result.returncode == FRAMES_FAILED_EXIT, result.stderr
    summary = result.summary
    assert [f["frame"] for f in summary["failed"]] == failing
    assert all(f["error"] for f in summary["failed"])
    assert summary["swapped"] == 30 - len(failing) and summary["cancelled"] is False
    assert [r["frame"] for r in result.frames] == list(range(1, 31))
    assert [r["frame"] for r in result.frames if r["status"] == "failed"] == failing
    assert all(r.get("error") for r in result.frames if r["status"] == "failed")
    for number in failing:
        assert f"frame {number} failed" in result.stderr
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == [n for n in range(1, 31) if n not in failing]
    for number, path in files.items():
        assert read_marker(read_pixels(path)[..., 2::-1]) == number - 1

    stopped = run(farm, farm.command(fast / "out.####.png", "--fail-fast", clip=clip),
                  tmp_path / "fast", cache)
    assert stopped.returncode == FRAMES_FAILED_EXIT, stopped.stderr
    failed = [f["frame"] for f in stopped.summary["failed"]]
    assert failed[0] == failing[0] and failing[2] not in failed, failed
    written = list(assert_only_outputs(fast, "png", max_temps=0))
    assert written[:10] == list(range(1, 11))
    assert max(written) <= failing[0] + 2 * QUEUE_DEPTH + 2, "fail-fast must stop promptly"
    print(f"\n--fail-fast: failed {failed}, wrote frames up to {max(written)}")


def _decoded_markers(path: Path) -> list[int | None]:
    markers: list[int | None] = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            try:
                markers.append(read_marker(frame.to_ndarray(format="bgr24")))
            except ValueError:
                markers.append(None)
    return markers


def test_video_output_keeps_one_picture_per_frame_when_frames_fail(farm: Farm, testdata: Path,
                                                                   tmp_path: Path) -> None:
    """A failed frame keeps its slot in a video output (else picture and audio/timecode drift
    apart): the previous frame stands in, and for a failed first frame something must too."""
    clip = make_face_clip(tmp_path / "broken.mkv", 12, testdata, zeroed=(0, 5))
    settings = replace(farm.settings(), cache_dir=tmp_path / "cache")
    out = tmp_path / "out.mkv"
    summary = render(RenderRequest(sources=(farm.source,), input=str(clip), output=str(out),
                                   settings=settings, codec="mjpeg"))
    assert [n for n, _ in summary.failed] == [1, 6]
    markers = _decoded_markers(out)
    assert len(markers) == 12, f"{len(markers)} pictures for 12 frames: {markers}"
    assert markers[1:] == [1, 2, 3, 4, 4, 6, 7, 8, 9, 10, 11]
