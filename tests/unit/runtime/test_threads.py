"""The one CPU thread budget and the pool sizes it gives (runtime.threads)."""

from __future__ import annotations

import pytest

from facefuse.runtime.threads import ENCODE_THREADS_MAX, machine_cores, thread_budget


def test_zero_means_every_core_and_onnx_runtimes_own_default() -> None:
    zero, sixteen = thread_budget(0, cores=16), thread_budget(16)
    assert (zero.decode, zero.encode, zero.sequence_writers) == (
        sixteen.decode, sixteen.encode, sixteen.sequence_writers)
    assert zero.inference == 0 and sixteen.inference == 16  # 0: ORT sizes its own pool
    assert thread_budget(0).encode == min(machine_cores(), ENCODE_THREADS_MAX) >= 1


def test_the_encoder_never_gets_more_than_its_cap() -> None:
    assert thread_budget(0, cores=64).encode == thread_budget(64).encode == ENCODE_THREADS_MAX
    assert thread_budget(0, cores=64).inference == 0 and thread_budget(64).inference == 64
    assert thread_budget(12).encode == 12


def test_each_pool_is_sized_from_the_one_budget() -> None:
    budget = thread_budget(16)
    assert (budget.inference, budget.decode, budget.encode, budget.sequence_writers) == (
        16, 4, 16, 3)
    one = thread_budget(1, cores=16)
    assert (one.inference, one.decode, one.encode, one.sequence_writers) == (1, 1, 1, 1)
    assert thread_budget(0, cores=2).decode == 2


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="threads"):
        thread_budget(-1)
