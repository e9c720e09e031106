"""Checking the frames of an image sequence as one result.

Each frame carries its own manifest (embedded, or its own sidecar): the chunks of a farm render
sign their frames in separate processes, so a sequence has no manifest of its own. Its result
counts the frames' states, takes the worst (checking.STATES), and names the first frames that
are not fine; frames signed by several signers or made by several renders (fingerprints) are
said so, without changing the state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .checking import STATES, CredentialCheck, check_with, describe, open_context, trust_words

NOT_FINE_LISTED = 5  # frames named in a summary; the JSON lists up to 10 times as many


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    """The checks of a sequence's frames, in frame order; `label`: the pattern as given."""

    label: str
    frames: tuple[CredentialCheck, ...]

    @property
    def counts(self) -> dict[str, int]:
        """How many frames are in each state, best state first (states no frame is in left
        out)."""
        counted = Counter(frame.state for frame in self.frames)
        return {state: counted[state] for state in STATES if counted[state]}

    @property
    def state(self) -> str:
        """The worst state of any frame."""
        return max((frame.state for frame in self.frames), key=STATES.index)

    @property
    def fine(self) -> bool:
        """Whether every frame's credentials verify."""
        return all(frame.fine for frame in self.frames)

    def not_fine(self, limit: int = NOT_FINE_LISTED) -> tuple[CredentialCheck, ...]:
        """The first `limit` frames whose credentials are missing or do not verify."""
        return tuple(frame for frame in self.frames if not frame.fine)[:limit]

    def summary(self) -> str:
        """One line: 'plate.####.exr: 100 frames valid, signed by ...; signer not in a trust
        list (--trust CA.pem)', or the states counted and the first frames not fine."""
        counts = self.counts
        if len(counts) == 1:
            frames = "1 frame" if len(self.frames) == 1 else f"{len(self.frames)} frames"
            head = f"{self.label}: {frames} {self.state}"
        else:
            head = f"{self.label}: {self.state}: " + ", ".join(
                f"{number} {state}" for state, number in counts.items())
        first = next((frame for frame in self.frames if frame.fine), None)
        if first is not None:
            head += f", {describe(first)}{self._variety()}"
        if self.fine and first is not None:
            return f"{head}; {trust_words(first)}"
        named = ", ".join(f"{frame.path.name} {frame.state} ({frame.reasons()[0]})"
                          for frame in self.not_fine())
        return f"{head}; first not fine: {named}"

    def _variety(self) -> str:
        signers = {frame.signer for frame in self.frames if frame.fine}
        renders = {frame.credential.fingerprint for frame in self.frames
                   if frame.fine and frame.credential is not None}
        words = [f"{len(signers)} signers"] if len(signers) > 1 else []
        words += [f"frames of {len(renders)} renders"] if len(renders) > 1 else []
        return "".join(f", {word}" for word in words)

    def to_json(self) -> dict[str, Any]:
        """The sequence's result as JSON-ready data: the counts, the worst state, the signers
        and render fingerprints seen, the first frame that verifies and the first frames that
        do not (each as CredentialCheck.to_json)."""
        first = next((frame for frame in self.frames if frame.fine), None)
        return {
            "pattern": self.label, "frames": len(self.frames), "state": self.state,
            "counts": self.counts,
            "signers": sorted({frame.signer for frame in self.frames if frame.fine}),
            "fingerprints": sorted({frame.credential.fingerprint for frame in self.frames
                                    if frame.fine and frame.credential is not None}),
            "first_fine": first.to_json() if first is not None else None,
            "not_fine": [frame.to_json() for frame in self.not_fine(10 * NOT_FINE_LISTED)],
        }


def check_sequence(paths: Sequence[Path], trust: Path | None = None,
                   label: str | None = None) -> SequenceCheck:
    """Check each frame in `paths` (see checking.check_file) against the trust list `trust`,
    reading it once; `label` names the sequence in the summary (default: the first frame's
    name). InputError for no frames, or a frame or trust list that cannot be read."""
    if not paths:
        raise InputError(f"no frames to check{f' in {label}' if label else ''}")
    context = open_context(trust)
    try:
        frames = tuple(check_with(Path(path), context, trust) for path in paths)
    finally:
        context.close()
    return SequenceCheck(label or Path(paths[0]).name, frames)
