"""The options of `facefuse render`, described once: each one's switches, the field it sets
("request.NAME" of RenderRequest or "request.GROUP.NAME" of one of its groups, "settings.NAME"
of Settings, or "" for the command's own, such as --output-root), how its text is read and
written (`kind`: shot.contract.commandline lists them), its help and the value an absent option
reads as. The Settings fields a user tunes come from their own descriptions
(config.tunable_options()); the other Settings fields and the RenderRequest fields are described
here. shot.contract.commandline builds parsers from these tables and writes requests back as
them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ...config import Settings, Tunable, tunable_options
from ...io.video.common import CRF_RANGE, DEFAULT_CRF, DEFAULT_PRESET, VIDEO_CODECS
from .request import PROVENANCE_MODES, USES, InputSpec, OutputSpec, RenderRequest

OUTPUT_ROOT = "--output-root"


@dataclass(frozen=True, slots=True)
class Option:
    """One command-line option: `flags` (the long one last), the `field` it sets, its `kind`
    (see the module docstring), `help`, and `default`: what the parse holds when it is absent."""

    flags: tuple[str, ...]
    field: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The argparse attribute the option fills."""
        return self.flags[-1].removeprefix("--").replace("-", "_")

    @property
    def owner(self) -> str:
        """"request", "settings", or "" for an option no request field holds."""
        return self.field.partition(".")[0]

    @property
    def name(self) -> str:
        """The field's path below its owner: "codec" of "settings.codec", "output.codec" of
        "request.output.codec"."""
        return self.field.partition(".")[2]


def _tunable(option: Tunable) -> Option:
    """The command-line option of a Settings field a user tunes."""
    kind = {"model": "text", "choice": "text", "bool": "switch"}.get(option.kind, option.kind)
    if kind == "switch" and option.default:
        raise ValueError(f"{option.name}: a switch must default to off")
    default = "none" if option.kind == "optional-model" and option.default is None \
        else option.default
    choices = () if kind == "choices" else option.choices
    return Option((option.flag,), f"settings.{option.name}", kind, option.help, default,
                  choices)


SOURCE = Option(("-s", "--source"), "request.sources", "paths", "source face image given to "
                "everyone the selector chooses who has no --assign (repeat to average several "
                "photos of one person); not needed when --assign gives each swapped person a "
                "source")
