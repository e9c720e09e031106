"""`facefuse panel [CLIP]`: the Qt panel on plain files (previs, no host). Needs the panel extra
(PySide6-Essentials): app.py is imported only when the command runs. It takes the options
`render` takes for models and settings (-s, --swapper, --models-dir, --offline, ...): those
given on the command line win over the ones the panel remembers, also when a value given
equals the default."""

from __future__ import annotations

import argparse
from pathlib import Path

from facefuse import CommandLine, InputError, Subcommands, host_module, is_frame_pattern


class PanelCommand:
    """The `panel` command (a facefuse HostCommand)."""

    place = 20

    def add_parser(self, commands: Subcommands, cli: CommandLine) -> None:
        p = commands.add_parser("panel", help="the Qt panel on a clip: timeline, people, "
                                "preview and render (pip install -e '.[panel]')")
        p.add_argument("clip", nargs="?", type=Path, help="a video file or image-sequence "
                       "pattern")
        cli.engine_options(p, sources_required=False)
        cli.track_given_settings(p)
        p.set_defaults(handler=lambda args: cmd_panel(args, cli))


def cmd_panel(args: argparse.Namespace, cli: CommandLine) -> int:
    """The panel on `args.clip` (or none) with the command line's Settings and -s photos."""
    if args.clip is not None and not is_frame_pattern(str(args.clip)) and not args.clip.is_file():
        raise InputError(f"the clip {args.clip} does not exist")
    base = cli.settings(args)
    sources = tuple(Path(p) for p in args.source or ())
    return int(host_module("panel", "app").run_standalone(args.clip, base, sources,
                                                          cli.given_settings(args)))


COMMANDS = (PanelCommand(),)
