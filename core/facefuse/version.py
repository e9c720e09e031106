"""The one place facefuse's version is written: the package metadata (hatch, pyproject.toml),
`facefuse --version`, output provenance and the Blender extension's manifest all read it."""

__version__ = "0.1.0"
