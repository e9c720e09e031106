"""`facefuse review` and `facefuse render --report` on an edited clip assembled from the real
clips in ../shared/testdata (real YuNet, real MobileFaceNet padded to 512-d, the identity
contract swapper):

    shot  frames  content                                   person
    A     1-12    asl_yes 0-11, pillarboxed                 signer
    B     13-27   head-pose male 0-14                       man
    C     28-45   head-pose female 0-17, 2x close-up        woman
    D     46-60   head-pose male 35-49                      man again
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from facefuse.cli.main import main
from facefuse.review.report import SCHEMA, load_report
from tests import media_factory
from tests.golden.test_edited_footage import RATE, _close_up, _pillarboxed
from tests.golden.test_reference_selection import padded_recogniser
from tests.render_media import YUNET_NAME, read_clip_opencv

SHOTS = (("asl_yes", range(12), _pillarboxed), ("head-pose-face-detection-male", range(15), None),
         ("head-pose-face-detection-female", range(18), _close_up),
         ("head-pose-face-detection-male", range(35, 50), None))
CUTS = [13, 28, 46]
FRAMES = 60
MAN = set(range(13, 28)) | set(range(46, 61))


@pytest.fixture(scope="module")
def edited(testdata: Path, render_models: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[Path, list[str]]:
    """(the clip, the model options of every command)."""
    root = tmp_path_factory.mktemp("review")
    frames: list[np.ndarray] = []
    for clip, picked, shape in SHOTS:
        source = read_clip_opencv(testdata / "media" / f"{clip}.mp4")[0]
        frames += [np.ascontiguousarray(shape(source[i]) if shape else source[i])
                   for i in picked]
    assert len(frames) == FRAMES
    path = media_factory.write_h264_clip(root / "edited.mp4", frames, RATE)
    recogniser = padded_recogniser(testdata / "models" / "mobilefacenet_128d.onnx",
                                   root / "mobilefacenet_512.onnx")
    options = ["-s", str(testdata / "media" / "astronaut.png"), "--detector", YUNET_NAME,
               "--recogniser", str(recogniser), "--swapper",
               str(render_models / "identity_swapper.onnx"), "--providers", "cpu",
               "--models-dir", str(render_models), "--offline", "--cache-dir", str(root / "cache")]
    return path, options


@pytest.fixture(scope="module")
def reviewed(edited: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, dict]:
    clip, options = edited
    folder = tmp_path_factory.mktemp("reviewed") / "report"
    assert main(["review", "-i", str(clip), "-o", str(folder), *options]) == 0
    return folder, json.loads((folder / "report.json").read_text(encoding="utf-8"))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v for k, v in attrs if k in ("src", "href") and v]


def test_review_names_the_people_and_swaps_the_man(reviewed):
    folder, report = reviewed
    assert report["schema"] == SCHEMA and report["cuts"] == CUTS
    assert report["frames"] == {"first": 1, "last": FRAMES, "count": FRAMES}
    people = report["people"]
    assert [p["id"] for p in people] == ["p1", "p2", "p3"]
    swapped = [p for p in people if p["swapped"]]
    assert len(swapped) == 1 and swapped[0]["source"] == "default"
    frames = {n for a, b in swapped[0]["frames"] for n in range(a, b + 1)}
    assert frames == MAN
    assert len(report["strip"]) == FRAMES
    assert {r["frame"] for r in report["strip"] if r["swapped"]} <= MAN
    assert all((folder / p["thumbnail"]).is_file() for p in people)
    assert load_report(folder).flagged_frames == tuple(map(tuple, report["flagged_frames"]))
    sampled = [s for s in report["samples"] if s["why"] == "sampled"]
    assert 10 <= len(sampled) <= 13
    assert {f["sample"] for f in report["flags"]} <= {s["frame"] for s in report["samples"]}
    print("flags:", {k: sum(f["last"] - f["first"] + 1 for f in report["flags"]
                            if f["kind"] == k) for k in {f["kind"] for f in report["flags"]}},
          "timings:", report["timings"])


def test_the_page_parses_and_every_link_is_a_file_beside_it(reviewed):
    folder, report = reviewed
    page = _Links()
    page.feed((folder / "index.html").read_text(encoding="utf-8"))
    page.close()
    files = [link for link in page.links if not link.startswith("#")]
    assert files and all((folder / link).is_file() for link in files), files
    anchors = {link[1:] for link in page.links if link.startswith("#")}
    assert all(f'id="{a}"' in (folder / "index.html").read_text() for a in anchors)
    assert "script" not in page.tags
    for sample in report["samples"]:
        assert sample["before"] in files and sample["after"] in files
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging


def test_render_report_writes_what_review_writes_and_keeps_the_fingerprint(
        edited, reviewed, tmp_path):
    clip, options = edited
    _, review = reviewed
    out = tmp_path / "out" / "frame.####.png"
    render = ["render", "-i", str(clip), "-o", str(out), *options]
    assert main(render) == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.parent.iterdir()}
    assert main([*render, "--report", str(tmp_path / "report")]) == 0
    after = {p.name: p.stat().st_mtime_ns for p in out.parent.iterdir()}
    assert after == before  # every frame was done already: --report is no render option
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["people"] == review["people"]
    assert report["flags"] == review["flags"] and report["shot_id"] == review["shot_id"]
    assert report["render"]["skipped"] == FRAMES


def test_a_report_folder_that_is_a_file_is_refused_before_anything_runs(edited, tmp_path,
                                                                        capsys):
    clip, options = edited
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    assert main(["review", "-i", str(clip), "-o", str(taken), *options]) == 2
    out = tmp_path / "out.####.png"
    assert main(["render", "-i", str(clip), "-o", str(out), *options,
                 "--report", str(taken)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all("is a file" in line for line in errors)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert taken.read_text() == "not a folder"


def test_sigterm_stops_a_review_and_leaves_the_folder_as_it_was(edited, tmp_path):
    """A review stopped by SIGTERM (a farm's cancel) exits 143 and writes nothing: no report,
    no staging folder."""
    clip, options = edited
    options = [*options[:-1], str(tmp_path / "cold-cache")]  # analysed again: time to stop it
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "core"), str(root)])}
    review = subprocess.Popen([sys.executable, "-m", "facefuse", "review", "-i", str(clip),
                               "-o", str(tmp_path / "report"), "--progress", "json", *options],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert review.stdout is not None
    for line in review.stdout:
        if '"phase": "analysis"' in line:
            review.send_signal(signal.SIGTERM)
            break
    _, err = review.communicate(timeout=60)
    assert review.returncode == 143, err[-2000:]
    assert "review stopped by SIGTERM" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cold-cache"]


def test_the_contact_sheet_reports_its_progress(edited, tmp_path, capsys):
    """After the analysis, the "pictures" phase counts each still decoded, each still rendered
    and the plots, from 0 to its total, never backwards."""
    clip, options = edited
    folder = tmp_path / "report"
    assert main(["review", "-i", str(clip), "-o", str(folder), "--progress", "json",
                 *options]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith('{"phase"')]
    steps = [(s["done"], s["total"]) for s in lines if s["phase"] == "pictures"]
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    rendered = len(report["samples"])
    total = steps[0][1]
    assert {t for _, t in steps} == {total} and total > 2 * rendered  # decoded >= rendered
    assert steps[0][0] == 0 and steps[-1][0] == total
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)
    assert len({d for d, _ in steps}) >= rendered + 2
    assert [s["phase"] for s in lines].index("pictures") > max(
        i for i, s in enumerate(lines) if s["phase"] == "analysis")
