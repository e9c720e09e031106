"""The panel's time from a scrub stop to the swapped frame on screen, cold and cached.

    xvfb-run -a -s "-screen 0 1920x1080x24" python bench/panel_scrub.py [--models light|standin]
        [--size 1920x1080] [--stops 10] [--work DIR]

It opens `facefuse panel` on a clip made from the test clip head-pose-face-detection-male.mp4
(a real face; upscaled to --size and looped to 48 frames, h264, as bench/run.py builds its
clips), with a source photo, in the Result mode. The first swap after opening includes the
analysis of the whole shot (said apart). Then --stops times it drags the playhead across six
frames (16 ms apart, as a mouse drag sends them) and stops on a frame not swapped before, and
measures from the stop to the paint of that frame's swap (Viewer.painted) and to the paint of
its original; then the same stops again (cached). Models: "light" (the real YuNet detector, and
the stand-in recogniser and swapper of bench/standins.py without compute: the panel's own
overhead) or "standin" (YuNet, and the recogniser and swapper at production compute: about
what inswapper_128 costs on this machine). Prints one JSON object (seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import standins
from run import YUNET, build_clip

DRAG_FRAMES = 6
DRAG_MS = 16
WAIT_S = 600.0


def _wait(events, done: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    end = time.perf_counter() + timeout_s
    while not done():
        if time.perf_counter() > end:
            raise TimeoutError("the panel did not show it in time")
        events.processEvents()
        time.sleep(0.001)


def measure(models: str, size: tuple[int, int], stops: int, work: Path,
            testdata: Path) -> dict[str, object]:
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
    from PySide6.QtCore import QEventLoop, QSettings
    from PySide6.QtWidgets import QApplication

    from addon.panel.host import FileHost
    from addon.panel.window import PanelWindow
    from facefuse import Settings

    built = standins.build_all(work / "models", light=models == "light")
    clip = build_clip(testdata / "media" / "head-pose-face-detection-male.mp4",
                      work / f"clip-{size[0]}x{size[1]}.mp4", size, 48)
    settings = Settings(detector=str(testdata / "models" / YUNET),
                        recogniser=str(built["recogniser"]["path"]),
                        swapper=str(built["swapper"]["path"]), providers=("CPUExecutionProvider",),
                        models_dir=work / "models", cache_dir=work / f"cache-{time.time_ns()}",
                        offline=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    # QEventLoop's processEvents: PySide6 6.12's QCoreApplication.processEvents (and
    # QTest.qWait) drop a reference to None on each call, so a tight loop of them aborts Python
    events = QEventLoop()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(work / "qt"))
    window = PanelWindow(FileHost(clip), settings)
    window.resize(1280, 820)
    window.show()
    window.ui.sources.add([testdata / "media" / "biden.jpg"])
    view, timeline = window.ui.view, window.ui.timeline
    opened = time.perf_counter()
    _wait(events, lambda: timeline.review.last == 48)
    _wait(events, lambda: 1 in view.painted)
    first = view.painted[1] - opened
    _wait(events, lambda: not window.jobs.runner.jobs)
    targets = [4 + round(i * 40 / max(1, stops - 1)) for i in range(stops)]

    def stop_at(target: int) -> tuple[float, float]:
        for frame in range(target - DRAG_FRAMES, target):
            timeline.set_frame(frame)
            end = time.perf_counter() + DRAG_MS / 1000
            while time.perf_counter() < end:
                events.processEvents()
        timeline.set_frame(target)
        stopped, original = time.perf_counter(), None
        end = stopped + WAIT_S
        while view.painted.get(target, 0.0) < stopped:
            if original is None and view.before_frame == target:
                original = time.perf_counter() - stopped
            if time.perf_counter() > end:
                raise TimeoutError(f"frame {target}'s swap was not shown in time")
            events.processEvents()
            time.sleep(0.001)
        swapped = view.painted[target] - stopped
        _wait(events, lambda: not window.jobs.runner.jobs)
        return swapped, swapped if original is None else original

    cold = [stop_at(t) for t in targets]
    cached = [stop_at(t) for t in targets]
    window.close()
    return {"models": models, "size": f"{size[0]}x{size[1]}", "stops": targets,
            "first_swap_after_open_with_analysis_s": round(first, 3),
            "cold": _figures([s for s, _ in cold]), "cached": _figures([s for s, _ in cached]),
            "original_cold": _figures([o for _, o in cold]),
            "platform": app.platformName()}


def _figures(seconds: Sequence[float]) -> dict[str, float]:
    return {"median": round(statistics.median(seconds), 3), "worst": round(max(seconds), 3),
            "all": [round(s, 3) for s in seconds]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", choices=("light", "standin"), default="light")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--stops", type=int, default=10)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--testdata", type=Path,
                        default=Path(os.environ.get("FACEFUSE_TESTDATA",
                                                    HERE.parent.parent / "shared" / "testdata")))
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    work = args.work or Path(tempfile.mkdtemp(prefix="facefuse-scrub-"))
    print(json.dumps(measure(args.models, (width, height), args.stops, work, args.testdata),
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
