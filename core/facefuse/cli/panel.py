"""`facefuse panel [CLIP]`: the Qt panel on plain files (previs, no host). Needs the panel extra
(PySide6-Essentials); the panel package is imported only when the command runs. It takes the
options `render` takes for models and settings (-s, --swapper, --models-dir, --offline, ...):
those given on the command line win over the ones the panel remembers, also when a value given
equals the default. The `panel` host's `app.run_standalone(clip, base, sources, given)` gets the
clip (or None), the Settings, the -s photos and the names of the Settings fields given."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..hosting.plugins import host_module
from ..io.sequences import is_frame_pattern
from .options import (
    engine_options,
    given_settings,
    settings_from_args,
    track_given_settings,
)


def add_parser(commands: Any) -> None:
    p = commands.add_parser("panel", help="the Qt panel on a clip: timeline, people, preview "
                            "and render (pip install -e '.[panel]')")
    p.add_argument("clip", nargs="?", type=Path, help="a video file or image-sequence pattern")
    engine_options(p, sources_required=False)
    track_given_settings(p)
    p.set_defaults(handler=cmd_panel)


def cmd_panel(args: argparse.Namespace) -> int:
    if args.clip is not None and not is_frame_pattern(str(args.clip)) and not args.clip.is_file():
        raise InputError(f"the clip {args.clip} does not exist")
    base = settings_from_args(args)
    sources = tuple(Path(p) for p in args.source or ())
    return int(host_module("panel", "app").run_standalone(args.clip, base, sources,
                                                          given_settings(args)))
