"""`replaced_frames`: which finished frames of its output a render would replace with frames made
another way, and what differs, asked before the render (a host asks the user first; the command
line says so before it renders).

A frame is replaced when its output file exists, reads completely and carries another
fingerprint than the render would give it (shot.output.prints): another setting, model, source,
analysed range, or another plan for that frame (people, their sources, corrections). Frames
whose files carry the render's own fingerprint are resumed, not replaced; missing ones are
simply made. A video is written whole, so an existing video made another way is replaced whole
(with --overwrite: the render refuses to replace a video otherwise).
What differs is read from the existing output's metadata (shot.output.provenance,
shot.output.prints) against the render's: settings as "name old -> new", models, sources, the other
options of the fingerprint, and "the plan (people, sources or corrections) in frames A-B" where
only the plan of those frames changed. Outputs of a facefuse that did not record the render's
options say less. Nothing is written but the caches (the analysis, when the shot was not analysed
yet).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...color import input_conversion
from ...errors import FacefuseError
from ...io import plates, sequences, video
from ...pipeline import Pipeline
from ..contract.frames import FrameRanges, format_frame_list, normalise_ranges, select_frames
from ..contract.inputs import ShotInput, open_input
from ..contract.request import CancelCheck, PhaseCallback, RenderRequest, Replacement
from ..output import provenance
from ..output.prints import RenderPrints, render_prints
from ..plan.casting import check_casting, check_sources
from ..plan.override_fit import fit_overrides
from ..plan.overrides import Overrides, load_overrides
from ..plan.plan import ShotPlan
from .plan_only import plan_shot

log = logging.getLogger(__name__)

SHOWN_DIFFERENCES = 4  # at most this many setting changes are named, then "and N more"
PLAN_CHANGE = "the plan (people, sources or corrections)"


def replaced_frames(request: RenderRequest, pipeline: Pipeline | None = None,
                    on_phase: PhaseCallback | None = None,
                    cancel: CancelCheck | None = None) -> Replacement:
    """What a render of `request` would replace (see the module docstring). pipeline: one
    built from request.settings that the caller keeps; None: one is built and closed. The
    shot is planned (plan_shot: analysed first when not cached, with on_phase's "analysis"
    progress; PlanCancelled) only when the output has finished frames already. Raises what the
    render would raise before rendering (InputError, NoFaceError, ModelMissingError, ...)."""
    if pipeline is not None and pipeline.settings != request.settings:
        raise ValueError("the pipeline given to replaced_frames() was built from other settings")
    check_casting(request)
    if pipeline is not None:
        return _replaced(request, pipeline, on_phase, cancel)
    with Pipeline(request.settings) as own:
        return _replaced(request, own, on_phase, cancel)


def _replaced(request: RenderRequest, pipeline: Pipeline, on_phase: PhaseCallback | None,
              cancel: CancelCheck | None) -> Replacement:
    overrides = (load_overrides(request.plan.overrides)
                 if request.plan.overrides is not None else None)
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        if overrides is not None and request.frames.range is not None:  # as the render fits them
            request = fit_overrides(request, shot, pipeline, overrides).request
        asked = request.frames
        frames = select_frames(shot.frame_numbers, asked.range, asked.chunk, shot.label,
                             contiguous=shot.is_sequence, chunk_frames=asked.chunk_frames,
                             only=asked.only)
        output = request.output
        found = made_outputs(output.path, frames.rendered)
        if not found or not (output.overwrite or sequences.is_frame_pattern(output.path)):
            return Replacement(output.path)  # none, or a video the render refuses to replace
        return _replacement(request, shot, frames.analysed, frames.rendered, found, pipeline,
                            overrides, on_phase, cancel)
    finally:
        shot.close()


def _replacement(request: RenderRequest, shot: ShotInput, analysed: Sequence[int],
                 rendered: Sequence[int], found: Mapping[int, Mapping[str, str]],
                 pipeline: Pipeline, overrides: Overrides | None,
                 on_phase: PhaseCallback | None, cancel: CancelCheck | None) -> Replacement:
    pipeline.models.require_models()
    _, colour_name = input_conversion(request.input.colorspace, shot.suffix, shot.pixel_type)
    prints = render_prints(request, pipeline, shot, analysed, colour_name, overrides)
    plan = None
    if sequences.is_frame_pattern(request.output.path):
        plan = plan_shot(request, pipeline, on_phase, cancel)
        check_sources(plan, request, found)
    return replacement_of(request.output.path, found, rendered, plan, prints)


def replacement_of(output: str, found: Mapping[int, Mapping[str, str]],
                   rendered: Sequence[int], plan: ShotPlan | None,
                   prints: RenderPrints) -> Replacement:
    """What a render with `prints` (and, for an image sequence, `plan`; None for a video)
    replaces among the made outputs `found` (made_outputs) of its frames `rendered`."""
    if plan is None:  # a video: replaced whole, unless it is this render's own
        old = found.get(rendered[0]) if rendered else None
        if old is None or old.get("fingerprint") == prints.whole:
            return Replacement(output)
        return Replacement(output, ((rendered[0], rendered[-1]),), len(rendered), True,
                           differences(old, prints.metadata), _made_by([old]))
    pattern = sequences.FramePattern.parse(output)
    other = [n for n in frames_made_otherwise(found, plan, prints)
             if plates.is_complete(pattern.path(n))]
    if not other:
        return Replacement(output)
    plan_only = [n for n in other if found[n].get("render_fingerprint") == prints.base]
    first = next((found[n] for n in other if n not in plan_only), None)
    said = differences(first, prints.metadata) if first is not None else ()
    if plan_only:
        said += (f"{PLAN_CHANGE} in frames {format_frame_list(_runs(plan_only))}",)
    return Replacement(output, _runs(other), len(other), False, said,
                       _made_by(found[n] for n in other))


def _made_by(metadata: Iterable[Mapping[str, str]]) -> tuple[str, ...]:
    """The request fingerprints the files with `metadata` were made by (sorted, once each;
    none for files of a facefuse that did not record them)."""
    return tuple(sorted({meta.get("request_fingerprint", "") for meta in metadata} - {""}))


def frames_made_otherwise(found: Mapping[int, Mapping[str, str]], plan: ShotPlan,
                          prints: RenderPrints) -> list[int]:
    """The frames of `found` (frame -> its file's metadata) whose fingerprint is not the one
    the render gives them under `plan`."""
    return [n for n, meta in sorted(found.items())
            if meta.get("fingerprint") != prints.frames.of(plan, n)]


def made_outputs(output: str, rendered: Sequence[int]) -> dict[int, dict[str, str]]:
    """The output's frames that a render made already: an image sequence's files that carry a
    facefuse fingerprint, frame -> the file's facefuse metadata (only headers are read), or a
    video's facefuse tags under its first frame (a video is replaced whole)."""
    if not rendered:
        return {}
    if not sequences.is_frame_pattern(output):
        path = Path(output)
        tags = video_tags(path) if _is_file(path) else {}
        return {rendered[0]: tags} if "fingerprint" in tags else {}
    pattern = sequences.FramePattern.parse(output)
    found = {}
    for number in rendered:
        path = pattern.path(number)
        if not _is_file(path):
            continue
        try:
            meta = plates.read_metadata(path)
        except (FacefuseError, OSError):
            continue
        if "fingerprint" in meta:
            found[number] = meta
    return found


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; False for a path the system refuses (too long, ...): the
    render's own output checks say what is wrong with it."""
    try:
        return path.is_file()
    except OSError:
        return False


def video_tags(path: Path) -> dict[str, str]:
    """The facefuse tags of a video file (key without "facefuse:"; Matroska's upper-cased keys
    read back too); {} for a file that cannot be read."""
    try:
        tags = video.container_tags(path)
    except (FacefuseError, OSError):
        return {}
    prefix = provenance.PREFIX
    return {key[len(prefix):].lower(): value for key, value in tags.items()
            if key.lower().startswith(prefix)}


def differences(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[str, ...]:
    """What differs between an existing output's metadata `old` (keys without the prefix) and
    the render's `new` (with it): settings, models, sources and the fingerprint's other
    options, each as a short phrase."""
    mine = {k.removeprefix(provenance.PREFIX): v for k, v in new.items()}
    said = [*_setting_changes(old, mine), *_model_changes(old, mine), *_source_change(old, mine),
            *_option_changes(old, mine)]
    if not said and old.get("render_fingerprint") not in (None, mine.get("render_fingerprint")):
        said.append("other render options")
    if not said and "options" not in old:
        said.append("other choices (made by an earlier facefuse, which did not record them)")
    return tuple(said)


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _setting_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    before, after = _json(old.get("settings")), _json(new.get("settings"))
    if not before:
        return []
    changed = [f"{key} {_shown(before.get(key), key)} -> {_shown(after.get(key), key)}"
               for key in sorted(before.keys() | after.keys())
               if _shown(before.get(key), key) != _shown(after.get(key), key)]
    if len(changed) > SHOWN_DIFFERENCES:
        more = len(changed) - SHOWN_DIFFERENCES
        changed = [*changed[:SHOWN_DIFFERENCES], f"and {more} more settings"]
    return changed


def _shown(value: Any, key: str) -> str:
    """A setting's value as said (a file by its name: old outputs may hold full paths)."""
    if key in provenance.BY_CONTENT_SETTINGS and isinstance(value, str):
        return provenance.file_name(value)
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v, key) for v in value) + "]"
    return "none" if value is None else str(value)


