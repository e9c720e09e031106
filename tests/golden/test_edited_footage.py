"""The right person on edited footage: a four-shot clip assembled from the real clips in
../shared/testdata, rendered with the real YuNet detector and the real MobileFaceNet recogniser.

    shot  frames (1-based)  content                                          person
    A     1-30              asl_yes 0-29, shrunk into 480x270 (pillarboxed)  signer, face ~43 px
    B     31-65             head-pose male 0-34                              man, face ~82 px
    C     66-89             head-pose female 0-23, a 2x close-up             woman, face ~150 px,
                                                                             turning to profile
    D     90-119            head-pose male 35-64                             man again

The man has the most screen presence (65 frames, frontal: about 5100 px-frames against the
woman's 1900 and the signer's 1200), although the close-up has the largest face and the most
face area of any single shot (the rule the render used before: mean area x frames per track).
The render must find the cuts at exactly 31, 66 and 90, keep every track inside one shot, group
the man's two shots into one person and swap him, and only him, in both.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefuse.shot.plan.analysis import ShotAnalysis, unpack_detections
from facefuse.shot.plan.casting import select_people
from facefuse.shot.plan.cuts import find_cuts, signature_change, unpack_signatures
from facefuse.shot.plan.people import group_people
from facefuse.shot.plan.tracking import build_shot_tracks, build_tracks
from tests import media_factory
from tests.golden.test_reference_selection import padded_recogniser
from tests.render_media import read_clip_opencv, render_request, run_render

SIZE = (480, 270)
RATE = Fraction(25)
SHOTS = {  # name: (first frame number, source clip, source frames, person)
    "A": (1, "asl_yes", range(30), "signer"),
    "B": (31, "head-pose-face-detection-male", range(35), "man"),
    "C": (66, "head-pose-face-detection-female", range(24), "woman"),
    "D": (90, "head-pose-face-detection-male", range(35, 65), "man"),
}
CUTS = (31, 66, 90)
LAST_FRAME = 119


def _pillarboxed(frame: np.ndarray) -> np.ndarray:
    """A 640x480 picture shrunk to 360x270 in the middle of a black 480x270 one."""
    canvas = np.zeros((SIZE[1], SIZE[0], 3), np.uint8)
    canvas[:, 60:420] = cv2.resize(frame, (360, 270), interpolation=cv2.INTER_AREA)
    return canvas


def _close_up(frame: np.ndarray) -> np.ndarray:
    """The 240x135 area round the woman's face, enlarged 2x."""
    return cv2.resize(frame[30:165, 100:340], SIZE, interpolation=cv2.INTER_LINEAR)


def _shot_frames(testdata: Path) -> list[np.ndarray]:
    frames = []
    for name, (_, clip, picked, _) in SHOTS.items():
        source = read_clip_opencv(testdata / "media" / f"{clip}.mp4")[0]
        shape = {"A": _pillarboxed, "C": _close_up}.get(name, lambda f: f)
        frames += [np.ascontiguousarray(shape(source[i])) for i in picked]
    assert len(frames) == LAST_FRAME
    return frames


def _person_of(frame: int) -> str:
    return next(SHOTS[name][3] for name in reversed(SHOTS) if frame >= SHOTS[name][0])


@pytest.fixture(scope="module")
def edited_render(testdata: Path, render_models: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, ShotAnalysis]:
    """Render the clip with --selector one; (frame -> report, the cached analysis)."""
    root = tmp_path_factory.mktemp("edited")
    clip = media_factory.write_h264_clip(root / "edited.mp4", _shot_frames(testdata), RATE)
    recogniser = padded_recogniser(testdata / "models" / "mobilefacenet_128d.onnx",
                                   root / "mobilefacenet_512.onnx")
    cache = root / "cache"
    request = render_request(render_models, cache, testdata / "media" / "astronaut.png", clip,
                             root / "out.mp4", settings={"recogniser": str(recogniser),
                                                         "selector": "one"})
    summary, reports = run_render(request)
    assert summary.frames == LAST_FRAME and not summary.failed
    (entry,) = (cache / "analysis").glob("*.npz")
    with np.load(entry) as data:
        arrays = {name: data[name] for name in data.files}
    analysis = ShotAnalysis(unpack_detections(arrays), unpack_signatures(arrays))
    return {report.frame: report for report in reports}, analysis


def test_cuts_are_found_exactly_and_stored_with_the_analysis(edited_render):
    _, analysis = edited_render
    assert sorted(analysis.signatures) == list(range(1, LAST_FRAME + 1))
    assert find_cuts(analysis.signatures) == CUTS
    changes = [signature_change(analysis.signatures[n - 1], analysis.signatures[n])
               for n in range(2, LAST_FRAME + 1)]
    within = [c for n, c in zip(range(2, LAST_FRAME + 1), changes) if n not in CUTS]
    print("largest change within a shot (histogram, pixels):",
          [round(max(c[i] for c in within), 3) for i in (0, 1)],
          "smallest at a cut:", [round(min(changes[n - 2][i] for n in CUTS), 3) for i in (0, 1)])


def test_every_frame_has_its_face_and_no_track_crosses_a_cut(edited_render):
    _, analysis = edited_render
    assert all(len(analysis.faces[n]) == 1 for n in range(1, LAST_FRAME + 1))
    tracks = build_shot_tracks(analysis.faces, analysis.cuts)
    starts = (1, *CUTS, LAST_FRAME + 1)
    for track in tracks:
        shot = next(i for i in range(4) if starts[i] <= track.frames[0] < starts[i + 1])
        assert track.frames[-1] < starts[shot + 1], f"track {track.track_id} crosses a cut"
    covered = sorted(f for t in tracks for f in t.frames)
    assert covered == list(range(1, LAST_FRAME + 1))


def test_people_are_grouped_across_shots(edited_render):
    _, analysis = edited_render
    people = group_people(build_shot_tracks(analysis.faces, analysis.cuts))
    who = [{_person_of(f) for f in person.frames} for person in people]
    assert all(len(names) == 1 for names in who), who  # nobody is two people
    man = [p for p, names in zip(people, who) if names == {"man"}]
    assert len(man) == 1, "the man's two shots are one person"
    assert set(man[0].frames) == {
        f for f in range(1, LAST_FRAME + 1) if _person_of(f) == "man"}
    print({", ".join(sorted(names)): round(p.presence) for p, names in zip(people, who)})


def test_one_swaps_the_person_with_the_most_presence_in_every_shot_they_are_in(edited_render):
    reports, analysis = edited_render
    swapped = sorted(n for n, report in reports.items() if report.status == "swapped")
    assert swapped == [n for n in range(1, LAST_FRAME + 1) if _person_of(n) == "man"]
    assert all(reports[n].faces == 1 for n in swapped)
    people = group_people(build_shot_tracks(analysis.faces, analysis.cuts))
    (one,) = select_people(people, "one")
    assert {_person_of(f) for f in one.frames} == {"man"}
    # The clip tells the rules apart: the rule the render used before (the track with the most
    # face area, mean area x frames, tracks built over the whole range) picks the close-up.
    before = max(build_tracks(analysis.faces), key=lambda t: t.mean_area_px * t.length)
    assert {_person_of(f) for f in before.frames} == {"woman"}
