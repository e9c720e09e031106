"""facefuse: a local face replacement engine (detect, align, embed, swap, enhance, paste back).

The public API: what a host (Blender, the Qt panel, DaVinci Resolve, a farm) or a script uses.
Hosts import these names and nothing below them (tests/unit/test_import_boundaries.py holds them
to it); every other module is the engine's own and may change shape.

- Settings: ``Settings`` (frozen; change it with ``dataclasses.replace``) and its description
  for hosts, ``tunable_options()`` -> ``Tunable`` per field a user tunes.
- One image: ``Pipeline(settings)``; its methods detect, embed and swap; ``read_image`` and
  ``write_image`` read and write the frames it takes (BGR(A) numpy arrays).
- One shot: a ``RenderRequest`` goes to ``render(request, on_progress, cancel, on_phase)``, which
  reports a ``FrameReport`` per frame and ``PhaseProgress`` per phase step and returns a
  ``RenderSummary``; ``replaced_frames(request)`` -> ``Replacement``, asked before a render:
  the finished frames of its output it would replace, made with other choices, and what
  differs; ``select_frames`` says which frames a request renders; ``FramePattern`` and
  the parsers read sequence patterns, ``--frames A-B`` and ``--chunk N/M``.
- Its command line: ``render_args(request)`` -> the ``facefuse render`` arguments,
  ``request_from_args(args)`` -> the request back.
- Quick looks for hosts: ``preview_frame``, ``frame_picture``, ``faces_overlay``,
  ``face_pictures``, ``reference_face``, ``source_preview``.
- Host helpers: ``Job`` / ``JobRunner`` / ``Message`` (engine work off a UI thread),
  ``HostError``, ``PhaseRate`` (fps and ETA), ``CacheLayout``, ``atomic_write_bytes``,
  ``check_folder_writable`` and ``check_path_length`` (a name too long for its file system);
  ``load_json_file`` (the one reader of a small file a user names: a regular file, a size
  limit, bounded nesting) and ``check_not_input`` (the one rule that an output never replaces
  a file the command reads); ``stop_signals`` / ``Stop`` (SIGTERM and SIGINT stop the work:
  exit 143 or 130, the one rule of every entry point); ``reports_only`` (a reader that goes
  away stops the progress lines, not the work); model checks ``missing_models``,
  ``absent_models``, ``fetch_models`` over ``MODEL_ROLES`` / ``LOOK_ROLES``.
- Hosts as plugins: ``host_module(host, module)`` imports a module of a host registered in the
  entry-point group ``HOST_GROUP`` (``facefuse.hosts``), ``installed_hosts()`` lists them, and
  a host package calls ``prefer_source_tree`` so an editable install runs the checkout's files.
- What a host shows before anything is analysed: ``clip_frames`` (a clip's frame numbers).
- Where a host puts results: ``OUTPUT_KINDS`` (``SEQUENCE_FORMATS``, ``MOVIE_CODECS``),
  ``output_target``, ``safe_name``, ``OUTPUT_FOLDER``.
- Errors: ``FacefuseError`` and its subclasses carry their ``ExitCode``.

- The shot plan (what a render decides, for a host to show and edit): ``plan_shot``,
  ``ShotPlan``, ``PlannedPerson``, ``PlannedFace``, ``people_without_source`` (who a render
  would refuse to swap for want of a source); the review report: ``write_review``,
  ``load_report``; a host's corrections of the plan: ``Override``, ``Overrides``,
  ``load_overrides``, ``write_overrides``.

``import facefuse`` is cheap: every name loads its module on first use (PEP 562), so the command
line and hosts start without ONNX Runtime, OpenCV, PyAV or OpenImageIO; ``render``,
``Pipeline`` and the previews bring them in when used.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .cache.layout import CacheLayout
    from .cli.streams import reports_only
    from .config import Settings, Tunable, tunable_options
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
    from .hosting.plugins import HOST_GROUP, host_module, installed_hosts, prefer_source_tree
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
        PhaseProgress,
        RenderRequest,
        RenderSummary,
        Replacement,
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
    from .stopping import Stop, stop_signals
    from .timing import PhaseRate

# public name -> the module (relative to this package) that defines it
_WHERE = MappingProxyType({
    **dict.fromkeys(("Settings", "Tunable", "tunable_options"), ".config"),
    **dict.fromkeys(("ExitCode", "FacefuseError", "InputError", "OutputError", "NoFaceError",
                     "ModelError", "ModelMissingError", "ModelContractError", "ChecksumError",
                     "DownloadError"), ".errors"),
    "Pipeline": ".pipeline",
    **dict.fromkeys(("read_image", "write_image"), ".io.images"),
    **dict.fromkeys(("RenderRequest", "FrameReport", "PhaseProgress", "RenderSummary",
                     "Replacement"), ".shot.contract.request"),
    "render": ".shot.run.render",
    "replaced_frames": ".shot.run.replacement",
    "plan_shot": ".shot.run.plan_only",
    "people_without_source": ".shot.plan.casting",
    **dict.fromkeys(("ShotPlan", "PlannedPerson", "PlannedFace"), ".shot.plan.plan"),
    "write_review": ".review.writing",
    **dict.fromkeys(("Override", "Overrides", "load_overrides", "write_overrides"),
                    ".shot.plan.overrides"),
    "load_report": ".review.report",
    **dict.fromkeys(("select_frames", "FrameSelection"), ".shot.contract.frames"),
    **dict.fromkeys(("FramePattern", "is_frame_pattern", "parse_frame_range", "parse_chunk",
                     "sequence_of_frame", "SEQUENCE_SUFFIXES"), ".io.sequences"),
    **dict.fromkeys(("preview_frame", "frame_picture", "faces_overlay", "face_pictures",
                     "reference_face", "source_preview"), ".shot.looks.previews"),
    **dict.fromkeys(("Job", "JobRunner", "Message", "Report", "HostError"), ".hosting.jobs"),
    **dict.fromkeys(("missing_models", "absent_models", "fetch_models", "MODEL_ROLES",
                     "LOOK_ROLES"), ".hosting.models"),
    **dict.fromkeys(("render_args", "request_from_args"), ".shot.contract.commandline"),
    **dict.fromkeys(("host_module", "installed_hosts", "prefer_source_tree", "HOST_GROUP"),
                    ".hosting.plugins"),
    **dict.fromkeys(("OUTPUT_FOLDER", "OUTPUT_KINDS", "SEQUENCE_FORMATS", "MOVIE_CODECS",
                     "output_target", "safe_name"), ".hosting.outputs"),
    "PhaseRate": ".timing",
    **dict.fromkeys(("stop_signals", "Stop"), ".stopping"),
    "reports_only": ".cli.streams",
    "clip_frames": ".hosting.clips",
    "CacheLayout": ".cache.layout",
    **dict.fromkeys(("atomic_write_bytes", "check_folder_writable", "check_path_length"),
                    ".io.files"),
    "load_json_file": ".io.small_files",
    "check_not_input": ".shot.output.output_checks",
})

__all__ = [  # noqa: RUF022 - grouped as the docstring lists them
    "__version__",
    # settings
    "Settings", "Tunable", "tunable_options",
    # one image
    "Pipeline", "read_image", "write_image",
    # one shot
    "RenderRequest", "FrameReport", "PhaseProgress", "RenderSummary", "render", "select_frames",
    "replaced_frames", "Replacement",
    "FrameSelection", "FramePattern", "is_frame_pattern", "parse_frame_range", "parse_chunk",
    "sequence_of_frame", "SEQUENCE_SUFFIXES",
    "render_args", "request_from_args",
    # the shot plan and its review
    "plan_shot", "ShotPlan", "PlannedPerson", "PlannedFace", "people_without_source",
    "write_review", "load_report",
    "Override", "Overrides", "load_overrides", "write_overrides",
    # quick looks
    "preview_frame", "frame_picture", "faces_overlay", "face_pictures", "reference_face",
    "source_preview",
    # host helpers
    "Job", "JobRunner", "Message", "Report", "HostError", "PhaseRate", "CacheLayout",
    "stop_signals", "Stop", "reports_only",
    "atomic_write_bytes", "check_folder_writable", "check_path_length", "load_json_file",
    "check_not_input",
    "missing_models", "absent_models", "fetch_models", "MODEL_ROLES", "LOOK_ROLES",
    # hosts as plugins
    "host_module", "installed_hosts", "prefer_source_tree", "HOST_GROUP",
    # what a host shows
    "clip_frames",
    # where a host puts results
    "OUTPUT_FOLDER", "OUTPUT_KINDS", "SEQUENCE_FORMATS", "MOVIE_CODECS", "output_target",
    "safe_name",
    # errors
    "ExitCode", "FacefuseError", "InputError", "OutputError", "NoFaceError", "ModelError",
    "ModelMissingError", "ModelContractError", "ChecksumError", "DownloadError",
]


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
