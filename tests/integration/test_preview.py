"""Preview is the render: `facefuse preview`, shot.looks.stills and the hosts' preview_frame give
the pixels a render of the same request writes, on a clip with cuts and three people; people are
named stably and --assign / --skip / ref:PICTURE give them their own sources.

The clip (480x270, 25 fps, H.264), assembled from the real clips in ../shared/testdata and
analysed with the real YuNet detector and the real MobileFaceNet recogniser (padded to 512-d):

    shot  frames  content                                               people
    A     1-20    the man (left half) and the woman (right half, a      man, woman
                  1.5x close-up: the larger face) side by side: head-pose
                  male 0-19 and female 0-19
    B     21-40   the signer, asl_yes 0-19 cut round her face           signer
    C     41-60   the man again, head-pose male 35-54                   man

The man has the most presence (40 frames), so selector one swaps him, although the woman's is
the larger face in shot A (a per-frame rule, largest face, picks her); many swaps everyone;
reference (a picture of the woman) swaps her. The colour contract swapper paints each face with
a colour made from its source's identity, so two sources give visibly different faces.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import OpenImageIO as oiio
import pytest

from facefuse.cli.main import main
from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.pipeline import Pipeline
from facefuse.review.writing import write_review
from facefuse.selection import largest_face
from facefuse.shot.contract.inputs import open_input
from facefuse.shot.contract.request import (
    InputSpec,
    OutputSpec,
    PersonId,
    PersonInPicture,
    RenderRequest,
)
from facefuse.shot.looks import previews
from facefuse.shot.looks.stills import StillsCancelled, render_stills
from facefuse.shot.run.plan_only import plan_shot
from facefuse.shot.run.render import render
from tests import media_factory
from tests.golden.test_reference_selection import padded_recogniser
from tests.render_media import (
    YUNET_NAME,
    face_frame,
    face_photo,
    read_clip_opencv,
    read_plate_oiio,
    render_request,
    srgb_to_linear,
    write_plate_oiio,
)
from tests.resolve_facts import read_only_folder

SIZE = (480, 270)
RATE = Fraction(25)
LAST = 60
CUTS = (21, 41)
TENTH = tuple(range(1, LAST + 1, 10))  # 1, 11, ..., 51: both cuts among them
MAN, WOMAN, SIGNER = "man", "woman", "signer"
HALF = SIZE[0] // 2
SPLIT = HALF - 20  # between the two people of shot A: the woman's pasted face reaches x 238


def _who(frame: int) -> tuple[str, ...]:
    """The people of a frame, left to right."""
    if frame < CUTS[0]:
        return MAN, WOMAN
    return (SIGNER,) if frame < CUTS[1] else (MAN,)


def _frames(testdata: Path) -> list[np.ndarray]:
    media = testdata / "media"
    male = read_clip_opencv(media / "head-pose-face-detection-male.mp4")[0]
    female = read_clip_opencv(media / "head-pose-face-detection-female.mp4")[0]
    signer = read_clip_opencv(media / "asl_yes.mp4")[0]
    both = [np.hstack([male[i][:, 120:360], _closer(female[i])]) for i in range(20)]
    alone = [signer[i][20:290, 120:600] for i in range(20)]
    again = [male[i] for i in range(35, 55)]
    frames = [np.ascontiguousarray(f) for f in both + alone + again]
    assert len(frames) == LAST and all(f.shape == (SIZE[1], SIZE[0], 3) for f in frames)
    return frames


def _closer(frame: np.ndarray) -> np.ndarray:
    """The 160x180 area round the woman's face, enlarged 1.5x: her face is the larger."""
    return cv2.resize(frame[15:195, 145:305], (HALF, SIZE[1]), interpolation=cv2.INTER_LINEAR)


