"""What `facefuse resolve swap` and `facefuse resolve render` do once the command line has
parsed them: plan the clip's swap, render it with the command line's own render, and say what
is placed. The command line passes its render in (progress, SIGTERM), so nothing here prints or
handles signals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from facefuse import ExitCode, RenderRequest, RenderSummary, Settings, stopped_exit_code

from .job_file import ClipFacts
from .swaps import Placement, item_swap, outcome, prepare

# the command line's render: the summary, and whether SIGTERM stopped it
Render = Callable[[RenderRequest], tuple[RenderSummary, bool]]


def render_clip(facts: ClipFacts, sources: tuple[Path, ...], settings: Settings, output: str,
                folder: Path | None, overwrite: bool, render: Render
                ) -> tuple[Placement | None, str, int]:
    """Render the item's used range: the placement (None: nothing to place), the sentence
    saying so and the exit code (143 stopped by SIGTERM, 130 by SIGINT, 5 frames failed, 2
    nothing swapped)."""
    swap = item_swap(facts, sources, settings, output, folder, overwrite)
    prepare(swap)
    summary, terminated = render(swap.request)
    placement, message = outcome(swap, summary)
    if placement is not None:
        return placement, message, ExitCode.OK
    if summary.cancelled:  # SIGTERM (a host's cancel) or SIGINT (Ctrl-C)
        return None, message, stopped_exit_code(terminated)
    return None, message, ExitCode.FRAMES_FAILED if summary.failed else ExitCode.USAGE
