"""The "look" job: one at a time, sharing the runner's Pipeline, a look asked for while another
runs waiting for it (Actions.pending); and the looks the panel asks for: source thumbnails,
Find people (the plan, then the review), who is swapped after a people choice, and Preview."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from facefuse import (
    LOOK_ROLES,
    MODEL_ROLES,
    CacheLayout,
    FacefuseError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    Settings,
    frame_picture,
    plan_shot,
    preview_frame,
    source_preview,
    write_review,
)

from .downloads import DOWNLOAD
from .review import (
    people_text,
    ranges_text,
    review_from_plan,
    review_from_report,
    review_with_plan,
    with_boxes,
    with_fixed,
)
from .roles import Controller
from .worker import Look, look_job

LOOK = "look"


def look(act: Controller, key: str, label: str, work: Look, done: Callable[[Any], Message],
         settings: Settings, roles: tuple[str, ...] = MODEL_ROLES,
         progress: bool = False, any_clip: bool = False) -> None:
    """Run `work` as the one look job, once the models for `roles` are here; a look asked
    for while another runs waits (a newer one of the same key replaces it). Its outcome is
    dropped once another clip is shown, unless `any_clip` (a source's thumbnail)."""
    if act.w.jobs.busy(LOOK) or act.w.jobs.busy(DOWNLOAD):
        act.pending = [(k, s) for k, s in act.pending if k != key or not key]
        act.pending.append((key, lambda: look(act, key, label, work, done, settings,
                                              roles, progress, any_clip)))
        return

    def on_progress(job: Job, item: Any) -> None:
        _progress(act, job, item)

    def start() -> None:
        act.activity(f"{label}…")
        act.rates.pop(LOOK, None)
        on_done = (lambda _job, result: done(result)) if any_clip else act.current(done)
        act.start_job(look_job(LOOK, label, act.w.jobs.runner, settings, work, on_done,
                               on_progress if progress else None))
    act.with_models(settings, roles, start)


def sources_changed(act: Controller, paths: list[Path]) -> None:
    act.pending_thumbnails += [p for p in paths if p not in act.thumbnailed
                               and p not in act.pending_thumbnails]
    act.thumbnailed.update(paths)
    act.w.remember()
    next_thumbnail(act)


def next_thumbnail(act: Controller) -> None:
    if not act.pending_thumbnails or act.w.jobs.busy(LOOK):
        return
    try:
        settings = act.settings()
    except FacefuseError as exc:
        act.ui.log.say(f"No thumbnails while the settings are refused: {exc}", "ERROR")
        return
    path = act.pending_thumbnails.pop(0)

    def shown(result: tuple[Path, int] | None) -> Message:
        if result is None:  # stopped by another clip's opening: once more
            act.pending_thumbnails.append(path)
            return Message("DEBUG", f"thumbnail of {path.name} again")
        act.ui.sources.set_thumbnail(path, *result)
        return Message("INFO", f"{path.name}: {result[1]} face(s)")
    look(act, "", f"Thumbnail of {path.name}",
         lambda p, _r, _c: source_preview(path, p.settings, pipeline=p), shown,
         settings, LOOK_ROLES, any_clip=True)


def find_people(act: Controller) -> None:
    """The shot's people at once from its plan (analysing it the first time, with
    progress), then its review: flags and thumbnails (rendering the contact sheet)."""
    request = act.checked_request()
    if request is None:
        return
    span = (act.w.review.first, act.w.review.last)

    def planned(plan: Any) -> Message:
        act.w.set_review(review_from_plan(plan, *span), keep_range=True)
        _review(act, request)
        return Message("INFO", f"{people_text(len(plan.people))} in frames {span[0]}-{span[1]}: "
                               "now the review (flags, thumbnails)")
    look(act, "plan", "Finding people (analysing the shot the first time)",
         lambda p, report, cancelled: plan_shot(request, p, report, cancelled),
         planned, request.settings, progress=True)


def _review(act: Controller, request: RenderRequest, again: bool = False) -> None:
    """The review of `request` on the timeline and the cards; again: after a people change
    (the flags of the earlier review that a correction made go are shown as fixed)."""
    folder = _review_folder(request)

    def shown(result: Any) -> Message:
        before = act.w.review
        review = with_boxes(review_from_report(result.report, result.folder, result.page),
                            before)
        if again:
            review = with_fixed(review, before, act.w.corrections.entries)
        act.w.set_review(review, keep_range=True)
        act.w.remember()
        flagged = (f"flagged {ranges_text(review.flagged)}" if review.flagged
                   else "nothing flagged")
        cuts = len(review.cuts)
        return Message("INFO", f"Review of {review.first}-{review.last}: "
                               f"{people_text(len(review.people))}, {cuts} "
                               f"cut{'s' if cuts != 1 else ''}, {flagged}")
    look(act, "review", "Reviewing the shot (flags, thumbnails)",
         lambda p, report, cancelled: write_review(request, folder, p, on_phase=report,
                                                   cancel=cancelled),
         shown, request.settings, progress=True)


def replan(act: Controller, review: bool = True) -> None:
    """After a person got a source or was skipped, or a correction: who is swapped now, on
    the timeline, then (review) the flags again: a reviewed shot's review is written again."""
    act.preview_at = None
    if not act.w.review.planned:
        return
    request = act.checked_request()
    if request is None:
        return

    def shown(plan: Any) -> Message:
        act.w.set_review(review_with_plan(act.w.review, plan), keep_range=True)
        if review and act.w.review.reviewed:
            _review(act, request, again=True)
        swapped = sum(p.swapped for p in plan.people)
        return Message("INFO", f"{swapped} of {len(plan.people)} people swapped")
    look(act, "replan", "Updating who is swapped",
         lambda p, report, cancelled: plan_shot(request, p, report, cancelled),
         shown, request.settings, progress=True)


def preview(act: Controller) -> None:
    """The frame under the playhead as the render makes it, beside the original."""
    problem = act.casting_problem()
    if problem is not None:
        act.ui.log.say(problem, "ERROR")
        return
    request, frame = act.checked_request(), act.ui.timeline.frame
    if request is None:
        return

    def both(p: Any, report: Any, _cancelled: Any) -> tuple[Path, Path]:
        return (frame_picture(request, frame),
                preview_frame(request, frame, pipeline=p, on_phase=report))

    def shown(pair: tuple[Path, Path]) -> Message:
        act.preview_at = (frame, *pair)
        act.ui.show_result.setChecked(False)
        if frame == act.ui.timeline.frame:
            act.ui.view.show_pair(*pair)
        return Message("INFO", f"Preview of frame {frame}: drag the divider to compare")
    look(act, "preview", f"Preview of frame {frame} (the render's own pixels)", both, shown,
         request.settings, progress=True)


def _progress(act: Controller, job: Job, item: Any) -> None:
    if not isinstance(item, PhaseProgress):
        return
    rate = act.rates.setdefault(LOOK, PhaseRate(item.done))
    bar = act.ui.activity
    bar.setMaximum(max(1, item.total))
    bar.setValue(item.done)
    _, left = rate.fps_eta(item.done, item.total)
    eta = "" if left is None else f" · {_clock(left)} left"
    unit = "steps" if item.phase == "pictures" else "frames"  # a review's contact sheet
    bar.setFormat(f"{item.phase}: {item.done}/{item.total} {unit}{eta}")


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def _review_folder(request: RenderRequest) -> Path:
    """Where the panel keeps the review of a clip (in the cache: not beside the media)."""
    key = hashlib.sha256(f"{request.input.path}|{request.frames.range}".encode()).hexdigest()[:16]
    return CacheLayout.at(request.settings.cache_dir).previews / f"review-{key}"
