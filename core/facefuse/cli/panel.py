"""`facefuse panel [CLIP]`: the Qt panel on plain files (previs, no host). Needs the panel extra
(PySide6-Essentials); the panel package is imported only when the command runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..hosting.plugins import host_module
from ..io.sequences import is_frame_pattern


def add_parser(commands: Any) -> None:
    p = commands.add_parser("panel", help="the Qt panel on a clip: sources, face pick, preview "
                            "and render (pip install 'facefuse[panel]')")
    p.add_argument("clip", nargs="?", type=Path, help="a video file or image-sequence pattern")
    p.set_defaults(handler=cmd_panel)


def cmd_panel(args: argparse.Namespace) -> int:
    if args.clip is not None and not is_frame_pattern(str(args.clip)) and not args.clip.is_file():
        raise InputError(f"the clip {args.clip} does not exist")
    return int(host_module("panel", "app").run_standalone(args.clip))