MODEL_OPTIONS = (
    Option(("--models-dir",), "settings.models_dir", "path", "where models live (default: "
           "$FACEFUSE_MODELS, else the user cache folder)"),
    Option(("--offline",), "settings.offline", "switch", "never use the network (also "
           "FACEFUSE_OFFLINE=1)"),
)
SETTINGS_OPTIONS = (
    Option(("--reference",), "settings.reference_images", "paths", "image of the target person "
           "to replace (selector reference)", ()),
    *(_tunable(option) for option in tunable_options()),
    Option(("--providers",), "settings.providers", "providers", "auto, or a list such as "
           "cuda,cpu", "auto"),
    Option(("--no-cache",), "settings.use_embedding_cache", "off", "do not read or write the "
           "source embedding cache"),
    Option(("--cache-dir",), "settings.cache_dir", "path", "where everything facefuse caches "
           "goes (default: $FACEFUSE_CACHE, else the user cache folder)"),
    *MODEL_OPTIONS,
)
_CRF_DEFAULTS = ", ".join(f"{codec} {crf}" for codec, crf in DEFAULT_CRF.items())
SHOT_OPTIONS = (
    Option(("--frames",), "request.frames.range", "frames", "A-B: the inclusive range rendered, in "
           "the input's own frame numbers (clipped to the frames the input has); a list "
           "(1001-1010,1035,1040-1042) or flagged:DIR/report.json (a review report's flagged "
           "frames) renders only those frames, exactly as a render of the whole shot makes "
           "them (the input's whole range, or the report's, is analysed)",
           metavar="A-B|LIST|flagged:REPORT"),
    Option(("--only-frames",), "request.frames.only", "ranges", "render only these frames (a list "
           "as for --frames) of the --frames range, which is still analysed whole (what --frames "
           "LIST and flagged: come to in farm tasks)", metavar="LIST"),
    Option(("--only-input",), "request.frames.only_input", "text", "shot:ID (a review report's "
           "shot id) or sha256:HEX (the input's content) that --only-frames were chosen for: "
           "another shot is refused (flagged: sets it)", metavar="ID"),
    Option(("--overrides",), "request.plan.overrides", "path", "JSON file of per-frame, per-person "
           "corrections (skip, keep, swap, hold; see docs/overrides.md); a re-render rewrites "
           "only the frames they change; with --frames A-B, the whole shot's corrections plan "
           "that shot and those outside A-B are ignored (one note)", metavar="FILE"),
    Option(("--chunk",), "request.frames.chunk", "chunk", "render the Nth of M equal slices of the "
           "range (farm work)", metavar="N/M"),
    Option(("--chunk-frames",), "request.frames.chunk_frames", "range", "render only frames A-B "
           "of the --frames range, which is still analysed whole (a farm task's chunk of frames)",
           metavar="A-B"),
    Option((OUTPUT_ROOT,), "", "text", "refuse any output (-o, --matte, --patch) whose folder "
           "is not inside this one (farm jobs)"),
    Option(("--matte",), "request.output.matte", "text", "sequence pattern for the blend mask (one "
           "channel)"),
    Option(("--patch",), "request.output.patch", "text", "sequence pattern for the swapped face "
           "alone (premultiplied RGBA)"),
    Option(("--colorspace",), "request.input.colorspace", "text", "OCIO colour space of the input "
           "('none': no conversion); default per format, e.g. EXR = 'Linear Rec.709 (sRGB)'"),
    Option(("--codec",), "request.output.codec", "text", "for video outputs; rawvideo (.mov) and "
           "ffv1 (.mkv) are lossless (RGB; with --keep-yuv, the input's YUV in .mkv)",
           "h264", tuple(VIDEO_CODECS)),
    Option(("--keep-yuv",), "request.output.keep_yuv", "switch", "with --codec ffv1 or rawvideo "
           "(.mkv): keep the input video's own YUV pictures (layout, bit depth, colour tags), "
           "bit-exact outside the faces, instead of RGB"),
    Option(("--crf",), "request.output.crf", "int",
           f"h264/h265 constant rate factor, {CRF_RANGE[0]}.."
           f"{CRF_RANGE[1]}, lower is better ({_CRF_DEFAULTS})", metavar="N"),
    Option(("--preset",), "request.output.preset", "text", "h264/h265 speed preset, ultrafast .. "
           f"placebo ({DEFAULT_PRESET})", metavar="NAME"),
    Option(("--compression",), "request.output.compression", "text", "EXR (zip, none, zips, piz, "
           "rle, pxr24, b44, b44a, dwaa, dwab) or TIFF (zip, none, lzw) sequence outputs (the "
           "input plate's, else zip)", metavar="NAME"),
    Option(("--rate",), "request.output.rate", "rate", "fps of a video made from a sequence (24)"),
    Option(("--start-number",), "request.input.start_number", "frame", "number of a video's first "
           "frame", 1),
    Option(("--conform-vfr",), "request.input.conform_vfr", "switch", "conform a variable frame "
           "rate"),
    Option(("--overwrite",), "request.output.overwrite", "switch", "render frames that are done "
           "too"),
    Option(("--fail-fast",), "request.fail_fast", "switch", "stop at the first failed frame (no "
           "later frame is written)"),
    Option(("--no-smooth",), "request.plan.smoothing", "off", "do not smooth landmarks over time"),
    Option(("--smooth-min-cutoff",), "request.plan.smoothing_min_cutoff", "float", "One Euro min "
           "cutoff, Hz (1.0)"),
    Option(("--smooth-beta",), "request.plan.smoothing_beta", "float", "One Euro beta, per face "
           "size (3.0)"),
    Option(("--assign",), "request.plan.assign", "assignments", "give one person of the shot their "
           "own source: PERSON=IMAGE, PERSON a person id (p1, p2, ...: see `facefuse review`) "
           "or ref:PICTURE (the person who looks like PICTURE); repeatable; without -s every "
           "person swapped needs one (or --skip)", (),
           metavar="PERSON=IMAGE"),
    Option(("--skip",), "request.plan.skip", "people", "leave this person untouched (a person id, "
           "or ref:PICTURE); repeatable", (), metavar="PERSON"),
    Option(("--provenance",), "request.output.provenance", "text", "what output metadata names: "
           "file names and hashes (names), or local paths too (full)", "names", PROVENANCE_MODES),
)
INPUT = Option(("-i", "--input"), "request.input.path", "text", "video file, or sequence: "
               "name.####.exr, name.%%04d.dpx, name.#.png")