class Shot:
    """The clip, its models and pictures, and renders of it (each made once per module)."""

    def __init__(self, root: Path, testdata: Path, render_models: Path) -> None:
        self.root = root
        self.models = render_models
        self.clip = media_factory.write_h264_clip(root / "people.mp4", _frames(testdata), RATE)
        self.recogniser = padded_recogniser(testdata / "models" / "mobilefacenet_128d.onnx",
                                            root / "mobilefacenet_512.onnx")
        self.source = testdata / "media" / "obama.jpg"
        self.other = testdata / "media" / "biden.jpg"
        female = read_clip_opencv(testdata / "media" / "head-pose-face-detection-female.mp4")
        self.woman = root / "woman.png"
        cv2.imwrite(str(self.woman), female[0][10][20:220, 120:360])
        self.cache = root / "cache"  # Settings.cache_dir: analysis, embeddings, previews
        self._renders: dict[str, Path] = {}
        self.seconds: dict[str, float] = {}

    def request(self, output: str | Path = "", source: Path | None = None,
                **changes: object) -> RenderRequest:
        """selector one unless `changes` says otherwise (settings: selector, reference_images;
        request fields: assign, skip, ...)."""
        settings = {k: changes.pop(k) for k in ("selector", "reference_images") if k in changes}
        return render_request(self.models, self.cache, source or self.source, self.clip,
                              output or self.root / "unused.####.png", swapper="colour",
                              settings={"recogniser": str(self.recogniser), **settings},
                              **changes)

    def rendered(self, name: str, request: RenderRequest) -> Path:
        """The folder of a whole render of `request` to a PNG sequence (made once per name)."""
        if name not in self._renders:
            folder = self.root / f"render-{name}"
            started = time.perf_counter()
            summary = render(replace(request,
                                     output=replace(request.output,
                                                    path=str(folder / "f.####.png"))))
            self.seconds[name] = time.perf_counter() - started
            assert summary.frames == LAST and not summary.failed
            self._renders[name] = folder
        return self._renders[name]

    def frame(self, name: str, number: int) -> np.ndarray:
        return _read(self._renders[name] / f"f.{number:04d}.png")

    def selector(self, selector: str) -> RenderRequest:
        if selector == "reference":
            return self.request(selector="reference", reference_images=(self.woman,))
        return self.request(selector=selector)


def _read(path: Path) -> np.ndarray:
    picture = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert picture is not None, path
    return picture


@pytest.fixture(scope="module")
def shot(testdata: Path, render_models: Path,
         tmp_path_factory: pytest.TempPathFactory) -> Shot:
    return Shot(tmp_path_factory.mktemp("preview"), testdata, render_models)


@pytest.fixture(scope="module")
def decoded(shot: Shot) -> dict[int, np.ndarray]:
    """The clip's frames as the engine decodes them (what a render leaves unswapped)."""
    source = open_input(str(shot.clip))
    try:
        return {n: f.to_ndarray()[..., :3].copy() for n, f in source.read(range(1, LAST + 1))}
    finally:
        source.close()


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 0


def _parts(frame: int, picture: np.ndarray) -> dict[str, np.ndarray]:
    """Each person's part of a frame's picture: left or right of SPLIT in shot A, all of it in
    the others."""
    people = _who(frame)
    if len(people) == 1:
        return {people[0]: picture}
    return {people[0]: picture[:, :SPLIT], people[1]: picture[:, SPLIT:]}


# -- preview == render ----------------------------------------------------------------------------

@pytest.mark.parametrize("selector", ["one", "many", "reference"])
def test_preview_is_the_render_pixel_for_pixel_on_every_tenth_frame(
        shot: Shot, decoded: dict[int, np.ndarray], selector: str, tmp_path: Path) -> None:
    request = shot.selector(selector)
    shot.rendered(selector, request)
    started = time.perf_counter()
    stills = render_stills(request, TENTH, tmp_path / "stills")
    print(f"\n{selector}: render {shot.seconds[selector]:.2f} s, {len(TENTH)} previews "
          f"{time.perf_counter() - started:.2f} s")
    swapped = {MAN: 0, WOMAN: 0, SIGNER: 0}
    for number, path in stills.items():
        still, rendered = _read(path), shot.frame(selector, number)
        assert still.shape == rendered.shape and still.dtype == rendered.dtype == np.uint8
        assert np.array_equal(still, rendered), f"frame {number} differs from the render"
        for person, part in _parts(number, _changed(still, decoded[number])).items():
            swapped[person] += int(part.sum() > 200)
    expected = {"one": {MAN: 4, WOMAN: 0, SIGNER: 0}, "many": {MAN: 4, WOMAN: 2, SIGNER: 2},
                "reference": {MAN: 0, WOMAN: 2, SIGNER: 0}}[selector]
    assert swapped == expected  # the render's decisions, so the test tells selectors apart


