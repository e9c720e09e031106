"""Models a job needs, fetched first when they are not on this computer: the "download" job,
its bar giving the model's name, megabytes done of the total and the time left. Offline
settings (`--offline`) name every missing model with its size in one line of the log instead
of downloading."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from facefuse import (
    Job,
    Message,
    ModelMissingError,
    PhaseRate,
    Pipeline,
    Settings,
    absent_models,
    fetch_models,
    missing_models,
)

from .roles import Controller

DOWNLOAD = "download"
MB = 1e6


def with_models(act: Controller, settings: Settings, roles: tuple[str, ...],
                then: Callable[[], None]) -> None:
    """then() once the manifest models `roles` need are on disk: downloaded first (with
    progress) when they are not; offline, the missing ones are named instead."""
    absent = absent_models(settings, roles)
    if not absent:
        then()
        return
    if settings.offline:
        for line in offline_lines(settings, roles):
            act.ui.log.say(line, "ERROR")
        return
    names = list(dict.fromkeys(name for _, name in absent))

    def work(report: Callable[[Any], None], _cancelled: Any) -> list[Path]:
        return fetch_models(settings, names, lambda n, d, t: report((n, d, t)))

    def fetched(_job: Job, paths: list[Path]) -> Message:
        act.activity(None)
        then()
        return Message("INFO", f"Downloaded {', '.join(names)}")
    rate: list[PhaseRate] = []
    act.activity(f"Downloading {', '.join(names)}…")
    act.ui.log.say(f"Downloading the models these settings need: {', '.join(names)}")
    act.start_job(Job(kind=DOWNLOAD, label="Downloading models", work=work, on_done=fetched,
                      on_progress=lambda _job, item: _progress(act, rate, item)))


def offline_lines(settings: Settings, roles: tuple[str, ...]) -> list[str]:
    """What the panel says when offline settings miss models: a line per model name or file
    that is wrong, and one line for every manifest model not here, with sizes (the engine's
    sentence, as `facefuse render --offline` says it) and the panel's own way out."""
    lines = missing_models(replace(settings, offline=False), roles)
    try:
        Pipeline(settings).models.require_models(roles)  # file checks only: nothing loads
    except ModelMissingError as exc:
        text = str(exc)
        lines.append(f"{text[:1].upper()}{text[1:]}; or start the panel without --offline "
                     "and it fetches what it needs itself")
    return lines


def _progress(act: Controller, rate: list[PhaseRate], item: tuple[str, int, int | None]) -> None:
    name, done, total = item
    if not rate:
        rate.append(PhaseRate(0))
    bar = act.ui.activity
    bar.setMaximum(max(1, round(total / MB * 10)) if total else 0)
    bar.setValue(round(done / MB * 10))
    size = f"{done / MB:.1f} of {total / MB:.1f} MB" if total else f"{done / MB:.1f} MB"
    text = f"Downloading {name}: {size}"
    if total:
        _, left = rate[0].fps_eta(done, total)
        text += "" if left is None else f" · {int(left) // 60}:{int(left) % 60:02d} left"
    bar.setFormat(text)
