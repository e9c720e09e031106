"""`write_review`: a shot's review report folder (report.json, index.html and their pictures)
from the plan the render makes; what `facefuse review` and `render --report` call.

Nothing of the shot is rendered but the contact sheet's frames: every Nth analysed frame (about
SAMPLED_FRAMES of them) and, for each flagged range, its middle frame (at most
FLAGGED_SAMPLES ranges, the first ones), each rendered alone exactly as the render renders it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..pipeline import Pipeline
from ..shot.contract.request import CancelCheck, PhaseCallback, PhaseProgress, RenderRequest
from ..shot.output.output_checks import request_inputs
from ..shot.plan.casting import people_without_source
from ..shot.plan.consent import consent_of, render_scope, source_names
from ..shot.plan.plan import ShotPlan
from ..shot.run.plan_only import fitted_request, plan_shot
from .flags import Thresholds, find_flags
from .folder import ReportFolder, check_report_folder
from .measures import person_series
from .page import page_html, plot_files
from .records import Flag, flag_sample
from .report import PAGE_NAME, REPORT_NAME, Sample, Timings, build_report, report_json
from .stills import Pictures, best_faces, sheet_picture, thumbnails

log = logging.getLogger(__name__)

SAMPLED_FRAMES = 12
FLAGGED_SAMPLES = 48
PICTURES_PHASE = "pictures"  # the contact sheet's stills and the plots (PhaseProgress)


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """What write_review wrote: the folder, the report's JSON, and how long it took."""

    folder: Path
    report: Mapping[str, Any]
    flags: tuple[Flag, ...]

    @property
    def page(self) -> Path:
        return self.folder / PAGE_NAME

    @property
    def json(self) -> Path:
        return self.folder / REPORT_NAME


def write_review(request: RenderRequest, folder: Path | str, pipeline: Pipeline | None = None,
                 render: Mapping[str, Any] | None = None, on_phase: PhaseCallback | None = None,
                 cancel: CancelCheck | None = None) -> ReviewResult:
    """Analyse (or load from the cache) and plan the shot as the render does, flag it, render
    the contact sheet's frames and write the report folder (see review.folder: nothing is
    written unless all of it is). render: the summary of a render just made (render --report)."""
    check_report_folder(folder, review_inputs(request))
    if pipeline is not None:
        return _review(request, Path(folder), pipeline, render, on_phase, cancel)
    with Pipeline(request.settings) as own:
        return _review(request, Path(folder), own, render, on_phase, cancel)


def _review(request: RenderRequest, folder: Path, pipeline: Pipeline,
            render: Mapping[str, Any] | None, on_phase: PhaseCallback | None,
            cancel: CancelCheck | None) -> ReviewResult:
    started = time.perf_counter()
    request = fitted_request(request, pipeline)  # the stills are of the shot it plans
    first: list[PhaseProgress] = []  # the analysis's first step: how much was cached

    def phase(step: PhaseProgress) -> None:
        if step.phase == "analysis" and not first:
            first.append(step)
        if on_phase is not None:
            on_phase(step)

    plan = plan_shot(request, pipeline, on_phase=phase, cancel=cancel)
    analysed = time.perf_counter()
    swapper = pipeline.models.swapper()
    limits = Thresholds(swapper_size_px=swapper.size_px, swapper_template=swapper.template)
    flags = find_flags(plan, limits)
    with ReportFolder(folder, review_inputs(request)) as out:
        samples, pictures, steps = _pictures(request, plan, flags, pipeline, out, cancel,
                                             on_phase)
        timings = Timings(analysed - started, time.perf_counter() - analysed,
                          analysis_cached=bool(first) and first[0].done == first[0].total)
        consented = (consent_of(plan, request, pipeline, plan.planned, render_scope(request))
                     if request.policy.consent else ())
        names = source_names(plan, request)
        report = build_report(plan, request, flags,
                              [person_series(plan, p.person_id) for p in plan.people
                               if p.swapped], samples, pictures, timings, limits, render,
                              [replace(item, source=names.get(item.source, item.source))
                               for item in consented])
        plots = plot_files(report)
        steps.finish()
        report["timings"]["report_s"] = round(time.perf_counter() - analysed, 3)
        for name, data in {**plots, PAGE_NAME: page_html(report, plots)}.items():
            out.write(name, data)
        out.write(REPORT_NAME, report_json(report))
        out.commit()
    log.info("review of %d frames: %d flags in %.1f s (analysis %.1f s) in %s",
             len(plan.frames), len(flags), time.perf_counter() - analysed, analysed - started,
             folder)
    return ReviewResult(folder, report, flags)


