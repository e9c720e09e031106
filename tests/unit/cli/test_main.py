"""The command line's parser (facefuse.cli): every command and option explains itself, the same
switch means the same thing everywhere, and a bad option value is a usage error: one sentence
on stderr through main(), exit 2, never a traceback. Nothing here loads a model."""

from __future__ import annotations

import argparse

import pytest

from facefuse.cli import main as cli
from facefuse.cli.options import given_settings, settings_from_args
from facefuse.config import Settings
from facefuse.errors import ExitCode


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_command_and_option_has_a_help_line() -> None:
    parser = cli.build_parser()
    commands = _subcommands(parser)
    assert set(commands) == {"swap", "render", "preview", "models", "cache", "doctor",
                             "credentials", "resolve", "panel", "timeline", "bench", "farm",
                             "review"}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions if choice.help}
            assert helped == set(commands), f"commands without help: {set(commands) - helped}"
    missing = [f"{name} {action.option_strings or action.dest}"
               for name, sub in [("facefuse", parser), *commands.items()]
               for action in sub._actions
               if not isinstance(action, argparse._SubParsersAction)
               and (not action.help or action.help == argparse.SUPPRESS)]
    assert missing == []


def test_help_shows_what_facefuse_is_not_a_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "Local face replacement" in out and "exit codes:" in out
    assert "argparse" not in out and "Settings" not in out


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: action for action in parser._actions for option in action.option_strings}


def test_shared_switches_mean_the_same_everywhere() -> None:
    commands = _subcommands(cli.build_parser())
    swap, render = _options(commands["swap"]), _options(commands["render"])
    assert "--json" in render, "render --json is accepted like swap --json"
    for option in set(swap) & set(render):
        a, b = swap[option], render[option]
        assert (type(a), a.dest, a.default, a.choices) == (type(b), b.dest, b.default,
                                                           b.choices), option
        if option not in ("-o", "--output", "-h", "--help", "--json"):  # image vs shot
            assert a.help == b.help, option
    assert swap["--json"].help.startswith("print one JSON summary line")
    assert render["--json"].help.startswith("print one JSON summary line")
    models_dirs = {c: _options(commands[c])["--models-dir"].help for c in commands
                   if "--models-dir" in _options(commands[c])}
    assert len(models_dirs) == 8 and len(set(models_dirs.values())) == 1, models_dirs


def test_panel_takes_the_model_and_settings_options_of_render() -> None:
    """-s and every Settings option (swap's, which render shares), minus one image's own."""
    commands = _subcommands(cli.build_parser())
    panel, swap = _options(commands["panel"]), _options(commands["swap"])
    shared = set(swap) - {"-t", "--target", "-o", "--output", "--json", "-h", "--help",
                            "--faces-overlay", "--overwrite"}
    # the use and the signing key reach the panel's renders from the studio settings file
    shared -= {"--use", "--model-licence", "--sign-cert", "--sign-key", "--timestamp-url"}
    missing = {option for option in shared if option not in panel}
    assert not missing, missing
    for option in shared:  # a settings option the panel is not given stays out of its parse
        default = panel[option].default
        assert panel[option].dest == swap[option].dest, option
        assert default in (swap[option].default, argparse.SUPPRESS), option
    assert settings_from_args(cli.build_parser().parse_args(["panel"])) == Settings()


def test_panel_knows_which_settings_the_command_line_gave() -> None:
    """Given equal to its default, an option still wins over the panel's remembered value."""
    default = Settings().detector_score
    args = cli.build_parser().parse_args(["panel", "--detector-score", str(default),
                                          "--offline"])
    assert given_settings(args) == {"detector_score", "offline"}
    assert settings_from_args(args).detector_score == default
    assert given_settings(cli.build_parser().parse_args(["panel"])) == frozenset()


def test_preview_takes_every_render_option() -> None:
    commands = _subcommands(cli.build_parser())
    preview, render = _options(commands["preview"]), _options(commands["render"])
    assert set(render) - set(preview) == {"--list-colorspaces", "--report"}
    assert set(preview) - set(render) == {"--frame"}
    for option in set(render) - {"-o", "--output", "-h", "--help", "--json", "--progress",
                                 "--list-colorspaces", "--report"}:
        a, b = preview[option], render[option]
        assert (type(a), a.dest, a.default, a.choices, a.help) == (
            type(b), b.dest, b.default, b.choices, b.help), option


BASE = ["render", "-i", "in.mp4", "-o", "out.####.png", "-s", "face.jpg"]


@pytest.mark.parametrize("extra", [
    ["--frames", "20-10"], ["--frames", "-5"], ["--frames=-5"], ["--frames", "abc"],
    ["--frames", "1-"], ["--chunk", "0/3"], ["--chunk", "4/3"], ["--chunk", "-1/3"],
    ["--chunk", "x"], ["--rate", "0"], ["--rate", "abc"], ["--start-number", "x"],
    ["--progress", "loud"], ["--provenance", "paths"], ["--no-such-option"],
])
def test_bad_option_values_are_one_sentence_usage_errors(
        extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*BASE, *extra]) == ExitCode.USAGE == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("facefuse: error: "), captured.err
    assert "Traceback" not in captured.err and "usage:" not in captured.err
    assert captured.out == ""


def test_a_missing_command_or_argument_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert cli.main(["render", "-i", "in.mp4"]) == 2  # no -s
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("facefuse: error: ") for line in lines)


def test_good_values_parse() -> None:
    args = cli.build_parser().parse_args([*BASE, "--frames", "1-999999999", "--chunk", "2/3",
                                          "--rate", "24000/1001", "--json"])
    assert args.frames == (1, 999999999) and args.chunk == (2, 3) and args.json
    assert args.provenance == "names" and args.progress == "auto"
    assert cli.build_parser().parse_args([*BASE, "--frames", "7"]).frames == (7, 7)


def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    line = out[out.index("exit codes:"):]
    listed = {int(word) for word in line.replace(",", " ").split() if word.isdigit()}
    assert listed == {int(code) for code in ExitCode}
    assert "6 an output cannot be written" in line
