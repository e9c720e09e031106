"""Every error the engine raises on purpose derives from FacefuseError.

Each class carries the exit code the CLI uses for it (documented in docs/cli.md):
0 done, 2 bad input or usage, 3 no face found in a source, 4 model missing or invalid.
Messages are one sentence a user can act on.
"""

from __future__ import annotations


class FacefuseError(Exception):
    """Base class for errors a user can cause or fix."""

    exit_code = 1


class InputError(FacefuseError):
    """A file, path or option given by the user is unusable."""

    exit_code = 2


class NoFaceError(FacefuseError):
    """A source (or reference) image holds no detectable face."""

    exit_code = 3


class ModelError(FacefuseError):
    """A model is missing, corrupt, or does not match its role's contract."""

    exit_code = 4


class ModelMissingError(ModelError):
    """The model file is not present and may not be downloaded (offline, or no URL)."""


class ModelContractError(ModelError):
    """The ONNX file's inputs/outputs do not match the role it was given for."""


class ChecksumError(ModelError):
    """A file's size or sha256 differs from the manifest."""


class DownloadError(ModelError):
    """A download failed after every retry."""
