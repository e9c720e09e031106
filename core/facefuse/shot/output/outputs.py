"""Where render's frames go: `open_writer` checks the request's outputs and opens the writer,
an image sequence (resumable) or a video (one pass), each with the optional matte and patch
sequences (shot.output.writers).

It runs the checks of shot.output.output_checks before anything is written (no output may be an
input or another output's file; every output folder writable) and sweeps the hidden
temporaries of these outputs left by a killed render. Missing output folders are created only
when the first file is written, so a refused render creates nothing. FrameWriter and FrameToWrite
(shot.output.writers) are what render hands the writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...color import linear_output_converter
from ...errors import InputError
from ...geometry import DisplayConversion
from ...io import plates, sequences, video
from ...io.video.common import check_encoder_options
from ...io.video.encoders import check_container
from ...io.video.keep_yuv import kept_yuv
from ...runtime.threads import thread_budget
from ..contract.inputs import ShotInput
from ..contract.request import OutputSpec, RenderRequest
from .output_checks import check_folders, check_output_names, check_outputs, sweep_temporaries
from .writers import (
    ExtraSequences,
    FrameWriter,
    SequenceOutput,
    SequenceWriter,
    VideoWriter,
)


def _writes_linear_exr(request: RenderRequest, shot: ShotInput) -> bool:
    """True for a display-referred input (no input conversion) written to an EXR sequence: EXR
    holds scene-linear values, so its frames go through color.display_to_linear. An EXR input
    keeps its values (EXR to EXR copies as it is), and so does `--colorspace none` (no colour
    management at all)."""
    like = shot.plate_format
    unmanaged = (request.input.colorspace or "").lower() == "none"
    return (Path(request.output.path).suffix.lower() == ".exr" and not unmanaged
            and (like is None or like.file_format != "openexr"))


def open_writer(request: RenderRequest, shot: ShotInput, numbers: Sequence[int],
                colour: DisplayConversion | None = None) -> FrameWriter:
    """Check the outputs up front (InputError on any problem) and return the writer.

    Refused: an output file (of any frame in `numbers`) that is an input file of the shot, two
    outputs that would write the same file, an output folder that cannot be written to. Then
    the stale temporaries of these outputs are swept (see the module docstring).

    colour: the input's conversion to display space; video outputs are display-referred, so a
    scene-linear plate is converted before encoding (image sequences keep the plate's space)."""
    check_output_names(request)
    extras = ExtraSequences(request.output.matte, request.output.patch)
    writer: FrameWriter
    if sequences.is_frame_pattern(request.output.path):
        _check_sequence_options(request)
        linear = (linear_output_converter()
                  if colour is None and _writes_linear_exr(request, shot) else None)
        sequence = SequenceWriter(request.output.path, shot.plate_format, extras, linear,
                                  request.output.compression,
                                  thread_budget(request.settings.threads).sequence_writers)
        named = [(_label(request, "-o"), sequence.main), *_extra_labels(request, extras)]
        try:
            protected = check_outputs(named, None, shot, numbers, request)
            check_folders([out.folder for _, out in named])
        except BaseException:
            sequence.finish(False)
            raise
        writer, video_path = sequence, None
    else:
        video_path = Path(request.output.path)
        if not video.is_video_path(video_path):
            raise InputError(f"{video_path} needs a frame token for an image sequence "
                             "(name.####.exr) or a video extension (.mov, .mp4, .mkv)")
        if request.frames.chunk is not None or request.frames.chunk_frames is not None:
            raise InputError("--chunk and --chunk-frames need an image-sequence output: a video "
                             "is written in one pass (render a sequence on the farm, then "
                             "encode it)")
        only = request.frames.only
        if only is not None and len(only) > 1:  # one run: a part of the shot
            raise InputError("a list of frames (--frames LIST or flagged:) needs an "
                             "image-sequence output: a video is written whole, in one pass "
                             "(render the whole video again, or a sequence)")
        if request.output.compression is not None:
            raise InputError("--compression applies to EXR and TIFF sequence outputs only; for "
                             "a video choose the codec (--codec rawvideo or ffv1 is lossless)")
        check_encoder_options(request.output.codec, request.output.crf, request.output.preset)
        check_container(video_path, request.output.codec, request.output.keep_yuv)
        if request.output.keep_yuv:
            kept_yuv(shot.video_timing(numbers).source, request.output.codec, shot.label,
                     colour is not None)
        named = _extra_labels(request, extras)
        protected = check_outputs(named, video_path, shot, numbers, request)
        _check_video_output(video_path, request)
        check_folders([video_path.parent, *(out.folder for _, out in named)])
        writer = VideoWriter(video_path, request, shot, numbers, extras, colour)
    sweep_temporaries(named, video_path, protected)
    return writer


# The codec a request holds when none was asked for (OutputSpec.codec's default): the only
# one a sequence output takes, so a codec chosen for a sequence is refused, not ignored.
SEQUENCE_CODEC = OutputSpec.__dataclass_fields__["codec"].default


def _check_sequence_options(request: RenderRequest) -> None:
    """InputError for video encoder settings on a sequence output, or a compression its file
    format does not take (checked on the main output; the matte and patch keep zip)."""
    if request.output.keep_yuv:
        raise InputError(f"--keep-yuv applies to ffv1 and rawvideo video outputs, and "
                         f"{request.output.path} is an image sequence; leave --keep-yuv out")
    for name, value in (("--crf", request.output.crf), ("--preset", request.output.preset)):
        if value is not None:
            raise InputError(f"{name} applies to h264 and h265 video outputs only, and "
                             f"{request.output.path} is an image sequence; leave {name} out")
    if request.output.codec != SEQUENCE_CODEC:
        raise InputError(f"--codec {request.output.codec} applies to video outputs only, and "
                         f"{request.output.path} is an image sequence; leave --codec out (or give "
                         "a video output: .mov, .mkv, .mp4)")
    if request.output.compression is not None:
        pattern = sequences.FramePattern.parse(request.output.path)
        plates.check_compression(pattern.path(0), request.output.compression)


def _label(request: RenderRequest, option: str) -> str:
    return f"{option} {request.output.path}"


def _extra_labels(request: RenderRequest, extras: ExtraSequences
                  ) -> list[tuple[str, SequenceOutput]]:
    named = []
    if extras.matte is not None:
        named.append((f"--matte {request.output.matte}", extras.matte))
    if extras.patch is not None:
        named.append((f"--patch {request.output.patch}", extras.patch))
    return named


def _check_video_output(path: Path, request: RenderRequest) -> None:
    if path.parent.exists() and not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} is a file, not a folder")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")
    if path.exists() and not request.output.overwrite:
        raise InputError(f"{path} already exists; add --overwrite to replace it")
