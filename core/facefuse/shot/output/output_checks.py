"""What open_writer checks before a render writes anything, and the sweep of stale temporaries.

Every output file of every frame is compared with every file the render reads (request_inputs:
the shot's files, the source and reference images, model files named by path, the model
manifest), by path after resolving symlinks and by (device, inode) so hard links count, and with
the files the other outputs write, frame number by frame number (`a.####.png` and `a.#.png` both
name `a.1000.png`); no output name may be longer than its file system takes (NAME_MAX, PATH_MAX);
every output folder must be writable. check_request_outputs runs the same comparison for work
that runs later (a farm bundle), from the request alone. The sweep removes hidden temporaries
whose writer is gone in the output folders (of these outputs, and any other a killed run of any
command left there: see io.files.sweep_stale_temporaries, sweep_leftovers), never an input.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...config import Settings, tunable_options
from ...errors import InputError, ModelError
from ...io import files, sequences
from ...io.sequences import FramePattern
from ...models.locations import default_models_dir, looks_like_model_path
from ...models.manifest import default_manifest_path, load_manifest
from ..contract.request import PersonInPicture, RenderRequest

if TYPE_CHECKING:
    from ..contract.inputs import ShotInput

log = logging.getLogger(__name__)


class NamedOutput(Protocol):
    """An image-sequence output as the checks see it (shot.output.writers.SequenceOutput)."""

    pattern: FramePattern

    @property
    def folder(self) -> Path: ...

    def owns_temporary(self, part: str, cut: bool, ext: str) -> bool: ...


FileId = tuple[int, int]


def _file_id(path: Path) -> FileId | None:
    """(device, inode) of the file `path` names (following symlinks); None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def input_ids(paths: Sequence[Path]) -> frozenset[FileId]:
    return frozenset(i for i in map(_file_id, paths) if i is not None)


class _Resolver:
    """Resolved paths of many files in a few folders: each folder resolved and listed once, so
    only names that exist (symlinks above all) cost a system call each."""

    def __init__(self) -> None:
        self._folders: dict[Path, tuple[str, dict[str, os.DirEntry[str]]]] = {}

    def folder(self, folder: Path) -> tuple[str, dict[str, os.DirEntry[str]]]:
        """(the resolved folder with a trailing separator, its entries by name)."""
        if folder not in self._folders:
            entries: dict[str, os.DirEntry[str]] = {}
            try:
                with os.scandir(folder) as found:
                    entries = {entry.name: entry for entry in found}
            except OSError:
                pass
            self._folders[folder] = (os.path.join(folder.resolve(), ""), entries)
        return self._folders[folder]

    def key(self, folder: Path, name: str) -> tuple[str, FileId | None]:
        """(the resolved path, (device, inode) when the file exists) of folder/name."""
        resolved, entries = self.folder(folder)
        entry = entries.get(name)
        if entry is None:
            return resolved + name, None
        try:
            target = str(Path(entry.path).resolve()) if entry.is_symlink() else resolved + name
            st = entry.stat()
        except OSError:
            return resolved + name, None
        return target, (st.st_dev, st.st_ino)


def request_inputs(request: RenderRequest) -> tuple[Path, ...]:
    """The files a render of `request` reads besides its shot: source images, the images and
    pictures its --assign, --skip and --consent name, its --overrides file, the review report
    its --frames flagged:REPORT read, its consent records and signing key, and
    settings_inputs. The one list of "what this command
    reads" that render, preview, review, timeline swaps, farm jobs and hosts check their
    outputs against (check_not_input, check_outputs)."""
    named = [Path(person.path) for person in
             (*(p for p, _ in request.plan.assign), *request.plan.skip,
              *(holder for holder, _ in request.policy.consent))
             if isinstance(person, PersonInPicture)]
    signing = request.signing
    files_named = [path for path in (request.plan.overrides, request.frames.only_report,
                                     signing.cert, signing.key) if path is not None]
    files_named += [record for _, record in request.policy.consent]
    return (*map(Path, request.sources), *(image for _, image in request.plan.assign), *named,
            *map(Path, files_named), *settings_inputs(request.settings))


def settings_inputs(settings: Settings) -> tuple[Path, ...]:
    """The files any command with `settings` reads: reference images, model options that name
    a file, the files of the manifest models the others name, and the model manifest."""
    values = [value for option in tunable_options()
              if option.kind in ("model", "optional-model")
              and isinstance(value := getattr(settings, option.name), str)]
    models = [Path(value).expanduser() for value in values
              if os.path.isfile(Path(value).expanduser())]
    named = [value for value in values if not looks_like_model_path(value)]
    return (*map(Path, settings.reference_images), *models,
            *_manifest_model_files(named, settings.models_dir), default_manifest_path())


def _manifest_model_files(names: Sequence[str], models_dir: Path | None) -> list[Path]:
    """The files in the models folder of those of `names` the manifest knows (a manifest that
    cannot be read names none: the command refuses it when it loads its models)."""
    if not names:
        return []
    try:
        manifest = load_manifest()
    except ModelError:
        return []
    folder = default_models_dir(models_dir)
    return [folder / manifest.models[name].file for name in names if name in manifest.models]


def check_not_input(label: str, target: Path | str, inputs: Sequence[Path | str]) -> None:
    """InputError when the output `target` is one of `inputs`: the same path once links and
    `..` are followed, or the same file by another name (a hard link). The one rule every
    command and host applies to a single output file (a still, a report, a timeline, a
    Resolve result) before anything is written; sequences go through check_outputs."""
    target_id = _file_id(Path(target))
    for path in map(Path, inputs):
        if os.path.realpath(target) == os.path.realpath(path) or (
                target_id is not None and _file_id(path) == target_id):
            raise InputError(f"{label} {target} is {path}, which this command reads; choose "
                             "another name")


