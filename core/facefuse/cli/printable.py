"""Text the command line prints, made safe to print: user data (a file name, a model name from a
manifest, a person's name) may hold control characters, and a terminal obeys them (an escape
sequence recolours, moves the cursor, clears the screen or retitles the window; a bidi override
reverses what follows). Every line the command line writes goes through `printable`
(streams.ReportStream), so no message has to remember it."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with each control character written as its escape (ESC as \\x1b, U+202E as
    \\u202e): shown, never obeyed. Carriage returns that begin or end `text` are kept (a
    progress bar redraws its line with one), those inside it escaped."""
    start = len(text) - len(text.lstrip("\r"))
    end = max(len(text.rstrip("\r")), start)
    return text[:start] + _CONTROL.sub(_escape, text[start:end]) + text[end:]


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
