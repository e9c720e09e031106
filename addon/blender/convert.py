"""A strip and its settings -> a RenderRequest, and the frame mapping between timeline and engine.

Frame numbers. The engine numbers a movie's frames from START_NUMBER = 1, as `facefuse render`
does by default (so a farm render with the CLI and one from Blender share outputs and resume
each other): the movie frame shown at timeline frame f is number
`f - frame_start + animation_offset_start + 1`, and `<strip>.0001.png` holds the movie's first
frame. Image strips keep the numbers their files carry (`plate.1001.exr` -> 1001) when the used
files form one numbered sequence; any other list of files (stills, held or reordered frames) is
linked into `<output>/input/src.####.<ext>` numbered 1.. in order of first use. Every trimmed
timeline frame frame_final_start .. frame_final_end - 1 maps to one number (`SwapPlan.numbers`),
and the result strip has one element per trimmed frame, in order, starting at frame_final_start.

Blender 5.0 names (strips, Strip, context.sequencer_scene) are used when present, with the
4.2-4.5 names (sequences, Sequence) as fallback.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import bpy

from facefuse import (
    LOOK_ROLES,
    MODEL_ROLES,
    FramePattern,
    HostError,
    RenderRequest,
    Settings,
    Tunable,
    is_frame_pattern,
    missing_models,
    plan_frames,
    tunable_options,
)

START_NUMBER = 1
DEFAULT_OUTPUT = "//facefuse/"
SWAPPABLE = ('MOVIE', 'IMAGE')
STAGE_FOLDER = "input"
REVIEW_FOLDER = "review"
OVERRIDES_NAME = "overrides.json"
FETCH_HINT = "open Preferences > Add-ons > facefuse and press Download models"
_FETCH_WITH = re.compile(r"fetch (?:it|them) with `facefuse models fetch[^`]*`")
_FETCH_RUN = re.compile(r"run:? `?facefuse models fetch[^;,`]*`?")
_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<digits>\d+)(?P<suffix>\.[^.]+)$")
_SEQUENCE_FORMATS = MappingProxyType({".exr": "exr", ".dpx": "dpx", ".tif": "tif", ".tiff": "tif"})


class StripError(HostError):
    """The strip, its settings or the file system stop a swap; the message tells the user why."""


@dataclass(frozen=True, slots=True)
class SwapPlan:
    """One strip's swap: the engine request and where the result strip goes.

    numbers: the engine frame number shown at each trimmed timeline frame, in timeline order.
    output_dir: absolute; output_dir_setting: as the user sees it (may start with //).
    """

    scene: str
    strip: str
    request: RenderRequest
    numbers: tuple[int, ...]
    frame_start: int
    output_dir: Path
    output_dir_setting: str

    def output_name(self, number: int) -> str:
        return FramePattern.parse(self.request.output).name(number)

    def missing_outputs(self) -> list[int]:
        """Numbers whose output file is not there (yet)."""
        return [n for n in dict.fromkeys(self.numbers)
                if not (self.output_dir / self.output_name(n)).is_file()]

    def todo(self) -> tuple[int, ...]:
        """The numbers this request renders, as the engine decides them (its frame range,
        then its chunk)."""
        request = self.request
        return plan_frames(sorted(set(self.numbers)), request.frames, request.chunk,
                           self.strip, only=request.only).rendered

    def timeline_frames(self, first: int, last: int) -> list[int]:
        """The trimmed timeline frames that show engine numbers first..last (inclusive)."""
        return [self.frame_start + i for i, n in enumerate(self.numbers) if first <= n <= last]

    def numbers_between(self, first: int, last: int) -> list[int]:
        """The engine numbers shown at timeline frames first..last (inclusive), ascending."""
        return sorted({n for i, n in enumerate(self.numbers)
                       if first <= self.frame_start + i <= last})

    def number_at(self, frame: int) -> int:
        """The engine number at timeline frame `frame`; StripError outside the trimmed range."""
        index = frame - self.frame_start
        if not 0 <= index < len(self.numbers):
            raise StripError(f"the playhead (frame {frame}) is outside strip '{self.strip}' "
                             f"({self.frame_start}-{self.frame_start + len(self.numbers) - 1})")
        return self.numbers[index]


# -- Blender 4.2 .. 5.0 names --------------------------------------------------------------------

def strip_type() -> Any:
    """bpy.types.Strip (5.0) or bpy.types.Sequence (4.2-4.5)."""
    return getattr(bpy.types, "Strip", None) or bpy.types.Sequence


def sequencer_scene(context: Any) -> Any:
    """The scene the sequencer shows: context.sequencer_scene (5.0) or context.scene."""
    return getattr(context, "sequencer_scene", None) or getattr(context, "scene", None)


def top_strips(editor: Any) -> Any:
    strips = getattr(editor, "strips", None)
    return strips if strips is not None else editor.sequences


def all_strips(editor: Any) -> Any:
    strips = getattr(editor, "strips_all", None)
    return strips if strips is not None else editor.sequences_all


def container_of(editor: Any, strip: Any) -> Any:
    """The collection holding `strip`: its meta strip's, or the editor's top level."""
    meta = strip.parent_meta()
    return top_strips(editor if meta is None else meta)


def active_strip(context: Any) -> tuple[Any, Any]:
    """(scene, active strip) of the sequencer; StripError when there is none."""
    scene = sequencer_scene(context)
    editor = scene.sequence_editor if scene is not None else None
    strip = editor.active_strip if editor is not None else None
    if strip is None:
        raise StripError("No active strip: click a movie or image strip in the Sequencer first")
    return scene, strip


def require_swappable(strip: Any) -> None:
    if strip.type not in SWAPPABLE:
        kind = strip.type.lower().replace("_", " ")
        raise StripError(f"Strip '{strip.name}' is a {kind} strip: face swap works on movie "
                         "and image strips")


# -- settings ------------------------------------------------------------------------------------

def engine_settings(props: Any) -> Settings:
    """facefuse Settings from a strip's settings; offline unless Blender allows online access."""
    reference: tuple[Path, ...] = ()
    if props.selector == 'reference' and props.reference_image:
        reference = (Path(bpy.path.abspath(props.reference_image)),)
    return Settings(
        **{option.name: _tunable_value(props, option) for option in tunable_options()},
        reference_images=reference,
        providers="auto" if props.providers == 'auto' else ("CPUExecutionProvider",),
        models_dir=_folder(props.models_dir), cache_dir=_folder(props.cache_dir),
        offline=not online_access())


def _tunable_value(props: Any, option: Tunable) -> Any:
    value = getattr(props, option.name)
    if option.kind == "optional-model" and not getattr(props, f"use_{option.name}"):
        return None
    if option.kind == "choices":  # Blender's set, in the engine's order
        return tuple(choice for choice in option.choices if choice in value)
    return _model(value) if option.kind in ("model", "optional-model") else value


def online_access() -> bool:
    return bool(getattr(bpy.app, "online_access", False))


def _model(text: str) -> str:
    text = text.strip()
    looks_like_path = text.startswith("//") or "/" in text or "\\" in text or text.endswith(".onnx")
    return bpy.path.abspath(text) if looks_like_path else text


def _folder(text: str) -> Path | None:
    return Path(bpy.path.abspath(text)) if text.strip() else None


# -- strip -> request ----------------------------------------------------------------------------

def plan_swap(scene: Any, strip: Any, frames: tuple[int, int] | None = None,
              chunk: tuple[int, int] | None = None, look: bool = False,
              prepare: bool = True, only: tuple[tuple[int, int], ...] | None = None,
              only_input: str | None = None, overwrite: bool = False) -> SwapPlan:
    """Check the strip and its settings and build its swap.

    frames: timeline frames (inclusive) to render, intersected with the trimmed range; None for
    the whole range (the Swap button, and the farm's default: chunks of one range agree on every
    shot-level decision, see docs/render.md). chunk: (N, M) of that range. only / only_input:
    the engine numbers to render within that range (RenderRequest.only); overwrite: render
    them even where a finished frame of the same plan is there. The strip's people
    (their own sources and skips) and its overrides file, when there is one, go into the
    request (RenderRequest.assign / skip / overrides). look: for looking at
    the strip's faces only (no sources or reference needed, only the detector). prepare: create
    the output folder (and link image-strip inputs). Raises StripError with a message for the
    user; nothing is written before every check has passed.
    """
    require_swappable(strip)
    props = strip.facefuse
    settings = engine_settings(props)
    out_dir, out_setting = output_folder(strip)
    stage = out_dir / STAGE_FOLDER
    input_spec, numbers = (_movie_input(strip) if strip.type == 'MOVIE'
                           else _image_input(strip, stage, prepare=False))
    sources = () if look else _sources(props)
    if not look:
        _check_reference(props)
    missing = missing_models(settings, LOOK_ROLES if look else MODEL_ROLES)
    if missing:
        raise StripError(in_blender("; ".join(missing)))
    selected = _selected_numbers(strip, numbers, frames)
    if prepare:
        _prepare_folder(out_dir)
        if strip.type == 'IMAGE':
            input_spec, _ = _image_input(strip, stage, prepare=True)
    suffix = "." + _format(props.file_format, input_spec)
    prefix = f"{bpy.path.clean_name(strip.name)}."
    request = RenderRequest(
        sources=sources, input=input_spec, output=str(out_dir / f"{prefix}####{suffix}"),
        settings=settings, frames=(min(selected), max(selected)), chunk=chunk,
        smoothing=props.use_smoothing, start_number=START_NUMBER,
        assign=() if look else _assigned(props), skip=() if look else _skipped(props),
        overrides=None if look else overrides_in_use(strip), only=only, only_input=only_input,
        overwrite=overwrite)
    return SwapPlan(scene=scene.name, strip=strip.name, request=request, numbers=numbers,
                    frame_start=strip.frame_final_start, output_dir=out_dir,
                    output_dir_setting=out_setting)


def _assigned(props: Any) -> tuple[tuple[str, Path], ...]:
    """(person, source) of the people given their own source image on the strip."""
    pairs = []
    for person in props.people:
        text = person.source.strip()
        if not text or person.skip:
            continue
        path = Path(bpy.path.abspath(text))
        if not path.is_file():
            raise StripError(f"The source image of person {person.person_id} is missing: {text}")
        pairs.append((person.person_id, path))
    return tuple(pairs)


def _skipped(props: Any) -> tuple[str, ...]:
    return tuple(person.person_id for person in props.people if person.skip)


def overrides_path(strip: Any) -> Path:
    """The strip's overrides JSON (docs/overrides.md): its setting, else overrides.json in the
    strip's output folder."""
    setting = strip.facefuse.overrides_file.strip()
    if setting:
        return Path(bpy.path.abspath(setting))
    return output_folder(strip)[0] / OVERRIDES_NAME


def overrides_in_use(strip: Any) -> Path | None:
    path = overrides_path(strip)
    return path if path.is_file() else None


def review_folder(strip: Any) -> Path:
    """Where the strip's review report goes: review/ in its output folder."""
    return output_folder(strip)[0] / REVIEW_FOLDER


def in_blender(message: str) -> str:
    """An engine message with the command-line model fetch replaced by the add-on's button."""
    message = _FETCH_WITH.sub(FETCH_HINT, message)
    return _FETCH_RUN.sub(FETCH_HINT, message)


def _sources(props: Any) -> tuple[Path, ...]:
    paths = [item.filepath for item in props.sources if item.filepath.strip()]
    if not paths:
        raise StripError("No source image: add the photo of the face to put in "
                         "(Face Swap > Sources > +)")
    resolved = []
    for text in paths:
        path = Path(bpy.path.abspath(text))
        if not path.is_file():
            raise StripError(f"Source image {text} is missing ({path})")
        resolved.append(path)
    return tuple(resolved)


def _check_reference(props: Any) -> None:
    if props.selector != 'reference':
        return
    if not props.reference_image.strip():
        raise StripError("Target face 'Reference' needs a reference: look at the faces under "
                         "the playhead and press Use Face")
    path = Path(bpy.path.abspath(props.reference_image))
    if not path.is_file():
        raise StripError(f"Reference image {props.reference_image} is missing ({path})")


def output_folder(strip: Any) -> tuple[Path, str]:
    """(absolute folder, folder as set) for a strip's swapped frames."""
    setting = strip.facefuse.output_dir.strip()
    if not setting:
        setting = f"{DEFAULT_OUTPUT}{bpy.path.clean_name(strip.name)}/"
    if setting.startswith("//") and not bpy.data.filepath:
        raise StripError(f"Save the .blend first: the swapped frames go to {setting} next to it "
                         "(or set an absolute Output Folder)")
    return Path(bpy.path.abspath(setting)), setting


def _prepare_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".facefuse-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StripError(f"Cannot write the swapped frames to {folder}: {reason}") from None


def _format(choice: str, input_spec: str) -> str:
    if choice != 'AUTO':
        return choice
    if is_frame_pattern(input_spec):
        return _SEQUENCE_FORMATS.get(Path(input_spec).suffix.lower(), "png")
    return "png"


def overlaps(strip: Any, frames: tuple[int, int] | None) -> bool:
    """Whether timeline frames `frames` (inclusive; None: all) meet the strip's trimmed range."""
    return frames is None or (frames[0] < strip.frame_final_end
                              and strip.frame_final_start <= frames[1])


def _selected_numbers(strip: Any, numbers: tuple[int, ...],
                      frames: tuple[int, int] | None) -> tuple[int, ...]:
    if frames is None:
        return numbers
    first, last = frames
    start = strip.frame_final_start
    chosen = tuple(n for i, n in enumerate(numbers) if first <= start + i <= last)
    if not chosen:
        raise StripError(f"Frames {first}-{last} miss strip '{strip.name}' "
                         f"({start}-{strip.frame_final_end - 1})")
    return chosen


def _movie_input(strip: Any) -> tuple[str, tuple[int, ...]]:
    path = Path(bpy.path.abspath(strip.filepath))
    if not path.is_file():
        raise StripError(f"The movie of strip '{strip.name}' is missing: {strip.filepath}")
    retimed = len(getattr(strip, "retiming_keys", ())) > 0 or strip.strobe > 1.0
    if strip.use_reverse_frames or retimed:
        raise StripError(f"Strip '{strip.name}' is reversed or retimed: swap the plain strip, "
                         "then reverse or retime the result")
    last = max(1, strip.frame_duration)
    offset = strip.animation_offset_start - int(strip.frame_start) + START_NUMBER
    numbers = tuple(min(max(f + offset, START_NUMBER), last - 1 + START_NUMBER)
                    for f in range(strip.frame_final_start, strip.frame_final_end))
    return str(path), numbers


def _image_input(strip: Any, stage: Path, prepare: bool) -> tuple[str, tuple[int, ...]]:
    """A sequence pattern the engine reads and the number at each trimmed frame."""
    folder = Path(bpy.path.abspath(strip.directory))
    names = [strip.strip_elem_from_frame(f).filename
             for f in range(strip.frame_final_start, strip.frame_final_end)]
    for name in dict.fromkeys(names):
        if not (folder / name).is_file():
            raise StripError(f"Image {name} of strip '{strip.name}' is missing from {folder}")
    pattern = _as_sequence(folder, names)
    if pattern is not None:
        return pattern
    unique = list(dict.fromkeys(names))
    suffixes = {Path(n).suffix.lower() for n in unique}
    if len(suffixes) != 1:
        formats = ", ".join(sorted(suffixes))
        raise StripError(f"Strip '{strip.name}' mixes image formats ({formats})")
    suffix = Path(unique[0]).suffix
    number = {name: i + 1 for i, name in enumerate(unique)}
    if prepare:
        stage.mkdir(parents=True, exist_ok=True)
        for name, n in number.items():
            _link(folder / name, stage / f"src.{n:04d}{suffix}")
    return str(stage / f"src.####{suffix}"), tuple(number[n] for n in names)


def _as_sequence(folder: Path, names: list[str]) -> tuple[str, tuple[int, ...]] | None:
    """(pattern, numbers) when every name is one numbered sequence without gaps, else None."""
    match = _NUMBERED.match(names[0])
    if match is None:
        return None
    digits = match["digits"]
    padding = len(digits) if digits.startswith("0") or len(set(map(len, names))) == 1 else 1
    pattern = FramePattern.parse(
        str(folder / f"{match['prefix']}{'#' * padding}{match['suffix']}"))
    numbers = []
    for name in names:
        number = pattern.number_of(name)
        if number is None or pattern.name(number) != name:
            return None
        numbers.append(number)
    unique = sorted(set(numbers))
    if unique != list(range(unique[0], unique[-1] + 1)):
        return None
    return pattern.display, tuple(numbers)


def _link(target: Path, link: Path) -> None:
    """Point `link` at `target` (symlink, else hard link, else copy), replacing a stale one."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    temporary = link.with_name(f".{link.name}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.symlink(target, temporary)
    except OSError:
        try:
            os.link(target, temporary)
        except OSError:
            import shutil

            shutil.copy2(target, temporary)
    os.replace(temporary, link)
