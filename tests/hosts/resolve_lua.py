"""addon/resolve/facefuse.lua run in Lua (lupa: LuaJIT as in Resolve, Lua 5.1 and 5.4) against the
fake `resolve` global (tests/hosts/resolve_fake.lua) that the facts table drives, for the
launcher's tests and the facts' tests; the planner stands in for the facefuse program (Python's
real job reading and plan, the frames written as files instead of rendered)."""

from __future__ import annotations

import importlib
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.resolve_fake import FACTS

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE.parents[1] / "addon" / "resolve" / "facefuse.lua"
FAKE = HERE / "resolve_fake.lua"
RUNTIMES = ("lupa.luajit21", "lupa.lua51", "lupa.lua54")
START, DURATION, LEFT = 86448, 10, 3


class Launcher:
    """One Lua runtime with the fake Resolve as `resolve`, print captured."""

    def __init__(self, runtime: str, config: dict[str, Any]) -> None:
        self.lua = importlib.import_module(runtime).LuaRuntime()
        self.printed: list[str] = []
        self.lua.globals().print = lambda *parts: self.printed.append(
            " ".join(str(p) for p in parts))
        fake = self.lua.execute(FAKE.read_text(encoding="utf-8"))
        facts = {row: values["fake"] for row, values in FACTS.items()}
        self.resolve, self.state = fake.new(
            self.lua.table_from(lua_ready(config), recursive=True),
            self.lua.table_from(lua_ready(facts), recursive=True))

    def run(self, with_resolve: bool = True) -> Any:
        self.lua.globals().resolve = self.resolve if with_resolve else None
        return self.lua.execute(LAUNCHER.read_text(encoding="utf-8"))

    def track(self, index: int) -> list[Any]:
        items = self.state.tracks[index]
        return [] if items is None else list(items.values())

    @property
    def output(self) -> str:
        return "\n".join(self.printed)


def lua_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: lua_ready(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [lua_ready(v) for v in value]
    return value


def launcher_config(media: Path | None, **changes: Any) -> dict[str, Any]:
    props = None if media is None else {"File Path": str(media), "Type": "Video + Audio",
                                        "FPS": "24", "Frames": "20", "Clip Name": media.name}
    item = {"name": media.name if media else "Text+", "start": START, "duration": DURATION,
            "left_offset": LEFT, "track": 1, "media": props}
    config = {"product": "DaVinci Resolve", "version": "19.1.3.7", "tracks": 1,
              "playhead": START + 2, "current_timecode": "01:00:02:02", "items": [item]}
    return {**config, **changes}


PLANNER = """
import json, os, sys
from pathlib import Path
from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import parse_job
from facefuse import FacefuseError, Settings
args = sys.argv[1:]
job = Path(args[args.index("--job") + 1])
result = Path(args[args.index("--result") + 1])
data = json.loads(job.read_text(encoding="utf-8"))
Path(os.environ["PLANNER_SEEN"]).write_text(json.dumps(data))
if os.environ.get("PLANNER_REPORT"):
    data["review_report"] = os.environ["PLANNER_REPORT"]
try:
    swap = resolve_swaps.item_swap(parse_job(data), (), Settings())
except FacefuseError as exc:
    resolve_swaps.write_result(result, None, str(exc))
    sys.exit(2)
resolve_swaps.prepare(swap)
p = swap.placement
Path(p.media).parent.mkdir(parents=True, exist_ok=True)
for number in range(p.start_index, p.end_index + 1):
    Path(p.media % number).write_bytes(b"png")
resolve_swaps.write_result(result, p, "; ".join(("planned", *swap.facts.caveats)))
"""


def use_planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The launcher runs the planner; returns where the job the launcher wrote is copied."""
    script = tmp_path / "planner.py"
    script.write_text(PLANNER)
    seen = tmp_path / "job-seen.json"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("PLANNER_SEEN", str(seen))
    monkeypatch.delenv("APP_SANDBOX_CONTAINER_ID", raising=False)
    monkeypatch.setenv("FACEFUSE_RESOLVE_COMMAND", " ".join(
        shlex.quote(p) for p in (sys.executable, str(script))))
    return seen


def placed(launcher: Launcher, timeline: Any = None) -> list[tuple[int, int, int, int]]:
    """(track, start, duration, left offset) of every facefuse item on the job's timeline."""
    timeline = timeline if timeline is not None else launcher.state.timeline
    found = []
    for track, items in timeline.tracks.items():
        for item in items.values():
            media = item.media
            if media is not None and "facefuse" in str(media.props["File Path"]):
                found.append((track, item.start, item.duration, item.left_offset))
    return sorted(found)
