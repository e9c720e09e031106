"""A strip and its settings -> a RenderRequest in a StripSwap (frames.py maps its frame
numbers), and the folders a strip's swap writes: its output, staged inputs, review and
corrections file."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Any

import bpy

from facefuse import (
    LOOK_ROLES,
    MODEL_ROLES,
    FrameSpec,
    InputError,
    InputSpec,
    OutputSpec,
    PersonRef,
    PlanChoices,
    PolicyChoices,
    RenderRequest,
    check_path_length,
    is_frame_pattern,
    missing_models,
    parse_person,
)

from . import review
from .frames import START_NUMBER, StripSwap, image_input, movie_input, selected_numbers
from .settings import engine_settings, in_blender
from .strips import StripError, require_own_picture, require_swappable

DEFAULT_OUTPUT = "//facefuse/"
STAGE_FOLDER = "input"
REVIEW_FOLDER = "review"
OVERRIDES_NAME = "overrides.json"
CORRECTIONS_NAME = "corrections.json"
_SEQUENCE_FORMATS = MappingProxyType({".exr": "exr", ".dpx": "dpx", ".tif": "tif", ".tiff": "tif"})


def strip_swap(scene: Any, strip: Any, frames: tuple[int, int] | None = None,
              chunk: tuple[int, int] | None = None, look: bool = False,
              prepare: bool = True, only: tuple[tuple[int, int], ...] | None = None,
              only_input: str | None = None, overwrite: bool = False,
              review: bool = False) -> StripSwap:
    """Check the strip and its settings and build its swap.

    frames: timeline frames (inclusive) to render, intersected with the trimmed range; None for
    the whole range (the Swap button, and the farm's default: chunks of one range agree on every
    shot-level decision, see docs/render.md). chunk: (N, M) of that range. only / only_input:
    the engine numbers to render within that range (RenderRequest.frames.only); overwrite: render
    them even where a finished frame of the same plan is there. The strip's people
    (their own sources and skips) and its corrections go into the request
    (RenderRequest.plan: assign / skip / overrides, see overrides_in_use), their consent
    records, Require Consent and Project into its policy (RenderRequest.policy, see
    policy_choices). look: for looking at the strip's faces only (no sources or reference
    needed, only the detector). review: for a review, which lists the people and needs no
    source. prepare: create the output folder
    (link image-strip inputs, write the corrections file). Raises StripError with a message
    for the user; nothing is written before every check has passed.
    """
    require_swappable(strip)
    require_own_picture(scene.sequence_editor, strip)
    props = strip.facefuse
    settings = engine_settings(props)
    out_dir, out_setting = output_folder(strip)
    stage = out_dir / STAGE_FOLDER
    input_spec, numbers = (movie_input(strip) if strip.type == 'MOVIE'
                           else image_input(strip, stage, prepare=False))
    sources = () if look else _sources(props)
    policy = PolicyChoices() if look else policy_choices(props)
    if not look:
        _check_reference(props)
    if not (look or review):
        _check_casting(props, sources)
    missing = missing_models(settings, LOOK_ROLES if look else MODEL_ROLES)
    if missing:
        raise StripError(in_blender("; ".join(missing)))
    selected = selected_numbers(strip, numbers, frames)
    if not look:
        overrides_file(strip)  # its refusals come before anything is written
    if prepare:
        _prepare_folder(out_dir)
        if strip.type == 'IMAGE':
            input_spec, _ = image_input(strip, stage, prepare=True)
    suffix = "." + _format(props.file_format, input_spec)
    prefix = f"{bpy.path.clean_name(strip.name)}."
    plan = PlanChoices(
        smoothing=props.use_smoothing,
        assign=() if look else _assigned(props), skip=() if look else _skipped(props),
        overrides=None if look else overrides_in_use(strip, write=prepare,
                                                     part=frames is not None))
    request = RenderRequest(
        sources=sources, settings=settings, plan=plan,
        input=InputSpec(input_spec, start_number=START_NUMBER),
        frames=FrameSpec(range=(min(selected), max(selected)), chunk=chunk, only=only,
                         only_input=only_input),
        policy=policy,
        output=OutputSpec(str(out_dir / f"{prefix}####{suffix}"), overwrite=overwrite))
    return StripSwap(scene=scene.name, strip=strip.name, request=request, numbers=numbers,
                    frame_start=strip.frame_final_start, output_dir=out_dir,
                    output_dir_setting=out_setting)


def _assigned(props: Any) -> tuple[tuple[PersonRef, Path], ...]:
    """(person, source) of the people given their own source image on the strip."""
    return _people_files(props, "source", "source image")


def policy_choices(props: Any) -> PolicyChoices:
    """The strip's consent records (of the people not skipped), Require Consent and Project as
    a request's policy; StripError for a record file that is missing."""
    return PolicyChoices(consent=_people_files(props, "consent", "consent record"),
                         require_consent=props.require_consent,
                         project=props.project.strip() or None)


