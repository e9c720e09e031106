"""`facefuse credentials FILE`: whether a file's (or a sequence's) content credentials verify,
who signed it and what made it. Exit 0 when they verify (trusted or valid), 7 when they are
missing or do not verify (ExitCode.CREDENTIALS)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..credentials import CredentialCheck, SequenceCheck, check_file, check_sequence
from ..credentials.formats import SIDECAR_SUFFIX
from ..errors import ExitCode, InputError
from ..io.sequences import FramePattern, is_frame_pattern


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "credentials", help="check a file's content credentials (C2PA): who signed it, "
        "what made it, whether it changed since")
    parser.add_argument("file", metavar="FILE", help="a picture or movie (or its .c2pa "
                        "sidecar), or an image sequence pattern (name.####.exr, "
                        "name.%%04d.png, name.#.png)")
    parser.add_argument("--trust", type=Path, metavar="CA.pem", help="the CA certificates "
                        "(PEM) whose signers are trusted: their files show as trusted, "
                        "other signers' as valid")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON "
                        "object")
    parser.set_defaults(handler=cmd_credentials)


def cmd_credentials(args: argparse.Namespace) -> int:
    if is_frame_pattern(args.file):
        frames = FramePattern.parse(args.file).scan()
        if not frames:
            raise InputError(f"no file matches {args.file}; check the folder and the number "
                             "of # (#### matches name.1001.exr)")
        result: CredentialCheck | SequenceCheck = check_sequence(
            list(frames.values()), trust=args.trust, label=args.file)
    else:
        path = Path(args.file)
        if path.suffix == SIDECAR_SUFFIX and path.with_suffix("").is_file():
            path = path.with_suffix("")  # a sidecar named: check the file it belongs to
        result = check_file(path, trust=args.trust)
    print(json.dumps(result.to_json(), sort_keys=True) if args.json else result.summary())
    return ExitCode.OK if result.fine else ExitCode.CREDENTIALS
