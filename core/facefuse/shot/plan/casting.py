"""Casting: who of a shot's people is swapped with which source, and the checks that each has one.

Who is swapped: a person named in `assign` with their own source, a person in `skip` never, and
everyone else as the selector decides (one: the most screen presence; many; reference: people
like the reference face) with the default source (the render's -s images, key "default").
`assign_references` names a person by a picture instead: the person whose mean identity is most
like the picture's (at least `similarity`).

Selectors (``select_people``): ``one`` the person with the most presence (ties: the one seen
first), swapped in every shot where they appear; ``many`` everyone; ``reference`` the people
whose mean embedding is at least the threshold similar to the reference face.

The request's choices arrive as `PlanOptions` (options.plan_options); selection.most_similar is
the similarity maths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ...errors import InputError
from ...pipeline import Pipeline
from ...selection import most_similar
from ...types import SourceIdentity
from ..contract.request import RenderRequest
from .options import PlanOptions
from .people import Person
from .plan import DEFAULT_SOURCE, SKIPPED, PlannedPerson, ShotPlan, person_name, unknown_person


def select_people(people: Sequence[Person], mode: str, reference: np.ndarray | None = None,
                  threshold: float = 0.4) -> tuple[Person, ...]:
    """The people to swap over a range.

    mode "one": the person with the most presence (ties to the lower person_id); "many":
    everyone, most presence first; "reference": people whose mean embedding has cosine
    similarity >= threshold to `reference` (D,), most similar first (every person must carry
    embeddings).
    """
    ranked = sorted(people, key=lambda p: (-p.presence, p.person_id))
    if mode == "one":
        return tuple(ranked[:1])
    if mode == "many":
        return tuple(ranked)
    if mode == "reference":
        by_id = sorted(people, key=lambda p: p.person_id)
        return most_similar(by_id, lambda person: person.mean_embedding, reference, threshold)
    raise InputError(f"unknown face selector {mode!r}; use one, many or reference")


def decide_people(people: Sequence[Person], options: PlanOptions) -> tuple[PlannedPerson, ...]:
    """Who of `people` is swapped, with which source, and why (see the module docstring)."""
    names = {person_name(p): p for p in people}
    planned = [PlannedPerson(person_name(p), p, None, "") for p in people]
    for person_id in (*options.assign, *options.skip):
        if person_id not in names:
            raise InputError(unknown_person(person_id, planned))
    assigned = dict(options.assign)
    for embedding, source in options.assign_references:
        assigned.setdefault(named_by_picture(people, embedding, options.similarity), source)
    skipped = options.skip | {named_by_picture(people, embedding, options.similarity)
                              for embedding in options.skip_references}
    selected = {p.person_id for p in select_people(people, options.selector, options.reference,
                                                   options.similarity)}
    rule = f"selector {options.selector}"
    decided = []
    for person in planned:
        name, number = person.person_id, person.person.person_id
        if name in skipped:
            decided.append(replace(person, why=SKIPPED))
        elif name in assigned:
            decided.append(replace(person, source=assigned[name], why="assigned"))
        elif number in selected:
            decided.append(replace(person, source=DEFAULT_SOURCE, why=f"chosen ({rule})"))
        else:
            decided.append(replace(person, why=f"not chosen ({rule})"))
    return tuple(decided)


def named_by_picture(people: Sequence[Person], embedding: np.ndarray,
                     similarity: float) -> str:
    """The name of the person most like a reference picture; InputError when nobody is."""
    best = most_similar(people, lambda p: p.mean_embedding, embedding, similarity)
    if not best:
        raise InputError(f"no person in this shot looks like the reference picture (similarity "
                         f"at least {similarity}); name the person by id (p1, p2, ...) instead")
    return person_name(best[0])


def source_identities(request: RenderRequest, pipeline: Pipeline) -> dict[str, SourceIdentity]:
    """The identity of every source key a plan of `request` can use: DEFAULT_SOURCE (the
    request's sources; absent without any) and each assigned image (InputError / NoFaceError
    for a bad one)."""
    identities = ({DEFAULT_SOURCE: pipeline.source_identity(request.sources)}
                  if request.sources else {})
    for _, image in request.plan.assign:
        identities.setdefault(str(image), pipeline.source_identity([image]))
    return identities


def default_identity(identities: Mapping[str, SourceIdentity]) -> SourceIdentity:
    """The identity of the request's own sources (DEFAULT_SOURCE), or, for a request without
    any, the empty identity (no embedding, no sources) its fingerprint and provenance name."""
    found = identities.get(DEFAULT_SOURCE)
    if found is not None:
        return found
    return SourceIdentity(np.zeros(0, np.float32), ())


def check_casting(request: RenderRequest) -> None:
    """InputError, before anything is analysed, for a request that swaps faces with nothing:
    no sources (-s) and nobody assigned one (--assign)."""
    if not request.sources and not request.plan.assign:
        raise InputError("there is no source face to swap in: give -s PHOTO (the face given "
                         "to everyone the selector chooses) or --assign p1=PHOTO per person "
                         "(`facefuse review` lists the people)")


def people_without_source(plan: ShotPlan, request: RenderRequest,
                          frames: Iterable[int] | None = None) -> tuple[str, ...]:
    """The people `plan` swaps in `frames` (None: all its frames) with the request's own
    sources (DEFAULT_SOURCE) while the request has none: chosen by the selector or swapped by
    an override, and assigned nothing. () when the request has sources."""
    if request.sources:
        return ()
    numbers = plan.planned if frames is None else frames
    missing = {face.person_id for number in numbers for face in plan.faces(number)
               if face.source == DEFAULT_SOURCE}
    return tuple(p.person_id for p in plan.people if p.person_id in missing)


def check_sources(plan: ShotPlan, request: RenderRequest,
                  frames: Iterable[int] | None = None) -> None:
    """InputError naming the people swapped in `frames` who have no source
    (people_without_source), and how to give them one."""
    missing = people_without_source(plan, request, frames)
    if not missing:
        return
    names = ", ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    raise InputError(f"{names} {verb} swapped but {'has' if len(missing) == 1 else 'have'} no "
                     f"source: give -s PHOTO (everyone the selector chooses), "
                     f"--assign {missing[0]}=PHOTO per person, or --skip {missing[0]}")