def _people_files(props: Any, name: str, what: str) -> tuple[tuple[PersonRef, Path], ...]:
    """(person, file) of the people not skipped whose property `name` names a file (Blender's
    `//` resolved); StripError naming `what` for a file that is missing."""
    pairs = []
    for person in props.people:
        text = getattr(person, name).strip()
        if not text or person.skip:
            continue
        path = Path(bpy.path.abspath(text))
        if not path.is_file():
            raise StripError(f"The {what} of person {person.person_id} is missing: {text}")
        pairs.append((parse_person(person.person_id), path))
    return tuple(pairs)


def _skipped(props: Any) -> tuple[PersonRef, ...]:
    return tuple(parse_person(person.person_id) for person in props.people if person.skip)


def overrides_file(strip: Any) -> Path | None:
    """The corrections file made elsewhere that the strip uses (docs/overrides.md): its
    Corrections File, else overrides.json in its output folder when there is one."""
    setting = strip.facefuse.overrides_file.strip()
    if setting:
        path = _checked_length(Path(bpy.path.abspath(setting)), "Corrections file")
        if not path.is_file():
            raise StripError(f"Corrections file {setting} is missing ({path})")
        return path
    path = _checked_length(output_folder(strip)[0] / CORRECTIONS_NAME, "Output folder")
    path = path.with_name(OVERRIDES_NAME)
    return path if path.is_file() else None


def _checked_length(path: Path, what: str) -> Path:
    """`path`, or StripError when a name in it is longer than its file system takes (the
    system refuses to look such a path up at all)."""
    try:
        check_path_length(path, what)
    except InputError as exc:
        raise StripError(str(exc)) from None
    return path


def overrides_in_use(strip: Any, write: bool = True, part: bool = False) -> Path | None:
    """The overrides file the strip's request carries (RenderRequest.plan.overrides).

    None without corrections; the corrections file as it is when the strip has none of its
    own; else corrections.json in the output folder: the file's entries, then the strip's
    (written when `write`, only when it changes). Every request of the strip (Preview, Swap,
    Review, the farm) carries the same file, so they agree on every frame. part: a request of
    part of the strip (headless --frames): corrections naming people carry the shot of the
    strip's last review, whose people they name.
    """
    props = strip.facefuse
    made_elsewhere = overrides_file(strip)
    own = review.strip_corrections(props)
    if not own:
        return made_elsewhere
    path = output_folder(strip)[0] / CORRECTIONS_NAME
    named = part and any(entry.person for entry in own)
    shot = review.review_shot(bpy.path.abspath(props.report)) if named else None
    if write:
        review.write_corrections(path, made_elsewhere, own, shot)
    return path


def review_folder(strip: Any) -> Path:
    """Where the strip's review report goes: review/ in its output folder."""
    return output_folder(strip)[0] / REVIEW_FOLDER


def _check_casting(props: Any, sources: tuple[Path, ...]) -> None:
    """A swap or preview needs Sources or some person's Own Source. Who of the people the
    plan swaps still lacks one, the engine says in one sentence once the shot is planned
    (settings.in_blender words it for Blender)."""
    if sources or any(person.source.strip() and not person.skip for person in props.people):
        return
    raise StripError("No source image: add the photo of the face to put in (Face Swap > "
                     "Sources > +), or give people their own source (Review, then Face Swap > "
                     "People)")


def _sources(props: Any) -> tuple[Path, ...]:
    paths = [item.filepath for item in props.sources if item.filepath.strip()]
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
