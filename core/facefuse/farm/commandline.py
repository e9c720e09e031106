"""A RenderRequest as the `facefuse render` command line a farm task runs.

The options themselves, and reading a task's arguments back, are
facefuse.shot.contract.commandline's (the command line builds its parser from the same table), so a
task runs exactly the command a user could type and a Dask worker reads it back as the command line
would. Here: the whole command, and a request made independent of the working folder it was given
in.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import tunable_options
from ..models.locations import looks_like_model_path
from ..shot.contract.commandline import render_args
from ..shot.contract.render_options import OUTPUT_ROOT
from ..shot.contract.request import (
    ConsentHolder,
    PersonId,
    PersonInPicture,
    PersonRef,
    RenderRequest,
    SourcePhotos,
)


def render_command(request: RenderRequest, executable: str = "facefuse",
                   output_root: str | None = None) -> list[str]:
    """`executable render ...`: the command line that renders `request`; with output_root,
    `--output-root` makes the render refuse outputs outside that folder (farm tasks)."""
    root = [OUTPUT_ROOT, output_root] if output_root is not None else []
    return [executable, "render", *render_args(request), *root]


def absolute_paths(request: RenderRequest) -> RenderRequest:
    """`request` with every file and folder it names made absolute (against this process's
    working folder), so a task runs the same from any working folder on any worker."""
    def absolute(path: str | Path) -> str:
        return os.path.abspath(os.path.expanduser(path))

    settings = request.settings
    models: dict[str, Any] = {option.name: absolute(value) for option in tunable_options()
              if option.kind in ("model", "optional-model")
              and (value := getattr(settings, option.name)) and looks_like_model_path(value)}
    folders: dict[str, Any] = {name: Path(absolute(value)) for name in ("models_dir", "cache_dir")
               if (value := getattr(settings, name)) is not None}
    settings = replace(settings, **models, **folders, reference_images=tuple(
        Path(absolute(p)) for p in settings.reference_images))
    plan, output, policy, signing = request.plan, request.output, request.policy, request.signing
    return replace(
        request, settings=settings, sources=tuple(Path(absolute(p)) for p in request.sources),
        input=replace(request.input, path=absolute(request.input.path)),
        plan=replace(plan, assign=tuple((absolute_person(person), Path(absolute(image)))
                                        for person, image in plan.assign),
                     skip=tuple(absolute_person(person) for person in plan.skip),
                     overrides=Path(absolute(plan.overrides)) if plan.overrides else None),
        output=replace(output, path=absolute(output.path),
                       matte=absolute(output.matte) if output.matte else None,
                       patch=absolute(output.patch) if output.patch else None),
        policy=replace(policy, consent=tuple((absolute_holder(holder), Path(absolute(record)))
                                             for holder, record in policy.consent)),
        signing=replace(signing, cert=Path(absolute(signing.cert)) if signing.cert else None,
                        key=Path(absolute(signing.key)) if signing.key else None))


def absolute_holder(holder: ConsentHolder) -> ConsentHolder:
    """A consent record's holder with a picture's or photo's path made absolute."""
    if isinstance(holder, SourcePhotos):
        return holder if holder.image is None else SourcePhotos(os.path.abspath(holder.image))
    return absolute_person(holder)


def absolute_person(person: PersonRef) -> PersonRef:
    """A person of --assign/--skip with a picture's path made absolute (an id unchanged)."""
    if isinstance(person, PersonId):
        return person
    return PersonInPicture(os.path.abspath(os.path.expanduser(person.path)))