OUTPUT = Option(("-o", "--output"), "request.output.path", "text", "video file, or sequence "
                "pattern as for --input")
# what a render answers for (docs/consent.md, docs/credentials.md): render and farm only
ANSWER_OPTIONS = (
    Option(("--use",), "request.policy.use", "text", "the work this render is for: research, or "
           "commercial, which refuses every model whose licence allows research only "
           "(`facefuse models list --use commercial`); a studio settings file may require "
           "commercial", "research", USES),
    Option(("--model-licence",), "request.policy.model_licences", "licences", "ROLE=USE: the "
           "widest use (commercial or research) the licence of your own model file for ROLE "
           "(detector, recogniser, swapper, ...) allows; repeatable", (), metavar="ROLE=USE"),
    Option(("--consent",), "request.policy.consent", "consent", "WHO=RECORD: a performer's "
           "consent record (JSON, see docs/consent.md) for a person of the shot (p1, "
           "ref:PICTURE) or a source (source: the -s photos; source:IMAGE: an --assign photo); "
           "repeatable", (), metavar="WHO=RECORD"),
    Option(("--require-consent",), "request.policy.require_consent", "switch", "refuse to swap "
           "anyone not covered by a valid consent record in scope (a studio settings file may "
           "require it)"),
    Option(("--project",), "request.policy.project", "text", "the project this render is for, "
           "as consent records name it"),
    Option(("--shot",), "request.policy.shot", "text", "this shot's name, as consent records "
           "name it (default: the input's file name without frame number and extension)"),
    Option(("--sign-cert",), "request.signing.cert", "path", "sign every output with content "
           "credentials (C2PA): the signer's PEM certificate chain (also FACEFUSE_SIGN_CERT or "
           "the studio settings file; see docs/credentials.md)", metavar="PEM"),
    Option(("--sign-key",), "request.signing.key", "path", "the PEM private key of "
           "--sign-cert (also FACEFUSE_SIGN_KEY)", metavar="PEM"),
    Option(("--timestamp-url",), "request.signing.timestamp_url", "text", "an RFC 3161 time "
           "stamp authority the signatures are time-stamped by (optional)", metavar="URL"),
)
RENDER_OPTIONS = (INPUT, OUTPUT, SOURCE, *SETTINGS_OPTIONS, *SHOT_OPTIONS, *ANSWER_OPTIONS)
# what a review shows of consent: the records and the render's scope
CONSENT_OPTIONS = tuple(o for o in ANSWER_OPTIONS
                        if o.flags[-1] in ("--consent", "--project", "--shot"))
DEFAULT_SETTINGS = Settings()
DEFAULT_REQUEST = RenderRequest(sources=(), input=InputSpec(""), output=OutputSpec(""))
# Settings fields no option sets: a request that changes them has no command line
UNSPEAKABLE = tuple(f.name for f in fields(Settings)
                    if f"settings.{f.name}" not in {o.field for o in RENDER_OPTIONS})


REPEATABLE = ("paths", "assignments", "people", "licences", "consent")
