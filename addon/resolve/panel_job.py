"""The Qt panel for a Resolve launcher's job (`facefuse resolve open --job J --result R`): the
clip under the playhead from the job file, and the result file that tells the launcher what to
place once the panel closes. The panel is the `panel` host (found through the `facefuse.hosts`
entry point, so this module loads Qt only when it runs); JobHost is the host it is given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from facefuse import ExitCode, FacefuseError, RenderRequest, RenderSummary, Settings, host_module

from .job_file import ClipFacts, read_job
from .swaps import (
    Placement,
    default_output_folder,
    item_swap,
    outcome,
    prepare,
    preview_frame_number,
    write_result,
)

# Resolve starts the launcher with its own Qt plug-in folders in the environment; ours differ
RESOLVE_QT_VARIABLES = ("QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH", "QML2_IMPORT_PATH")
PLACE_HINT = ": close this window to place it in Resolve"


def _panel(module: str) -> Any:
    return host_module("panel", module)


def clip_from_facts(facts: ClipFacts) -> Any:
    """The panel's Clip of the Resolve item: its used range, the frame under the playhead,
    results beside its media."""
    label = f"{facts.name} (V{facts.track}, {facts.timeline})"
    first, last = facts.span.engine_frames
    note = (f"{facts.edition.label}: {label}, frames {first}-{last} of {facts.media.name} at "
            f"timeline frame {facts.span.record_start}{facts.caveat_note}")
    return _panel("host").Clip(input=facts.input, label=label,
                               folder=default_output_folder(facts), frames=(first, last),
                               preview_frame=preview_frame_number(facts),
                               start_number=facts.span.first_number, note=note, item=facts)


class JobHost:
    """The Resolve launcher's job: the clip from its job file; the result file says what the
    launcher places once the panel closes (the last complete render, or nothing and why)."""

    def __init__(self, job: Path, result: Path) -> None:
        self.result = Path(result)
        self.placement: Placement | None = None
        self.message = "The panel was closed before a render finished: nothing placed"
        try:
            self.clip: Any = clip_from_facts(read_job(job))
            self.problem = ""
        except FacefuseError as exc:
            self.clip, self.problem = None, str(exc)
            self.message = f"{exc}: nothing placed"
        write_result(self.result, None, self.message)

    def open(self, path: Path) -> Any:
        """A plain file opened instead (previs): nothing of it is placed in Resolve."""
        self.clip = _panel("host").clip_from_file(path)
        return self.clip

    def build_render(self, clip: Any, sources: tuple[Path, ...], settings: Settings,
                     output: str, folder: Path) -> tuple[RenderRequest, Any]:
        """The Resolve item's plan (request and placement), or a plain clip's request."""
        if isinstance(clip.item, ClipFacts):
            swap = item_swap(clip.item, sources, settings, output, folder)
            prepare(swap)
            return swap.request, swap
        return _panel("host").file_request(clip, sources, settings, output, folder), None

    def rendered(self, swap: Any, summary: RenderSummary) -> str:
        """A render ended: remember what to place (None: keep the previous complete one); the
        sentence the panel shows."""
        if swap is None:
            placement, message = None, _panel("host").render_sentence(summary)
        else:
            placement, message = outcome(swap, summary)
        if placement is not None:
            self.placement, self.message = placement, message
        elif self.placement is None:
            self.message = message
        write_result(self.result, self.placement, self.message)
        return message + PLACE_HINT if placement is not None else message

    def finish(self, message: str) -> None:
        """The panel closes; `message` is why when a render was still running."""
        if message and self.placement is None:
            self.message = message
        write_result(self.result, self.placement, self.message)


def open_job(job: Path, result: Path, base: Settings | None = None) -> int:
    """The panel for the job until it is closed; 0 when a render is to be placed, else 2. The
    result file is written whatever happens (also when the panel cannot start)."""
    try:
        app = _panel("app")
    except FacefuseError as exc:
        write_result(result, None, str(exc))
        raise
    for name in RESOLVE_QT_VARIABLES:
        os.environ.pop(name, None)
    host = JobHost(job, result)
    app.run_host(host, base, raise_window=True)
    return ExitCode.OK if host.placement is not None else ExitCode.USAGE
