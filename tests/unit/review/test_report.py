"""report.json: built from a plan, written and read back, checked; the page made from it."""

from __future__ import annotations

import json
import os
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from facefuse.errors import ExitCode, InputError, OutputError
from facefuse.review.flags import Thresholds, find_flags
from facefuse.review.folder import ReportFolder, check_report_folder
from facefuse.review.measures import person_series
from facefuse.review.page import PLOTS_MISSING, page_html, plot_files
from facefuse.review.report import (
    SCHEMA,
    Sample,
    Timings,
    build_report,
    load_report,
    report_json,
)
from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from tests.unit.review.plans import plan_of

FRAMES = tuple(range(101, 131))


@pytest.fixture()
def report() -> dict:
    gap = (110, 111, 112, 113, 114)
    plan = plan_of(FRAMES, [FRAMES, FRAMES[:9]], cuts=(121,), swapped=[True, False],
                   spoil=lambda f, x: None if f in gap else x)
    flags = find_flags(plan)
    samples = [Sample(f, "sampled", f"samples/{f}-before.jpg", f"samples/{f}-after.jpg")
               for f in FRAMES[::10]]
    request = RenderRequest(sources=(Path("me <&> you.jpg"),), input=InputSpec("shot <1>.mp4"),
                            output=OutputSpec("out.mp4"))
    return build_report(plan, request, flags, [person_series(plan, "p1")], samples,
                        {"p1": "people/p1.jpg"}, Timings(2.0, 0.5, False), Thresholds())


def test_the_report_holds_the_plan_and_round_trips(report, tmp_path):
    assert report["schema"] == SCHEMA
    assert report["frames"] == {"first": 101, "last": 130, "count": 30}
    assert [p["id"] for p in report["people"]] == ["p1", "p2"]
    assert report["people"][0]["swapped"] and not report["people"][1]["swapped"]
    assert report["people"][1]["frames"] == [[101, 109]]
    kinds = {f["kind"] for f in report["flags"]}
    assert kinds == {"missed", "swap_dropout"}
    assert report["flagged_frames"] == [[110, 114]]
    assert report["strip"][9] == {"frame": 110, "found": 0, "swapped": [], "filled": [],
                                  "flags": ["missed", "swap_dropout"]}
    path = tmp_path / "report.json"
    path.write_bytes(report_json(report))
    loaded = load_report(path)
    assert loaded.data == json.loads(path.read_text(encoding="utf-8"))
    assert loaded.flagged_frames == ((110, 114),) and loaded.frames == (101, 130)
    assert load_report(tmp_path).shot_id == report["shot_id"]  # the folder names its report


@pytest.mark.parametrize(("text", "words"), [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
    ('{"schema": "facefuse.review/0"}', "has schema 'facefuse.review/0'"),
    (json.dumps({"schema": SCHEMA}), "lacks shot_id"),
])
def test_bad_reports_are_refused_in_one_sentence(tmp_path, text, words):
    path = tmp_path / "report.json"
    path.write_text(text)
    with pytest.raises(InputError, match=words) as caught:
        load_report(path)
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match="does not exist"):
        load_report(tmp_path / "absent.json")


def test_flagged_frames_outside_the_range_are_refused(report, tmp_path):
    report["flagged_frames"] = [[90, 95]]
    path = tmp_path / "report.json"
    path.write_bytes(report_json(report))
    with pytest.raises(InputError, match="inside the analysed range"):
        load_report(path)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.links += [v for k, v in attrs if k in ("src", "href") and v]

    def handle_data(self, data):
        self.text.append(data)


def test_the_page_is_escaped_and_says_when_plots_need_matplotlib(report, monkeypatch):
    for name in ("matplotlib", "matplotlib.backends.backend_agg", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)  # import matplotlib fails (loaded or not)
    assert plot_files(report) == {}
    page = page_html(report, ()).decode("utf-8")
    assert "shot &lt;1&gt;.mp4" in page and "<1>" not in page
    assert "me &lt;&amp;&gt; you.jpg" in page
    assert "pip install -e" in page and ".[report]" in page and PLOTS_MISSING in page
    parsed = _Page()
    parsed.feed(page)
    assert "people/p1.jpg" in parsed.links and "samples/101-before.jpg" in parsed.links
    assert "missed" in "".join(parsed.text)


def test_plots_are_drawn_with_matplotlib(report):
    pytest.importorskip("matplotlib")
    plots = plot_files(report)
    assert list(plots) == ["plots/p1.png"] and plots["plots/p1.png"][:4] == b"\x89PNG"
    assert 'src="plots/p1.png"' in page_html(report, plots).decode("utf-8")


def test_the_report_folder_is_written_whole_or_not_at_all(tmp_path):
    taken = tmp_path / "file"
    taken.write_text("x")
    with pytest.raises(InputError, match="is a file"):
        check_report_folder(taken)
    with pytest.raises(InputError, match="is a file"):
        check_report_folder(taken / "below")
    folder = tmp_path / "out" / "report"
    with pytest.raises(RuntimeError), ReportFolder(folder) as out:
        out.write("a/b.txt", b"1")
        raise RuntimeError("stopped")
    assert not folder.exists() and list((tmp_path / "out").iterdir()) == []
    with ReportFolder(folder) as out:
        out.write("report.json", b"{}")
        out.write("samples/x.jpg", b"2")
        out.commit()
    assert (folder / "samples" / "x.jpg").read_bytes() == b"2"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report"]


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_no_report_file_may_be_a_file_the_command_reads(tmp_path, kind):
    """report.json over the source photo (refused before anything runs), and a picture whose
    name is a link to it (refused when the folder is moved into place: nothing moved)."""
    photo = tmp_path / "me.jpg"
    photo.write_bytes(b"my photo")
    folder = tmp_path / "report"
    folder.mkdir()
    link = folder / "report.json"
    link.symlink_to(photo) if kind == "symlink" else os.link(photo, link)
    with pytest.raises(InputError, match="which this command reads"):
        check_report_folder(folder, (photo,))
    link.unlink()
    (folder / "samples").mkdir()
    picture = folder / "samples" / "1-before.jpg"
    picture.symlink_to(photo) if kind == "symlink" else os.link(photo, picture)
    with pytest.raises(InputError, match="which this command reads"), \
            ReportFolder(folder, (photo,)) as out:
        out.write("samples/1-before.jpg", b"picture")
        out.write("report.json", b"{}")
        out.commit()
    assert photo.read_bytes() == b"my photo" and not (folder / "report.json").exists()


def test_a_report_folder_the_storage_refuses_is_code_6(tmp_path, monkeypatch):
    from tests.resolve_facts import read_only_folder

    read_only_folder(monkeypatch, tmp_path / "ro")
    (tmp_path / "ro").mkdir()
    with pytest.raises(OutputError, match="read-only") as info:
        check_report_folder(tmp_path / "ro" / "report")
    assert info.value.exit_code == ExitCode.OUTPUT


def test_a_shot_without_faces_still_has_a_report_and_a_page():
    plan = plan_of(FRAMES, [])
    report = build_report(plan, RenderRequest(sources=(), input=InputSpec("empty.mp4"),
                                              output=OutputSpec("o.mp4")),
                          find_flags(plan), [], [], {}, Timings(1.0, 0.1, True), Thresholds())
    assert report["people"] == [] and report["flagged_frames"] == []
    assert all(row["found"] == 0 for row in report["strip"])
    page = page_html(report, ()).decode("utf-8")
    assert "No flags" in page and "(from the cache)" in page