def test_the_command_line_preview_writes_the_render_s_frame(shot: Shot, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture
                                                           ) -> None:
    shot.rendered("one", shot.selector("one"))
    still = tmp_path / "out" / "still.png"
    assert main(_preview_args(shot, still, "--frame", "11")) == 0
    assert capsys.readouterr().out.strip() == str(still)
    assert np.array_equal(_read(still), shot.frame("one", 11))
    assert sorted(p.name for p in still.parent.iterdir()) == ["still.png"]
    assert main(_preview_args(shot, still, "--frame", "12")) == 2  # exists: not replaced
    assert "already exists; add --overwrite" in capsys.readouterr().err
    assert main(_preview_args(shot, still, "--frame", "51", "--overwrite", "--json")) == 0
    assert '"still"' in capsys.readouterr().out
    assert np.array_equal(_read(still), shot.frame("one", 51))


def test_the_hosts_preview_frame_shows_the_render_s_pixels(
        shot: Shot, decoded: dict[int, np.ndarray], tmp_path: Path) -> None:
    """The hosts' preview swaps the render's main person (the man), not the frame's largest
    face (the woman's)."""
    request = shot.selector("one")
    shot.rendered("one", request)
    with Pipeline(request.settings) as pipeline:
        largest = largest_face(pipeline.detect(decoded[11]))
        assert largest is not None and float(largest.bbox_xyxy[0]) > HALF  # the woman
        path = previews.preview_frame(request, 11, pipeline, tmp_path / "pv")
    preview = _read(path)
    assert np.array_equal(preview, shot.frame("one", 11))
    changed = _parts(11, _changed(preview, decoded[11]))
    assert changed[MAN].sum() > 200 and changed[WOMAN].sum() == 0
    many = shot.selector("many")
    shot.rendered("many", many)
    assert np.array_equal(_read(previews.preview_frame(many, 41, out_dir=tmp_path / "pv")),
                          shot.frame("many", 41))
    assert sorted(p.name for p in (tmp_path / "pv").iterdir()) == [path.name]


# -- people and sources ---------------------------------------------------------------------------

def _people(request: RenderRequest) -> dict[str, tuple[int, ...]]:
    return {p.person_id: p.frames for p in plan_shot(request).people}


def _named(shot: Shot) -> dict[str, str]:
    """person id -> who it is (the man is in both shots A and C; the woman on the right)."""
    plan = plan_shot(shot.request())
    names = {}
    for person in plan.people:
        frames = set(person.frames)
        if frames & set(range(CUTS[1], LAST + 1)):
            names[person.person_id] = MAN
        elif frames & set(range(CUTS[0], CUTS[1])):
            names[person.person_id] = SIGNER
        else:
            names[person.person_id] = WOMAN
    assert sorted(names.values()) == [MAN, SIGNER, WOMAN]
    return names


def _id_of(shot: Shot, who: str) -> str:
    return next(pid for pid, name in _named(shot).items() if name == who)


