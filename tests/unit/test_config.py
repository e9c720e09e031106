"""Every float setting must be a finite number (issue 24, item 6): inf, nan and values the One
Euro filter overflows on (1e308) are refused by Settings and RenderRequest with one sentence
naming the option (exit 2), from the Tunable ranges in facefuse.config."""

from __future__ import annotations

import math

import pytest

from facefuse.config import SMOOTHING_OPTIONS, Settings, tunable_options
from facefuse.errors import ExitCode, InputError
from facefuse.shot.contract.request import InputSpec, OutputSpec, PlanChoices, RenderRequest

FLOATS = [option for option in tunable_options() if option.kind == "float"]
BAD = [math.inf, -math.inf, math.nan, 1e308, -1e308]


@pytest.mark.parametrize("value", BAD, ids=str)
@pytest.mark.parametrize("option", FLOATS, ids=lambda o: o.flag)
def test_every_float_tunable_refuses_non_finite_and_huge_values(option, value: float) -> None:
    with pytest.raises(InputError) as info:
        Settings(**{option.name: value})
    message = str(info.value)
    assert info.value.exit_code == ExitCode.USAGE and "\n" not in message
    assert option.label.lower() in message


@pytest.mark.parametrize("value", BAD, ids=str)
@pytest.mark.parametrize("option", SMOOTHING_OPTIONS, ids=lambda o: o.flag)
def test_smoothing_refuses_non_finite_and_huge_values(option, value: float) -> None:
    with pytest.raises(InputError, match=option.label.lower()) as info:
        PlanChoices(**{option.name: value})
    assert info.value.exit_code == ExitCode.USAGE and "\n" not in str(info.value)


def test_smoothing_within_its_bounds_and_the_defaults_pass() -> None:
    RenderRequest(sources=(), input=InputSpec("in.mp4"), output=OutputSpec("out.mp4"))
    RenderRequest(sources=(), input=InputSpec("in.mp4"),
                  plan=PlanChoices(smoothing_min_cutoff=0.05, smoothing_beta=0.0),
                  output=OutputSpec("out.mp4"))
    RenderRequest(sources=(), input=InputSpec("in.mp4"),
                  plan=PlanChoices(smoothing_min_cutoff=1000.0, smoothing_beta=1000.0),
                  output=OutputSpec("out.mp4"))


@pytest.mark.parametrize("padding", [(0.0, math.nan, 0.0, 0.0), (math.inf, 0, 0, 0),
                                     (0.0, 0.0, 2.0, 0.0), (0.1, 0.1)])
def test_the_mask_padding_must_be_four_fractions(padding: tuple[float, ...]) -> None:
    with pytest.raises(InputError, match="mask padding"):
        Settings(mask_padding=padding)  # type: ignore[arg-type]
