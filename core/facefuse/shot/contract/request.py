"""What a host hands to `facefuse.shot.run.render.render` and what it gets back.

RenderRequest is everything one render needs, grouped like the work: InputSpec (what is read),
FrameSpec (which frames), PlanChoices (who is swapped where, a person named by a PersonRef),
OutputSpec (what is written), PolicyChoices (what it answers for: licences, consent) and
SigningChoices (the key its outputs' content credentials are signed with); FrameReport is what
each finished frame tells the host's progress callback; PhaseProgress is how far each phase
(analysis, swap, encode) has got, for the optional phase callback; RenderSummary is what the
render returns. Nothing here runs anything, so hosts, farm adapters and the command line build
and read these without pulling in the renderer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType

from ...config import Settings, check_smoothing
from ...errors import InputError
from ...models.manifest import USES
from .frames import FrameRanges, format_frame_list, normalise_ranges

PROVENANCE_MODES = ("names", "full")


REFERENCE_PREFIX = "ref:"


@dataclass(frozen=True, slots=True)
class PersonId:
    """A person of the shot plan by its id: "p1", "p2", ... (`facefuse review` lists them).

    InputError for any other text."""

    id: str

    def __post_init__(self) -> None:
        text = self.id
        if not (text.startswith("p") and text[1:].isdigit() and int(text[1:]) >= 1):
            raise _not_a_person(text)

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True, slots=True)
class PersonInPicture:
    """The person of the shot who looks like the picture at `path`, as given (written
    "ref:PATH" on the command line and in the request's fingerprint). InputError when empty."""

    path: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", os.fspath(self.path))
        if not self.path:
            raise _not_a_person(REFERENCE_PREFIX)

    def __str__(self) -> str:
        return REFERENCE_PREFIX + self.path


PersonRef = PersonId | PersonInPicture


def parse_person(text: str) -> PersonRef:
    """The person "p1" or "ref:PICTURE" names (InputError for any other text); str() of the
    result gives `text` back."""
    if text.startswith(REFERENCE_PREFIX) and len(text) > len(REFERENCE_PREFIX):
        return PersonInPicture(text[len(REFERENCE_PREFIX):])
    return PersonId(text)


SOURCE_HOLDER = "source"


@dataclass(frozen=True, slots=True)
class SourcePhotos:
    """A source identity, as the holder of a consent record: the render's own -s photos
    (`image` None, written "source") or one --assign photo ("source:IMAGE")."""

    image: str | None = None

    def __str__(self) -> str:
        return SOURCE_HOLDER if self.image is None else f"{SOURCE_HOLDER}:{self.image}"


ConsentHolder = PersonRef | SourcePhotos


def parse_consent_holder(text: str) -> ConsentHolder:
    """Whom "p1", "ref:PICTURE", "source" or "source:IMAGE" names (InputError for any other
    text); str() of the result gives `text` back."""
    if text == SOURCE_HOLDER:
        return SourcePhotos()
    if text.startswith(f"{SOURCE_HOLDER}:") and len(text) > len(SOURCE_HOLDER) + 1:
        return SourcePhotos(text[len(SOURCE_HOLDER) + 1:])
    try:
        return parse_person(text)
    except InputError:
        raise InputError(f"{text!r} does not name whom a consent record covers: a person of "
                         "the shot (p1, ref:PICTURE) or a source (source: the -s photos; "
                         "source:IMAGE: an --assign photo)") from None


def _not_a_person(text: str) -> InputError:
    return InputError(f"{text!r} does not name a person: use a person id of the shot plan "
                      "(p1, p2, ...; `facefuse review` lists them) or ref:IMAGE")


@dataclass(frozen=True, slots=True)
class InputSpec:
    """What is read: `path`, a video file or an image-sequence pattern (name.####.exr,
    name.%04d.exr, name.#.exr).

    colorspace: the input's OCIO colour space; None picks a default per format, "none" disables
    conversion. start_number: the number of a video input's first frame. conform_vfr: conform a
    variable frame rate video to a constant one."""

    path: str
    colorspace: str | None = None
    start_number: int = 1
    conform_vfr: bool = False


@dataclass(frozen=True, slots=True)
class FrameSpec:
    """Which frames are analysed and which rendered.

    range: inclusive (first, last) in the input's own numbering, None for all; the whole of it
    is analysed. chunk: (index, count), 1-based. chunk_frames: an inclusive (first, last)
    sub-range of `range` to render (a farm task's chunk of frames); not together with chunk
    (InputError). only: the frames to render, inclusive (first, last) ranges of `range` (None:
    all of them; normalised: sorted, overlaps joined; InputError when empty); chunk and
    chunk_frames take their share of these. `--frames LIST` and `--frames flagged:REPORT` set
    it (see shot.frames). only_input: the shot `only` was chosen for ("shot:ID", a review
    report's shot id, or "sha256:HEX", the input's content): a render of another shot is
    refused. only_report: the review report `--frames flagged:REPORT` read `only` from: a file
    this command read, so no output may replace it (shot.output_checks.request_inputs). Not
    part of the request's identity (equality) nor of its command line: a farm task carries the
    frames."""

    range: tuple[int, int] | None = None
    chunk: tuple[int, int] | None = None
    chunk_frames: tuple[int, int] | None = None
    only: FrameRanges | None = None
    only_input: str | None = None
    only_report: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.only is not None:
            object.__setattr__(self, "only", normalise_ranges(self.only))
            if not self.only:
                raise InputError("the list of frames to render is empty")
        if self.chunk is not None and self.chunk_frames is not None:
            raise InputError("give --chunk N/M or --chunk-frames A-B, not both")


@dataclass(frozen=True, slots=True)
class PlanChoices:
    """The user's choices for the shot plan (who is swapped where, see shot.plan).

    smoothing: landmark smoothing on/off; smoothing_min_cutoff / smoothing_beta tune it (None:
    the defaults; InputError outside config.SMOOTHING_OPTIONS' bounds). assign: (person, source
    image) pairs giving people of the shot plan their own identity. skip: people never
    swapped. A person is a PersonRef (TypeError for anything else). Everyone else is swapped
    as settings.selector decides, with the request's `sources`. A person named twice in assign
    and skip is an InputError. overrides: a JSON file of per-frame, per-person corrections to
    the shot plan (see shot.overrides and docs/overrides.md); its content, not its path,
    decides the frames."""

    smoothing: bool = True
    smoothing_min_cutoff: float | None = None
    smoothing_beta: float | None = None
    assign: tuple[tuple[PersonRef, Path], ...] = ()
    skip: tuple[PersonRef, ...] = ()
    overrides: Path | None = None

    def __post_init__(self) -> None:
        check_smoothing(self.smoothing_min_cutoff, self.smoothing_beta)
        named = [person for person, _ in self.assign] + list(self.skip)
        for person in named:
            if not isinstance(person, PersonId | PersonInPicture):
                raise TypeError(f"a person of assign/skip is a PersonId or PersonInPicture, not "
                                f"{person!r} (parse_person reads the text)")
        twice = sorted({str(person) for person in named if named.count(person) > 1})
        if twice:
            raise InputError(f"person {twice[0]} is named twice in --assign/--skip; give each "
                             "person one source or one skip")


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What is written: `path`, a video file or an image-sequence pattern.

    matte / patch: optional image-sequence patterns for the blend mask and the premultiplied
    RGBA face patch. codec: a video output's codec (io.video.VIDEO_CODECS). crf / preset:
    x264/x265 rate control for h264 and h265 outputs (None: the defaults, crf 16 / 18 and
    preset medium). compression: an EXR or TIFF sequence output's compression, as OIIO names it
    (None: the input plate's, else zip); see io.plates.COMPRESSIONS. keep_yuv: a rawvideo or
    ffv1 output keeps the input video's own planar YUV pictures (layout, bit depth, colour
    tags), bit-exact outside the pasted faces (io.video.keep_yuv). rate: frames per second of a
    video written from an image sequence (None: 24). provenance: what the outputs' metadata
    says about where things came from: "names" (file names and sha256 of the input, sources
    and models; the default) or "full" (their local paths too); InputError for another.
    overwrite: render frames that are done too."""

    path: str
    matte: str | None = None
    patch: str | None = None
    codec: str = "h264"
    crf: int | None = None
    preset: str | None = None
    compression: str | None = None
    keep_yuv: bool = False
    rate: Fraction | None = None
    provenance: str = "names"
    overwrite: bool = False

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCE_MODES:
            raise InputError(f"provenance {self.provenance!r} is not one of "
                             f"{', '.join(PROVENANCE_MODES)}")


@dataclass(frozen=True, slots=True)
class PolicyChoices:
    """What a render answers for (docs/consent.md).

    use: the work it is for, "research" (the default) or "commercial": a commercial render
    refuses every model whose licence allows research only (models.licences). model_licences:
    (role, use) pairs stating the widest use a user's own model file's licence allows.
    consent: (holder, record file) pairs: the holder is a person of the shot (a PersonRef) or a
    source (SourcePhotos). require_consent: refuse a render that swaps anyone not covered by a
    valid record in scope (shot.plan.consent). project / shot: what the render is, for a
    record's scope (shot None: the input's name). None of this changes a pixel: it is not
    part of any fingerprint. InputError for an unknown use or a holder named twice."""

    use: str = "research"
    model_licences: tuple[tuple[str, str], ...] = ()
    consent: tuple[tuple[ConsentHolder, Path], ...] = ()
    require_consent: bool = False
    project: str | None = None
    shot: str | None = None

    def __post_init__(self) -> None:
        if self.use not in USES:
            raise InputError(f"use {self.use!r} is not one of {', '.join(USES)}")
        holders = [str(holder) for holder, _ in self.consent]
        twice = sorted({holder for holder in holders if holders.count(holder) > 1})
        if twice:
            raise InputError(f"{twice[0]} is given two consent records; give each one record")


@dataclass(frozen=True, slots=True)
class SigningChoices:
    """The key an output's content credentials are signed with (credentials.signing): `cert`,
    a PEM certificate chain (the signer's first), `key`, its PEM private key, and an optional
    RFC 3161 `timestamp_url`. None: outputs are not signed. InputError for one of cert and key
    without the other."""

    cert: Path | None = None
    key: Path | None = None
    timestamp_url: str | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise InputError("content credentials need both --sign-cert and --sign-key")

    @property
    def signs(self) -> bool:
        """Whether the outputs are signed."""
        return self.cert is not None


@dataclass(frozen=True, slots=True)
class RenderRequest:
    """Everything one render needs: the `sources` (face images given to everyone the selector
    chooses who has no assign), what is read (`input`), which frames (`frames`), the plan
    choices (`plan`), what is written (`output`), what it answers for (`policy`), how its
    outputs are signed (`signing`), the `settings`, and `fail_fast`: stop at the first failed
    frame (no later frame is written).

    RenderRequest(sources=(Path("face.jpg"),), input=InputSpec("clip.mov"),
    output=OutputSpec("out.mp4")) is the short form; every field after `input` is given by
    keyword."""

    sources: tuple[Path, ...]
    input: InputSpec
    _: KW_ONLY
    frames: FrameSpec = FrameSpec()
    plan: PlanChoices = PlanChoices()
    output: OutputSpec
    policy: PolicyChoices = PolicyChoices()
    signing: SigningChoices = SigningChoices()
    settings: Settings = field(default_factory=Settings)
    fail_fast: bool = False


@dataclass(frozen=True, slots=True)
class FrameReport:
    """One finished frame: status is "swapped", "no_face" (no face found: written unchanged),
    "unselected" (faces found, none swapped by the plan: written unchanged), "skipped" (done
    by an earlier render) or "failed".

    faces: faces swapped; found: faces the analysis found in the frame (0 when not analysed);
    ms: milliseconds per stage (decode, detect, swap, paste, ...); error: why it failed;
    corrected: an "unselected" frame the user's own corrections left as it is (a skipped
    person's face is there, or an override keeps a face the plan would swap), not the
    selector's choice."""

    frame: int
    status: str
    faces: int = 0
    ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    error: str = ""
    found: int = 0
    corrected: bool = False


@dataclass(frozen=True, slots=True)
class PhaseProgress:
    """How far one phase of a render has got: `done` of `total` frames.

    phase: "analysis" (pass 1: detection and embedding; frames already cached count as done),
    "swap" (pass 2: frames swapped and settled by the writer), "encode" (the writer finishing:
    a video's last frames and its container; total 1) or, for a review (write_review),
    "pictures" (the contact sheet: each still decoded, each still rendered, then the plots;
    `total` counts those steps)."""

    phase: str
    done: int
    total: int


@dataclass(frozen=True, slots=True)
class RenderSummary:
    """The outcome of one render: frames in its range, how each ended, and whether it was
    cancelled (failed: (frame, reason) pairs). no_face: frames where no face was found;
    unselected: frames where faces were found but the plan swapped none (both written
    unchanged); corrected: those of `unselected` the user's own corrections (skips, overrides)
    left as they are, the rest being the selector's choice; warnings: sentences the host should
    show the user (never about corrected frames). replaced / replaced_ranges: the finished
    frames of the output made with other choices (another fingerprint) that this render
    rewrote, or set out to (shot.run.replacement; a video's: all its frames). request_fingerprint:
    the fingerprint of the whole request its frames were made with, what the plan is told
    included (what Replacement.made_by names later; "" when it stopped before). notes: sentences
    worth telling the user that are no problem (corrections outside the frames rendered).
    analysis_cached: frames whose analysis (pass 1) came from the cache instead of being run:
    timings of a render with cached analysis are warm. decoded_once: frames pass 2 took as
    pass 1 decoded them instead of decoding them again (shot.run.held_frames); held_mib: the most
    those held at once. answers: what the outputs answer for, a sentence each: the models'
    licences, who was swapped under which consent record, whether the outputs are signed."""

    frames: int
    swapped: int
    no_face: int
    skipped: int
    failed: tuple[tuple[int, str], ...]
    seconds: float
    cancelled: bool
    unselected: int = 0
    warnings: tuple[str, ...] = ()
    analysis_cached: int = 0
    decoded_once: int = 0
    held_mib: float = 0.0
    corrected: int = 0
    answers: tuple[str, ...] = ()
    replaced: int = 0
    replaced_ranges: FrameRanges = ()
    notes: tuple[str, ...] = ()
    request_fingerprint: str = ""

    @property
    def done(self) -> int:
        """The frames this render wrote."""
        return self.swapped + self.no_face + self.unselected

    @property
    def fps(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Replacement:
    """What a render would replace in its output: `frames`, inclusive ranges of finished frames
    made another way (`count` frames; a video's: all its frames, `whole_file` True), and
    `differences`, short phrases of what differs ("swapper_weight 0.5 -> 0.7", "the plan
    (people, sources or corrections) in frames 8-9"), and `made_by`, the request fingerprints
    (RenderSummary.request_fingerprint) of the renders those frames were made by, so a host can
    tell frames its own earlier renders made from others. Falsy when nothing is replaced."""

    output: str
    frames: FrameRanges = ()
    count: int = 0
    whole_file: bool = False
    differences: tuple[str, ...] = ()
    made_by: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.count > 0

    @property
    def message(self) -> str:
        """One sentence for the user ("" when nothing is replaced)."""
        if not self:
            return ""
        what = (f"the whole of {self.output}" if self.whole_file else
                f"{self.count} finished frames ({format_frame_list(self.frames)}) of "
                f"{self.output}")
        why = "; ".join(self.differences) or "another way"
        return f"this render replaces {what}, made with other choices: {why}"


ProgressCallback = Callable[[FrameReport], None]
PhaseCallback = Callable[[PhaseProgress], None]
CancelCheck = Callable[[], bool]