def test_an_assigned_person_gets_their_own_source(shot: Shot, decoded: dict[int, np.ndarray],
                                                   tmp_path: Path) -> None:
    woman, man = _id_of(shot, WOMAN), _id_of(shot, MAN)
    signer = _id_of(shot, SIGNER)
    default = shot.rendered("many", shot.selector("many"))
    frames = (1, 11, 21)
    assigned = render_stills(shot.request(selector="many", assign=((PersonId(woman), shot.other),)),
                             frames, tmp_path / "assigned")
    # the woman alone swapped, with the other picture as the render's -s source
    alone = render_stills(shot.request(source=shot.other, selector="many",
                                       skip=(PersonId(man), PersonId(signer))),
                          frames, tmp_path / "alone")
    assert default.is_dir()
    for number in (1, 11):
        got, mine = _parts(number, _read(assigned[number])), _parts(number, _read(alone[number]))
        theirs, before = _parts(number, shot.frame("many", number)), _parts(number,
                                                                            decoded[number])
        assert np.array_equal(got[WOMAN], mine[WOMAN])  # the woman: the other source
        assert np.array_equal(got[MAN], theirs[MAN])  # the man: the default one
        assert _changed(got[WOMAN], theirs[WOMAN]).sum() > 200  # really another face
        assert _changed(mine[WOMAN], before[WOMAN]).sum() > 200
    assert np.array_equal(_read(assigned[21]), shot.frame("many", 21))  # the signer: default


def test_a_skipped_person_keeps_the_input_s_pixels(shot: Shot, decoded: dict[int, np.ndarray],
                                                  tmp_path: Path) -> None:
    man = _id_of(shot, MAN)
    stills = render_stills(shot.request(selector="many", skip=(PersonId(man),)), (1, 21, 41),
                           tmp_path / "skip")
    one, signer, again = (_read(stills[n]) for n in (1, 21, 41))
    one, before = _parts(1, one), _parts(1, decoded[1])
    assert np.array_equal(one[MAN], before[MAN])  # the man, untouched
    assert _changed(one[WOMAN], before[WOMAN]).sum() > 200  # the woman, swapped
    assert _changed(signer, decoded[21]).sum() > 200
    assert np.array_equal(again, decoded[41])


def test_a_reference_picture_names_the_person_who_looks_like_it(shot: Shot) -> None:
    plan = plan_shot(shot.request(assign=((PersonInPicture(str(shot.woman)), shot.other),)))
    woman = _id_of(shot, WOMAN)
    sources = {p.person_id: p.source for p in plan.people}
    assert sources[woman] == str(shot.other)
    assert sources[_id_of(shot, MAN)] == "default"  # selector one still picks the man
    assert sources[_id_of(shot, SIGNER)] is None


def test_people_are_named_the_same_when_the_shot_is_analysed_again(shot: Shot,
                                                                  tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture
                                                                  ) -> None:
    """A fresh cache: the CLI preview says it analyses first; the same ids name the same
    frames."""
    before = _people(shot.request())
    cache = tmp_path / "fresh"
    args = _preview_args(shot, tmp_path / "cold.png", "--frame", "41", "--cache-dir",
                         str(cache))
    started = time.perf_counter()
    assert main(args) == 0
    cold_s = time.perf_counter() - started
    assert f"analysing the shot first: {LAST} frames" in capsys.readouterr().err
    started = time.perf_counter()
    assert main([*args, "--overwrite"]) == 0
    warm_s = time.perf_counter() - started
    assert "analysing" not in capsys.readouterr().err
    print(f"\npreview of one frame: cold {cold_s:.2f} s, warm {warm_s:.2f} s")
    again = replace(shot.request(), settings=replace(shot.request().settings,
                                                     cache_dir=cache))
    assert _people(again) == before
    named = _named(shot)
    assert {named[pid]: frames for pid, frames in before.items()} == {
        MAN: (*range(1, CUTS[0]), *range(CUTS[1], LAST + 1)), WOMAN: tuple(range(1, CUTS[0])),
        SIGNER: tuple(range(CUTS[0], CUTS[1]))}


# -- bad input ------------------------------------------------------------------------------------

def _preview_args(shot: Shot, still: Path, *extra: str) -> list[str]:
    return ["preview", "-i", str(shot.clip), "-o", str(still), "-s", str(shot.source),
            "--detector", YUNET_NAME, "--recogniser", str(shot.recogniser), "--swapper",
            str(shot.models / "colour_swapper.onnx"), "--providers", "cpu", "--models-dir",
            str(shot.models), "--offline", "--cache-dir", str(shot.cache), *extra]


