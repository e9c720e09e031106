"""Consent under the shot plan: who a render swaps, to which source, under which consent record.

A record given with `--consent WHO=RECORD` covers a person of the shot (p1, or ref:PICTURE: the
person who looks like the picture, found as --assign finds them) whatever they are swapped to,
or a source (source: the -s photos; source:IMAGE: one --assign photo) whoever is swapped to it.
Each (person, source) pair the plan swaps in the frames rendered is covered by a record that
holds for this render (consent.check), or it is not; under `require_consent` a render with a
pair not covered is refused before anything is written, naming the person and what is missing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ...consent import ConsentRecord, RenderScope, check, load_consent
from ...errors import InputError
from ...io import sequences
from ...pipeline import Pipeline
from ..contract.request import (
    PersonId,
    PersonInPicture,
    RenderRequest,
    SourcePhotos,
)
from .casting import named_by_picture
from .plan import DEFAULT_SOURCE, ShotPlan


@dataclass(frozen=True, slots=True)
class Consented:
    """One person swapped to one source: the record that covers them (None: none does) and,
    when none does, why (`problem`: "no consent record", "p1's record x.json expired ...")."""

    person_id: str
    source: str
    record: ConsentRecord | None
    problem: str = ""


def render_scope(request: RenderRequest, day: dt.date | None = None) -> RenderScope:
    """What the render of `request` is, for a consent record: its --project, its --shot (else
    the input's name without frame token and extension) and today (or `day`)."""
    shot = request.policy.shot or _input_name(request.input.path)
    return RenderScope(request.policy.project, shot, day or dt.date.today())


def _input_name(path: str) -> str:
    name = Path(path).name
    if sequences.is_frame_pattern(path):
        pattern = sequences.FramePattern.parse(path)
        name = Path(pattern.prefix).name
    return name.split(".")[0].rstrip("._-") or name


def consent_of(plan: ShotPlan, request: RenderRequest, pipeline: Pipeline,
               frames: Iterable[int], scope: RenderScope) -> tuple[Consented, ...]:
    """Every (person, source) pair `plan` swaps in `frames`, with the record covering it
    (InputError for a record file that cannot be read or a person no picture matches)."""
    records = [(holder, load_consent(path)) for holder, path in request.policy.consent]
    people = [p.person for p in plan.people]
    by_person: dict[str, list[ConsentRecord]] = {}
    by_source: dict[str, list[ConsentRecord]] = {}
    for holder, record in records:
        if isinstance(holder, PersonId):
            by_person.setdefault(holder.id, []).append(record)
        elif isinstance(holder, PersonInPicture):
            embedding = pipeline.source_identity([Path(holder.path)]).embedding
            name = named_by_picture(people, embedding, request.settings.similarity)
            by_person.setdefault(name, []).append(record)
        else:
            by_source.setdefault(_source_key(holder, request), []).append(record)
    pairs = sorted({(face.person_id, face.source) for number in frames
                    for face in plan.faces(number)})
    covered = tuple(_covered(person, source, by_person.get(person, []) +
                             by_source.get(source, []), scope, pipeline.hashes.sha256)
                    for person, source in pairs)
    pipeline.hashes.flush()
    return covered


def _source_key(holder: SourcePhotos, request: RenderRequest) -> str:
    """The plan's key of the identity a `source` or `source:IMAGE` holder names."""
    if holder.image is None:
        return DEFAULT_SOURCE
    for _, image in request.plan.assign:
        if str(image) == holder.image or _same_file(image, Path(holder.image)):
            return str(image)
    raise InputError(f"--consent source:{holder.image}=...: {holder.image} is not a photo given "
                     "with --assign; name the -s photos as source, or the person (p1)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _covered(person: str, source: str, records: list[ConsentRecord],
             scope: RenderScope, hash_file: Callable[[Path], str]) -> Consented:
    problems = []
    for record in records:
        problem = check(record, scope, hash_file)
        if problem is None:
            return Consented(person, source, record)
        problems.append(f"{record.path.name} {problem}")
    return Consented(person, source, None, "; ".join(problems) or "no consent record")


def source_names(plan: ShotPlan, request: RenderRequest) -> dict[str, str]:
    """Each source key of `plan` as a user knows it: the -s photos' names for DEFAULT_SOURCE,
    an --assign photo's name for its own."""
    own = ", ".join(Path(p).name for p in request.sources) or DEFAULT_SOURCE
    return {key: own if key == DEFAULT_SOURCE else Path(key).name for key in plan.sources}


def check_consent(consented: Iterable[Consented], sources: Mapping[str, str]) -> None:
    """InputError naming the first person swapped without a record that holds, what is wrong
    and how to give one; `sources` names each source key for the user (its photo)."""
    for item in consented:
        if item.record is not None:
            continue
        shown = sources.get(item.source, item.source)
        raise InputError(f"{item.person_id} is swapped to {shown} without valid consent "
                         f"({item.problem}), and this render requires consent: give --consent "
                         f"{item.person_id}=RECORD.json (see docs/consent.md) or --skip "
                         f"{item.person_id}")