def review_inputs(request: RenderRequest) -> tuple[Path, ...]:
    """The files a review of `request` reads: its input and what a render of it reads."""
    return (Path(request.input.path), *request_inputs(request))


def sample_frames(plan: ShotPlan, flags: Sequence[Flag]) -> dict[int, str]:
    """frame -> why it is on the contact sheet ("sampled" or "flagged")."""
    frames = plan.frames
    step = max(1, math.ceil(len(frames) / SAMPLED_FRAMES))
    picked = {frame: "sampled" for frame in frames[::step]}
    shown = (flag_sample(flag, frames) for flag in flags)
    for frame in [n for n in shown if n is not None][:FLAGGED_SAMPLES]:
        picked[frame] = "flagged"
    failed = plan.analysis.failures  # no picture: their flags say why
    return {frame: why for frame, why in sorted(picked.items()) if frame not in failed}


def after_frames(request: RenderRequest, plan: ShotPlan, picked: Iterable[int]) -> list[int]:
    """The picked frames whose swap a render of `request` can show: those whose swapped people
    all have a source (planning.people_without_source), none without any source at all."""
    if not request.sources and not request.plan.assign:
        return []
    return [frame for frame in picked if not people_without_source(plan, request, (frame,))]


class PictureSteps:
    """The "pictures" phase: each still decoded, each still rendered, then one step for the
    plots; `on_phase` hears each step."""

    def __init__(self, decoded: int, rendered: int, on_phase: PhaseCallback | None) -> None:
        self.decoded, self.total, self.on_phase = decoded, decoded + rendered + 1, on_phase
        self.done = 0
        self._tell(0)

    def _tell(self, done: int) -> None:
        self.done = done
        if self.on_phase is not None:
            self.on_phase(PhaseProgress(PICTURES_PHASE, done, self.total))

    def decoded_one(self) -> None:
        self._tell(self.done + 1)

    def rendering(self, step: PhaseProgress) -> None:
        """A step of the stills' render: its swap phase counts the stills rendered."""
        if step.phase == "swap":
            self._tell(self.decoded + step.done)

    def finish(self) -> None:
        self._tell(self.total)


def _pictures(request: RenderRequest, plan: ShotPlan, flags: Sequence[Flag],
              pipeline: Pipeline, out: ReportFolder, cancel: CancelCheck | None = None,
              on_phase: PhaseCallback | None = None
              ) -> tuple[list[Sample], dict[str, str], PictureSteps]:
    """Stage the contact sheet's pictures and the thumbnails; (samples, person -> file, the
    phase's steps, the plots' still to come)."""
    picked = sample_frames(plan, flags)
    decoded = sorted({*picked, *(frame for frame, _ in best_faces(plan).values())})
    swappable = after_frames(request, plan, picked)
    steps = PictureSteps(len(decoded), len(swappable), on_phase)
    pictures = Pictures(request, cancel)
    try:
        before = pictures.before(decoded, steps.decoded_one)
        after = pictures.after(swappable, pipeline, steps.rendering) if swappable else {}
    finally:
        pictures.close()
    samples = []
    for frame, why in picked.items():
        if frame in before:
            samples.append(Sample(frame, why,
                                  out.write(f"samples/{frame:06d}-before.jpg",
                                            sheet_picture(before[frame])),
                                  out.write(f"samples/{frame:06d}-after.jpg",
                                            sheet_picture(after[frame]))
                                  if frame in after else None,
                                  people_without_source(plan, request, (frame,))))
    people = {pid: out.write(f"people/{pid}.jpg", data)
              for pid, data in thumbnails(plan, before).items()}
    return samples, people, steps