BAD_PEOPLE = (
    (("--assign", "p9=BIDEN"), "there is no person 'p9' in this shot; its people are p1, p2, p3"),
    (("--skip", "p7"), "there is no person 'p7'"),
    (("--assign", "p2"), "is not PERSON=IMAGE"),
    (("--assign", "=BIDEN"), "is not PERSON=IMAGE"),
    (("--assign", "bob=BIDEN"), "does not name a person"),
    (("--assign", "p2=BIDEN", "--skip", "p2"), "person p2 is named twice"),
)
BAD_FRAMES = (
    (("--frame", "61"), "frame 61 is not in"),
    (("--frames", "1-30", "--frame", "41"), "outside the frames this render analyses"),
)


@pytest.mark.parametrize(("command", "extra", "said"), [
    *(("preview", *case) for case in BAD_PEOPLE + BAD_FRAMES),
    *(("render", *case) for case in BAD_PEOPLE)])
def test_bad_people_and_frames_are_one_sentence_and_write_nothing(
        shot: Shot, tmp_path: Path, capsys: pytest.CaptureFixture, command: str,
        extra: tuple[str, ...], said: str) -> None:
    shot.rendered("one", shot.selector("one"))  # analysed: the plan names its people
    out = tmp_path / "out"
    extra = tuple(e.replace("BIDEN", str(shot.other)) for e in extra)
    frame = () if "--frame" in extra or command == "render" else ("--frame", "1")
    args = _preview_args(shot, out / "still.png", *frame, *extra)
    if command == "render":
        args = ["render", *args[1:]]
        args[args.index("-o") + 1] = str(out / "f.####.png")
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1, err
    assert not out.exists()
    assert not list((shot.cache / "previews").glob(".stills*"))  # no scratch left


@pytest.mark.parametrize("name", ["still.jpg", "still", "still.mp4", "still.####.png"])
def test_a_still_that_is_not_one_file_of_a_lossless_format_is_refused(
        shot: Shot, tmp_path: Path, capsys: pytest.CaptureFixture, name: str) -> None:
    code = main(_preview_args(shot, tmp_path / name, "--frame", "1"))
    err = capsys.readouterr().err
    said = "one still, not an image sequence" if "#" in name else \
        "must be a .png, .tif, .tiff or .exr file"
    assert code == 2 and said in err
    assert list(tmp_path.iterdir()) == []


def test_a_frame_outside_the_input_is_an_input_error(shot: Shot, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="frame 99 is not in"):
        previews.preview_frame(shot.request(), 99, out_dir=tmp_path)


# -- preview_frame on plain plates ----------------------------------------------------------------

def _grey_sequence(folder: Path, count: int = 3) -> str:
    """PNG frames g.0001.png ...: frame n a flat grey of 20 * n, no face."""
    folder.mkdir(parents=True)
    for n in range(1, count + 1):
        cv2.imwrite(str(folder / f"g.{n:04d}.png"), np.full((120, 160, 3), 20 * n, np.uint8))
    return str(folder / "g.####.png")


def test_preview_frame_writes_one_picture_per_input_in_the_cache(settings: Settings,
                                                                 testdata: Path,
                                                                 tmp_path: Path) -> None:
    request = RenderRequest(sources=(testdata / "media" / "obama.jpg",), settings=settings,
                            input=InputSpec(_grey_sequence(tmp_path / "plate")),
                            output=OutputSpec(str(tmp_path / "out" / "o.####.png")))
    path = previews.preview_frame(request, 2)
    assert path.parent == settings.cache_dir / "previews"
    assert _read(path)[5, 5].tolist() == [40, 40, 40]  # frame 2, no face: as it is
    again = previews.preview_frame(request, 3)
    assert again == path and _read(path)[5, 5].tolist() == [60, 60, 60]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no scratch left
    assert not (tmp_path / "out").exists()  # a preview writes nothing into the output


