"""Review reports for host tests: the smallest report.json facefuse.load_report accepts."""

from __future__ import annotations

from typing import Any


def review_report(flags: list[tuple[str, int, int, str, str]], first: int = 1,
                  last: int = 200) -> dict[str, Any]:
    """A minimal report.json of the review schema (what facefuse.load_report accepts) holding
    `flags`: (kind, first, last, person, reason) each."""
    return {"schema": "facefuse.review/1", "shot_id": "0" * 16, "input": "clip.mov",
            "frames": {"first": first, "last": last, "count": last - first + 1}, "cuts": [],
            "people": [], "strip": [], "samples": [], "series": [], "timings": {},
            "flags": [{"kind": kind, "first": a, "last": b, "person": person, "reason": reason}
                      for kind, a, b, person, reason in flags],
            "flagged_frames": [[a, b] for _, a, b, _, _ in flags]}
