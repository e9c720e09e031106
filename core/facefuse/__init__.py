"""facefuse: a local face replacement engine (detect, align, embed, swap, enhance, paste back).

The public API: the names a host (Blender, the Qt panel, DaVinci Resolve, a farm) or a script
imports; hosts import nothing below them (tests/unit/test_import_boundaries.py). Each name is
written once, in the import block below; ``__all__`` and the lazy loading are derived from it.

- Settings: ``Settings``, ``tunable_options()`` -> ``Tunable``.
- One image: ``Pipeline(settings)``, ``read_image``, ``write_image`` (BGR(A) numpy arrays).
- One shot: ``render(request, on_progress, cancel, on_phase)`` of a ``RenderRequest`` (its
  ``InputSpec``, ``FrameSpec``, ``PlanChoices`` with people as ``PersonRef``, ``OutputSpec``) ->
  ``RenderSummary`` (``FrameReport``, ``PhaseProgress`` on the way); what it answers for,
  ``PolicyChoices`` (consent records: ``load_consent`` -> ``ConsentRecord``, holders a
  ``PersonRef`` or ``SourcePhotos``, ``parse_consent_holder``); ``replaced_frames``,
  ``select_frames``, frame patterns; ``render_args`` / ``request_from_args`` (its command line).
- The shot plan and its review: ``plan_shot``, ``ShotPlan``, ``write_review``, ``load_report``,
  ``Override`` / ``Overrides``; quick looks: ``preview_frame``, ``frame_picture``, ...
- Host helpers: jobs off a UI thread, ``stop_signals`` / ``Stop`` (SIGTERM and SIGINT: exit
  143 or 130), timebase (rates, timecode, drop frame), output targets and ``sidecar_path``
  (where a signed file keeps its credentials when it cannot hold them: a host that links or
  moves outputs takes it along), model checks, plugins (a host adds its commands as
  ``HostCommand``s).
- Errors: ``FacefuseError`` and its subclasses carry their ``ExitCode``.

``import facefuse`` is cheap: a name loads its module on first use (PEP 562). See
docs/architecture.md ("The public API").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .cache.layout import CacheLayout
    from .cli.streams import reports_only
    from .config import Settings, Tunable, tunable_options
    from .consent import ConsentRecord, load_consent
    from .credentials.formats import sidecar_path
    from .errors import (
        ChecksumError,
        DownloadError,
        ExitCode,
        FacefuseError,
        InputError,
        ModelContractError,
        ModelError,
        ModelMissingError,
        NoFaceError,
        OutputError,
    )
    from .hosting.clips import clip_frames
    from .hosting.jobs import HostError, Job, JobRunner, Message, Report
    from .hosting.models import (
        LOOK_ROLES,
        MODEL_ROLES,
        absent_models,
        fetch_models,
        missing_models,
    )
    from .hosting.outputs import (
        MOVIE_CODECS,
        OUTPUT_FOLDER,
        OUTPUT_KINDS,
        SEQUENCE_FORMATS,
        output_target,
        safe_name,
    )
    from .hosting.plugins import (
        HOST_GROUP,
        CommandLine,
        HostCommand,
        Subcommands,
        host_module,
        installed_hosts,
        prefer_source_tree,
    )
    from .io.files import atomic_write_bytes, check_folder_writable, check_path_length
    from .io.images import read_image, write_image
    from .io.sequences import (
        SEQUENCE_SUFFIXES,
        FramePattern,
        is_frame_pattern,
        parse_chunk,
        parse_frame_range,
        sequence_of_frame,
    )
    from .io.small_files import load_json_file
    from .pipeline import Pipeline
    from .review.report import load_report
    from .review.writing import write_review
    from .shot.contract.commandline import render_args, request_from_args
    from .shot.contract.frames import FrameSelection, select_frames
    from .shot.contract.request import (
        FrameReport,
        FrameSpec,
        InputSpec,
        OutputSpec,
        PersonId,
        PersonInPicture,
        PersonRef,
        PhaseProgress,
        PlanChoices,
        PolicyChoices,
        RenderRequest,
        RenderSummary,
        Replacement,
        SourcePhotos,
        parse_consent_holder,
        parse_person,
    )
    from .shot.looks.previews import (
        face_pictures,
        faces_overlay,
        frame_picture,
        preview_frame,
        reference_face,
        source_preview,
    )
    from .shot.output.output_checks import check_not_input
    from .shot.plan.casting import people_without_source
    from .shot.plan.overrides import Override, Overrides, load_overrides, write_overrides
    from .shot.plan.plan import PlannedFace, PlannedPerson, ShotPlan
    from .shot.run.plan_only import plan_shot
    from .shot.run.render import render
    from .shot.run.replacement import replaced_frames
    from .stopping import Stop, stop_signals, stopped_exit_code
    from .timebase import (
        TimecodeRate,
        frames_to_timecode,
        parse_rate,
        rate_text,
        same_rate,
        says_drop_frame,
        timecode_to_frames,
    )
    from .timing import PhaseRate


def _public_names() -> dict[str, str]:
    """Public name -> its module (relative to this package), read from the import block above."""
    import ast

    with open(__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name: "." * node.level + (node.module or "") for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


_WHERE = _public_names()
__all__ = ["__version__", *_WHERE]  # noqa: PLE0604 - derived from the import block


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562) and keep the name here."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'facefuse' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