def test_preview_of_a_linear_exr_is_display_referred(settings: Settings, testdata: Path,
                                                      tmp_path: Path) -> None:
    folder = tmp_path / "exr"
    folder.mkdir()
    spec = oiio.ImageSpec(160, 120, 3, "half")
    out = oiio.ImageOutput.create(str(folder / "p.0001.exr"))
    assert out.open(str(folder / "p.0001.exr"), spec)
    assert out.write_image(np.full((120, 160, 3), 0.18, np.float32))
    assert out.close()
    request = RenderRequest(sources=(testdata / "media" / "obama.jpg",), settings=settings,
                            input=InputSpec(str(folder / "p.####.exr")), output=OutputSpec(""))
    grey = int(_read(previews.preview_frame(request, 1, out_dir=tmp_path / "pv"))[10, 10, 1])
    assert 110 <= grey <= 125  # sRGB-encoded 18% grey (~118), not the linear 46


@pytest.mark.parametrize("suffix", [None, ".png", ".tif"])
def test_a_still_of_a_linear_exr_plate_is_the_render_to_that_format(
        render_models: Path, render_cache: Path, testdata: Path, tmp_path: Path,
        suffix: str | None) -> None:
    """No suffix: the plate's own format (EXR half, its values kept); PNG and TIFF: what a
    render to such a sequence writes (16-bit PNG, float TIFF)."""
    folder = tmp_path / "plate"
    folder.mkdir()
    face = face_photo(testdata)
    for n in range(1, 7):
        rgb = face_frame(n, face)[..., ::-1] / np.float32(255.0)
        write_plate_oiio(folder / f"p.{n:04d}.exr", srgb_to_linear(rgb).astype(np.float32),
                         "half")
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             folder / "p.####.exr", "")
    ext = suffix or ".exr"
    assert render(replace(request,
                          output=replace(request.output,
                                         path=str(tmp_path / "out" / f"r.####{ext}")))).swapped == 6
    stills = render_stills(request, (2, 5), tmp_path / "stills", suffix=suffix)
    for number, path in stills.items():
        assert path.suffix == ext
        still, spec = read_plate_oiio(path)
        rendered, rendered_spec = read_plate_oiio(tmp_path / "out" / f"r.{number:04d}{ext}")
        assert str(spec.format) == str(rendered_spec.format) == {
            ".exr": "half", ".png": "uint16", ".tif": "float"}[ext]
        assert np.array_equal(still, rendered), number


def test_a_cancelled_preview_raises_and_leaves_no_still(shot: Shot, tmp_path: Path) -> None:
    shot.rendered("one", shot.selector("one"))
    with pytest.raises(StillsCancelled):
        render_stills(shot.request(), (11,), tmp_path / "stills", cancel=lambda: True)
    folder = tmp_path / "stills"
    assert not folder.exists() or not list(folder.iterdir())


