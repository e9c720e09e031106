"""Settings describe the options a user tunes once (config.tunable_options); every host builds
its controls from that list. Here: the command line offers each one under its flag, parses it
back to the same Settings value, and Settings refuses values outside the described range."""

from __future__ import annotations

from dataclasses import fields

import pytest

from facefuse.cli import main as cli
from facefuse.cli.options import settings_from_args
from facefuse.config import TUNABLE_GROUPS, TUNABLE_KINDS, Settings, tunable_options
from facefuse.errors import InputError

TUNED = {
    "detector": "scrfd_2.5g", "recogniser": "my/recogniser.onnx", "swapper": "other_swapper",
    "enhancer": "gfpgan_1.4", "selector": "many", "similarity": 0.25, "detector_score": 0.35,
    "detector_size_px": 320, "mask_blur": 0.55, "landmark_mask": True, "enhancer_blend": 0.6,
    "codeformer_fidelity": 0.9, "swapper_weight": 0.8, "pixel_boost": 512, "occluder": "xseg_3",
    "parser": "my/parser.onnx", "mask_regions": ("skin", "nose"), "mouth_mask": True,
    "threads": 3, "detector_sessions": 2, "swap_workers": 3, "frame_memory_mib": 256,
}


def _argv(values: dict[str, object]) -> list[str]:
    argv: list[str] = []
    for option in tunable_options():
        value = values[option.name]
        if option.kind == "bool":
            argv += [option.flag] if value else []
        elif option.kind == "choices":
            argv += [option.flag, ", ".join(value)]  # type: ignore[arg-type]
        else:
            argv += [option.flag, str(value)]
    return argv


def test_every_tunable_is_described_and_defaults_to_the_settings_default() -> None:
    options = tunable_options()
    assert {o.name for o in options} == set(TUNED), "update TUNED when a tunable is added"
    defaults = Settings()
    for option in options:
        assert option.kind in TUNABLE_KINDS and option.group in TUNABLE_GROUPS
        assert option.label and option.help and option.flag.startswith("--")
        assert option.default == getattr(defaults, option.name)
    assert len({o.flag for o in options}) == len(options)
    assert {o.name for o in options} <= {f.name for f in fields(Settings)}


@pytest.mark.parametrize("command", ["swap", "render"])
def test_the_command_line_turns_every_tunable_into_the_same_setting(command: str) -> None:
    target = ["-i", "clip.mp4", "-o", "out.mp4"] if command == "render" else [
        "-t", "frame.png", "-o", "out.png"]
    args = cli.build_parser().parse_args([command, "-s", "a.jpg", *target, *_argv(TUNED)])
    settings = settings_from_args(args)
    assert {name: getattr(settings, name) for name in TUNED} == TUNED
    defaults = settings_from_args(cli.build_parser().parse_args(
        [command, "-s", "a.jpg", *target]))
    assert defaults.enhancer is None and defaults.mask_blur == Settings().mask_blur
    assert defaults.occluder is None and defaults.parser is None
    assert defaults.mask_regions == Settings().mask_regions and defaults.swapper_weight == 0.5


@pytest.mark.parametrize(("name", "value"), [
    ("mask_blur", 1.5), ("similarity", -2.0), ("enhancer_blend", -0.1),
    ("codeformer_fidelity", 2.0), ("detector_score", 1.01), ("detector_size_px", 64),
    ("selector", "biggest"), ("swapper_weight", 1.2), ("pixel_boost", -128),
    ("mask_regions", ()), ("mask_regions", ("skin", "ears")), ("mask_regions", ("nose", "nose")),
])
def test_settings_refuse_a_value_outside_its_description(name: str, value: object) -> None:
    label = next(o.label.lower() for o in tunable_options() if o.name == name)
    with pytest.raises(InputError, match=label):
        Settings(**{name: value})  # type: ignore[arg-type]


def test_an_unknown_mask_region_on_the_command_line_is_a_usage_error(capsys) -> None:
    code = cli.main(["swap", "-s", "a.jpg", "-t", "b.png", "-o", "c.png",
                     "--mask-regions", "skin,ears"])
    assert code == 2
    err = capsys.readouterr().err
    assert "mask regions must be some of skin" in err and "'ears'" in err
    assert len(err.strip().splitlines()) == 1
