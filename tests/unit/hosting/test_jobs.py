"""Host-neutral jobs (hosting.jobs): work on a worker thread, progress and outcome delivered on
the caller's thread, errors as messages, one job per kind, cancel, detach, a shared Pipeline."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from facefuse.config import Settings
from facefuse.errors import NoFaceError
from facefuse.hosting.jobs import HostError, Job, JobRunner, Message
from facefuse.pipeline import Pipeline


def _job(work: Any, kind: str = "render", seen: list[Any] | None = None) -> Job:
    seen = seen if seen is not None else []
    return Job(kind, "Face swap", work,
               on_done=lambda job, result: Message('INFO', f"done: {result}"),
               on_progress=lambda job, item: seen.append((threading.current_thread().name, item)))


def _run_on_a_thread(job: Job) -> None:
    job.thread = threading.Thread(target=job.run, name="worker")
    job.thread.start()
    job.thread.join(10)


def test_progress_and_outcome_arrive_on_the_delivering_thread():
    seen: list[Any] = []

    def work(report: Any, cancelled: Any) -> int:
        for n in range(3):
            report(n)
        return 42

    runner = JobRunner(Pipeline)
    job = _job(work, seen=seen)
    runner.add(job)
    _run_on_a_thread(job)
    assert runner.deliver(job) == Message('INFO', "done: 42")
    assert seen == [(threading.current_thread().name, n) for n in range(3)]
    assert runner.jobs == [] and runner.message == Message('INFO', "done: 42")


def test_a_running_job_delivers_nothing_yet():
    release = threading.Event()
    runner = JobRunner(Pipeline)
    job = _job(lambda report, cancelled: release.wait(10))
    runner.add(job)
    job.thread = threading.Thread(target=job.run)
    job.thread.start()
    assert runner.deliver(job) is None and runner.jobs == [job]
    release.set()
    job.thread.join(10)
    assert runner.deliver(job) == Message('INFO', "done: True")


@pytest.mark.parametrize(("error", "text"), [
    (NoFaceError("no face found in a.jpg"), "no face found in a.jpg"),
    (HostError("Strip 'x' is gone"), "Strip 'x' is gone"),
])
def test_errors_a_user_can_fix_become_their_own_sentence(error: Exception, text: str):
    def work(report: Any, cancelled: Any) -> None:
        raise error

    runner = JobRunner(Pipeline)
    job = _job(work)
    runner.add(job)
    job.run()
    assert runner.deliver(job) == Message('ERROR', text)


def test_a_bug_says_where_to_look():
    def work(report: Any, cancelled: Any) -> None:
        raise ZeroDivisionError("boom")

    runner = JobRunner(Pipeline)
    job = _job(work)
    runner.add(job)
    job.run()
    message = runner.deliver(job)
    assert message is not None and message.level == 'ERROR'
    assert "Face swap failed unexpectedly" in message.text and "system console" in message.text


def test_one_job_of_a_kind_at_a_time_and_cancel_reaches_it():
    runner = JobRunner(Pipeline)
    first = _job(lambda report, cancelled: cancelled())
    runner.add(first)
    with pytest.raises(HostError, match="Face swap is still running"):
        runner.add(_job(lambda report, cancelled: None))
    runner.add(_job(lambda report, cancelled: None, kind="look"))
    assert runner.cancel("render") == 1 and first.status == "cancelling"
    first.run()
    assert runner.deliver(first) == Message('INFO', "done: True")


def test_a_detached_job_drops_its_outcome():
    runner = JobRunner(Pipeline)
    done: list[Any] = []
    job = Job("render", "Face swap", lambda report, cancelled: report(1),
              on_done=lambda job, result: done.append(result) or Message('INFO', "x"),
              on_progress=lambda job, item: done.append(item))
    runner.add(job)
    job.detach()
    job.run()
    assert runner.deliver(job) == Message('WARNING', "Face swap stopped: the file was closed")
    assert done == [] and job.cancel_event.is_set()


def test_look_jobs_share_one_pipeline_while_the_settings_stay(tmp_path: Path):
    settings = Settings(offline=True, models_dir=tmp_path / "models", cache_dir=tmp_path / "c",
                        providers=("CPUExecutionProvider",))
    runner = JobRunner(Pipeline)
    first = runner.pipeline(settings)
    assert runner.pipeline(settings) is first
    other = runner.pipeline(replace(settings, detector_score=0.7))
    assert other is not first and other.settings.detector_score == 0.7
    runner.close()
    assert runner.jobs == [] and runner.pipeline(settings) is not other