def _model_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    before, after = _json(old.get("models")), _json(new.get("models"))
    said = []
    for role in sorted(before.keys() & after.keys()):
        was, now = before[role], after[role]
        if isinstance(was, dict) and isinstance(now, dict) and \
                was.get("sha256") != now.get("sha256"):
            names = (provenance.file_name(str(was.get("model"))),
                     provenance.file_name(str(now.get("model"))))
            said.append(f"{role} model {names[0]} -> {names[1]}" if names[0] != names[1]
                        else f"{role} model {names[0]} (another file)")
    return said


def _source_change(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    was, now = old.get("sources_sha256"), new.get("sources_sha256")
    if was is None or was == now:
        return []
    count = {"was": len([s for s in was.split(",") if s]),
             "now": len([s for s in (now or "").split(",") if s])}
    if not count["was"]:
        return [f"sources (-s): none -> {_photos(count['now'])}"]
    if not count["now"]:
        return [f"sources (-s): {_photos(count['was'])} -> none"]
    return ["sources (-s): other photos"]


def _photos(count: int) -> str:
    return f"{count} photo" + ("" if count == 1 else "s")


_OPTION_WORDS = MappingProxyType({
    "frames": "analysed frames", "input": "input content", "reference": "reference pictures",
    "colorspace": "colour space", "start_number": "start number", "conform_vfr": "conform VFR",
    "analysis": "analysis version", "plan": "plan version", "reader": "reader version"})


def _option_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    before, after = _json(old.get("options")), _json(new.get("options"))
    if not before:
        return []
    said = []
    for key in sorted(before.keys() | after.keys()):
        if key == "enhancer" or before.get(key) == after.get(key):
            continue  # the enhancer shows in the settings
        word = _OPTION_WORDS.get(key, key)
        if key == "frames":
            said.append(f"{word} {_span(before.get(key))} -> {_span(after.get(key))}")
        elif key in ("input", "reference"):
            said.append(f"other {word}")
        else:
            said.append(f"{word} {_shown(before.get(key), key)} -> {_shown(after.get(key), key)}")
    return said


def _span(value: Any) -> str:
    if isinstance(value, list) and len(value) == 2:
        return f"{value[0]}-{value[1]}"
    return str(value)


def _runs(numbers: Iterable[int]) -> FrameRanges:
    return normalise_ranges((n, n) for n in numbers)