def test_a_still_in_a_read_only_folder_is_refused_before_the_render(
        shot: Shot, tmp_path: Path, capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    read_only_folder(monkeypatch, folder)
    assert main(_preview_args(shot, folder / "still.png", "--frame", "1")) == 6
    err = capsys.readouterr().err.strip()
    assert "locked is not writable: the file system is read-only" in err
    assert len(err.splitlines()) == 1
    assert list(folder.iterdir()) == []


def test_a_still_over_a_file_the_preview_reads_is_refused(shot: Shot, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "actor.png"
    shutil.copy2(shot.other, source)
    before = source.read_bytes()
    args = _preview_args(shot, source, "--frame", "1", "--overwrite")
    args[args.index("-s") + 1] = str(source)
    assert main(args) == 2
    assert "which this command reads" in capsys.readouterr().err
    assert source.read_bytes() == before


# --- casting without a default source (-s) ------------------------------------------------------

def _cast(shot: Shot, *who: str, selector: str = "many") -> RenderRequest:
    """A request without -s where each of `who` is assigned the render's usual source."""
    request = shot.request(selector=selector,
                           assign=tuple((PersonId(_id_of(shot, name)), shot.source)
                                        for name in who))
    return replace(request, sources=())


def test_every_person_cast_needs_no_default_source(shot: Shot, tmp_path: Path) -> None:
    """Render, preview and the hosts' preview_frame of a request whose swapped people all have
    their own source give the pixels of the same faces swapped with -s."""
    cast = _cast(shot, MAN, WOMAN, SIGNER)
    shot.rendered("many", shot.selector("many"))
    stills = render_stills(cast, (1, 21, 41), tmp_path / "cast")
    for number in (1, 21, 41):
        assert np.array_equal(_read(stills[number]), shot.frame("many", number))
    summary = render(replace(cast, output=OutputSpec(str(tmp_path / "out" / "f.####.png")),
                             frames=replace(cast.frames, only=((11, 12),))))
    assert (summary.swapped, summary.failed) == (2, ())
    png = previews.preview_frame(cast, 21, out_dir=tmp_path / "previews")
    assert np.array_equal(_read(png), shot.frame("many", 21))


def test_a_person_swapped_without_a_source_is_named_before_anything_is_written(
        shot: Shot, tmp_path: Path) -> None:
    man = _id_of(shot, MAN)
    cast = _cast(shot, WOMAN, SIGNER)  # the man, chosen by selector many, has nothing
    with pytest.raises(InputError) as caught:
        render(replace(cast, output=OutputSpec(str(tmp_path / "out" / "f.####.png"))))
    assert str(caught.value).startswith(f"{man} is swapped but has no source")
    assert f"--assign {man}=PHOTO" in str(caught.value)
    assert not (tmp_path / "out").exists()
    stills = render_stills(cast, (21,), tmp_path / "signer")  # the signer's shot: all cast
    assert 21 in stills
    with pytest.raises(InputError, match=f"{man} is swapped but has no source"):
        previews.preview_frame(cast, 41, out_dir=tmp_path / "previews")
    skipped = replace(cast, plan=replace(cast.plan, skip=(PersonId(man),)))  # or leave him out
    assert render(replace(skipped, output=OutputSpec(str(tmp_path / "ok" / "f.####.png")),
                          frames=replace(skipped.frames, only=((1, 1),)))).swapped == 1


def test_finding_people_and_their_review_need_no_source(shot: Shot, tmp_path: Path) -> None:
    """plan_shot and write_review of a request with no source at all: the people and flags,
    before pictures, and no after picture where someone swapped has no source yet."""
    bare = replace(shot.request(selector="many"), sources=())
    assert sorted(p.person_id for p in plan_shot(bare).people) == ["p1", "p2", "p3"]
    result = write_review(bare, tmp_path / "review")
    samples = result.report["samples"]
    assert samples and all(s["after"] is None and s["before"] for s in samples)
    assert "without a source" in result.page.read_text()
    man = _id_of(shot, MAN)
    partly = write_review(_cast(shot, WOMAN, SIGNER), tmp_path / "partly").report["samples"]
    for sample in partly:
        in_shot_b = CUTS[0] <= sample["frame"] < CUTS[1]
        assert (sample["after"] is not None) == in_shot_b, sample
        assert list(sample["unsourced"]) == ([] if in_shot_b else [man])


@pytest.mark.parametrize("command", ["render", "preview", "review"])
def test_the_command_line_takes_assign_without_s(shot: Shot, tmp_path: Path, command: str,
                                                 capsys: pytest.CaptureFixture) -> None:
    assigned = [arg for name in (MAN, WOMAN, SIGNER)
                for arg in ("--assign", f"{_id_of(shot, name)}={shot.source}")]
    args = _preview_args(shot, tmp_path / "still.png", "--selector", "many", *assigned)
    args.remove("-s")
    args.remove(str(shot.source))
    if command == "preview":
        args += ["--frame", "21"]
    else:
        args[0] = command
        args[args.index("-o") + 1] = str(tmp_path / ("review" if command == "review"
                                                     else "f.####.png"))
        args += ["--frames", "20-22"] if command == "render" else []
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()  # what the render said (its licences): only the refusal below counts
    bare = [a for a in args if a not in assigned]
    bare[bare.index("-o") + 1] = str(tmp_path / "bare" / Path(bare[bare.index("-o") + 1]).name)
    if command != "review":  # a review needs no source at all
        assert main(bare) == 2
        err = capsys.readouterr().err.strip()
        assert "there is no source face to swap in" in err and len(err.splitlines()) == 1
