"""Where a host puts a clip's swapped result: the output kinds a host offers, a safe file stem
and the render's output path and codec for each kind (the Qt panel and the Resolve host).

A result is an image sequence `<stem>.####.<png|exr|tif>` numbered as the engine numbers the
source (so a re-render resumes and a `facefuse render` of the same range writes the same
files) or a movie `<stem>_facefuse.mov` (ProRes 4444 or DNxHR 444), by default in a folder
OUTPUT_FOLDER beside the clip's media.
"""

from __future__ import annotations

from pathlib import Path

OUTPUT_FOLDER = "facefuse"
SEQUENCE_FORMATS = ("png", "exr", "tif")
MOVIE_CODECS = ("prores_4444", "dnxhr_444")
OUTPUT_KINDS = SEQUENCE_FORMATS + MOVIE_CODECS


def output_target(stem: str, output: str, folder: Path) -> tuple[str, str]:
    """(the render's output path, its codec) for a result named `stem` in `folder`: an image
    sequence `stem.####.<output>` or the movie `stem_facefuse.mov`; output: one of
    OUTPUT_KINDS."""
    if output in SEQUENCE_FORMATS:
        return str(folder / f"{stem}.####.{output}"), "h264"
    return str(folder / f"{stem}_facefuse.mov"), output


def safe_name(name: str) -> str:
    """A file stem for results of the clip `name` (its stem, odd characters replaced)."""
    kept = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).stem)
    return kept.strip("._") or "clip"
