"""What the add-on says of a job's progress and of a render's frames, in words."""

from __future__ import annotations

from typing import Any

from facefuse import PhaseProgress


def phase_line(progress: PhaseProgress) -> str:
    """What the status shows of an unfinished analysis or output finishing; "" once done."""
    if progress.done >= progress.total:
        return ""
    if progress.phase == "analysis":
        return f"analysing frame {progress.done + 1} of {progress.total}"
    if progress.phase == "pictures":
        return f"contact sheet: step {progress.done + 1} of {progress.total}"
    return "finishing the output"


def frame_outcome(report: Any) -> str:
    """What became of one frame, in words ("swapped", "left as corrected", ...)."""
    if report.status == "unselected":
        return "left as corrected" if report.corrected else "face not chosen"
    return {"no_face": "without a face", "skipped": "already done"}.get(report.status,
                                                                        report.status)


def frame_counts(summary: Any) -> str:
    """A render's frames in words: swapped, left as they are by the user's corrections or by
    the Target Face rule (faces found, none swapped), without a face, already done."""
    chosen = summary.unselected - summary.corrected
    parts = [f"{summary.swapped} swapped"]
    if summary.corrected:
        parts.append(f"{summary.corrected} left as they are by your corrections")
    if chosen:
        parts.append(f"{chosen} with faces Target Face did not choose")
    return ", ".join([*parts, f"{summary.no_face} without a face",
                      f"{summary.skipped} already done"])
