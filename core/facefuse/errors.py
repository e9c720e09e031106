"""Every error the engine raises on purpose derives from FacefuseError; the one exit-code table.

Every entry point (the command line, Blender's headless entry, host panels) exits with these
codes, listed in the README: each error class carries its code, and ExitCode names the others.
Messages are one sentence a user can act on.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a facefuse process's exit status means."""

    OK = 0
    INTERNAL = 1  # a bug: the message says so
    USAGE = 2  # bad input or usage (InputError)
    NO_FACE = 3  # no face in a source or reference image (NoFaceError)
    MODEL = 4  # a model is missing (offline) or invalid (ModelError)
    FRAMES_FAILED = 5  # a render finished, but some frames could not be decoded or written
    OUTPUT = 6  # an output cannot be written: full disk, quota, read-only or no permission
    CREDENTIALS = 7  # a file's credentials are missing or do not verify (`facefuse credentials`)
    INTERRUPTED = 130  # Ctrl-C (SIGINT)
    TERMINATED = 143  # SIGTERM (a farm's cancel): complete frames stay, a re-run resumes


class FacefuseError(Exception):
    """Base class for errors a user can cause or fix."""

    exit_code = ExitCode.INTERNAL


class InputError(FacefuseError):
    """A file, path or option given by the user is unusable."""

    exit_code = ExitCode.USAGE


class OutputError(FacefuseError):
    """An output cannot be written: the disk is full, a quota is reached, or the folder is
    read-only or not ours (fix the storage and run again; finished frames are kept)."""

    exit_code = ExitCode.OUTPUT


class NoFaceError(FacefuseError):
    """A source (or reference) image holds no detectable face."""

    exit_code = ExitCode.NO_FACE


class ModelError(FacefuseError):
    """A model is missing, corrupt, or does not match its role's contract."""

    exit_code = ExitCode.MODEL


class ModelMissingError(ModelError):
    """The model file is not present and may not be downloaded (offline, or no URL)."""


class ModelContractError(ModelError):
    """The ONNX file's inputs/outputs do not match the role it was given for."""


class ChecksumError(ModelError):
    """A file's size or sha256 differs from the manifest."""


class DownloadError(ModelError):
    """A download failed after every retry."""