def check_outputs(named: Sequence[tuple[str, NamedOutput]], video_path: Path | None,
                  shot: ShotInput, numbers: Sequence[int],
                  request: RenderRequest) -> frozenset[FileId]:
    """InputError when an output file would replace a file the render reads (the shot's, or
    one of request_inputs), or two outputs one file, or a name is too long for its file system.
    Returns the input files' (device, inode), which the sweep must never remove."""
    claims = [(label, out.folder, out.pattern.name) for label, out in named]
    return _check_claims(claims, video_path, shot.files(shot.frame_numbers),
                         request_inputs(request), numbers)


def check_output_names(request: RenderRequest) -> None:
    """InputError when an output option of `request` (-o, --matte, --patch) names a path longer
    than the file system takes, or a name in it longer than its folder takes (PATH_MAX,
    NAME_MAX): checked before anything looks at the path. The frame numbers a pattern's files
    get are checked by check_outputs."""
    for option, value in (("-o", request.output.path), ("--matte", request.output.matte),
                          ("--patch", request.output.patch)):
        if value is not None:
            files.check_path_length(Path(value), f"{option} {value}")


def check_request_outputs(request: RenderRequest, numbers: Sequence[int]) -> None:
    """check_outputs for a render that runs later (a farm job written now): the outputs of
    `request` for the frames `numbers` against the files it will read, its shot included (a
    video file, or the frames a sequence pattern finds now)."""
    check_output_names(request)
    shot: tuple[Path, ...] = ()
    if sequences.is_frame_pattern(request.input.path):
        shot = tuple(FramePattern.parse(request.input.path).scan().values())
    elif os.path.isfile(request.input.path):
        shot = (Path(request.input.path),)
    claims = []
    video_path = None
    for option, value in (("-o", request.output.path), ("--matte", request.output.matte),
                          ("--patch", request.output.patch)):
        if value is None:
            continue
        if sequences.is_frame_pattern(value):
            pattern = FramePattern.parse(value)
            claims.append((f"{option} {value}", pattern.path(0).parent, pattern.name))
        else:
            video_path = Path(value)
    _check_claims(claims, video_path, shot, request_inputs(request), numbers)


_Claim = tuple[str, Path, Callable[[int], str]]


def _check_claims(claims: Sequence[_Claim], video_path: Path | None, shot: Sequence[Path],
                  others: Sequence[Path], numbers: Sequence[int]) -> frozenset[FileId]:
    """The checks of check_outputs on (label, folder, name of a frame number) claims and a
    video file; shot: the shot's files, others: the other files the render reads."""
    resolver = _Resolver()
    inputs = (*shot, *others)
    input_paths = {resolver.key(path.parent, path.name)[0] for path in inputs}
    known_ids = input_ids(inputs)
    shot_paths = {resolver.key(path.parent, path.name)[0] for path in shot}
    shot_ids = input_ids(shot)
    owners: dict[str | FileId, str] = {}

    def claim(label: str, folder: Path, name: str) -> None:
        resolved, file_id = resolver.key(folder, name)
        if resolved in input_paths or (file_id is not None and file_id in known_ids):
            raise InputError(f"the output {label} would overwrite the input file "
                             f"{folder / name}; choose another name")
        other = owners.setdefault(resolved, label)
        if other == label and file_id is not None:
            other = owners.setdefault(file_id, label)
        if other != label:
            raise InputError(f"the outputs {other} and {label} would both write "
                             f"{folder / name}; give each its own name")

    if video_path is not None:
        files.check_path_length(video_path, f"-o {video_path}")
        resolved, file_id = resolver.key(video_path.parent, video_path.name)
        if resolved in shot_paths or (file_id is not None and file_id in shot_ids):
            raise InputError(f"the output {video_path} is the input; choose another file name")
        claim(f"-o {video_path}", video_path.parent, video_path.name)
    for label, folder, name in claims:
        for number in {min(numbers, default=0), max(numbers, default=0)}:
            files.check_path_length(folder / name(number), label)
        for number in numbers:
            claim(label, folder, name(number))
    return known_ids


def check_folders(folders: Sequence[Path]) -> None:
    for folder in dict.fromkeys(folders):
        files.check_folder_writable(folder)


def sweep_temporaries(named: Sequence[tuple[str, NamedOutput]], video_path: Path | None,
           protect: frozenset[FileId]) -> None:
    """Remove the hidden temporaries whose writer is gone in the folders of these outputs
    (theirs, and any other a killed run left there: io.files.sweep_leftovers), never an
    input."""
    removed: list[Path] = []
    for _, out in named:
        removed += files.sweep_stale_temporaries(out.folder, out.owns_temporary, protect=protect)
    if video_path is not None:
        stem, suffix = video_path.stem, video_path.suffix

        def owns(part: str, cut: bool, ext: str) -> bool:
            return ext == suffix and (part == stem or (cut and stem.startswith(part)))

        removed += files.sweep_stale_temporaries(video_path.parent, owns, protect=protect)
    folders = [out.folder for _, out in named] + ([video_path.parent] if video_path else [])
    for folder in dict.fromkeys(folders):  # what killed runs of other commands left there
        removed += files.sweep_leftovers(folder, protect)
    if removed:
        log.info("removed %d temporary files left by an interrupted render", len(removed))
