"""Gaps a mutation pass found (tests/mutate.py): each test here kills a one-line mutant that used to survive."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qlesson.course.checking import evaluate, same
from qlesson.course.recall import Choice, Option, choice
from qlesson.course.tasks import tasks
from qlesson.quant.gptq import hessian
from qlesson.teach.intervals import Interval, interval, jackknife_pairs, jackknife_sentences, paired_bootstrap


def test_hessian_averages_over_tokens_not_features():
    """``x`` is ``[tokens, features]``: 5 tokens and 3 features, so dividing by the wrong one shows."""
    x = torch.arange(15, dtype=torch.float64).reshape(5, 3) - 7
    h = hessian(x)
    assert h.shape == (3, 3)
    assert torch.allclose(h, 2 * torch.einsum("ti,tj->ij", x, x) / 5)
    damped = hessian(x, damp=0.1)
    assert torch.allclose(damped - h, 0.1 * h.diagonal().mean() * torch.eye(3, dtype=torch.float64))


@pytest.mark.parametrize(
    ("lo", "hi", "excludes"),
    [(0.05, 0.2, True), (-0.2, -0.05, True), (-0.01, 0.2, False), (0.0, 0.1, False), (-0.1, 0.0, False)],
)
def test_an_interval_excludes_zero_only_when_it_lies_on_one_side(lo, hi, excludes):
    assert Interval((lo + hi) / 2, lo, hi).excludes_zero is excludes


@pytest.mark.parametrize("jackknife", [jackknife_pairs, jackknife_sentences])
def test_the_jackknife_checks_its_level_and_uses_it(jackknife):
    v = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 1.05])

    def stat(keep):
        return float(v[keep].mean())

    for level in (1.0, 0.49, 1.5):
        with pytest.raises(ValueError, match=f"level={level!r} must be in"):
            jackknife(stat, 6, level=level)
    wide, narrow = jackknife(stat, 6, level=0.95), jackknife(stat, 6, level=0.5)
    assert narrow.level == 0.5 and wide.level == 0.95
    assert wide.lo < narrow.lo < narrow.hi < wide.hi


@pytest.mark.parametrize(
    "options",
    [
        (("a", True, "yes"), ("b", True, "also yes"), ("c", False, "no")),
        (("a", False, "no"), ("b", False, "no")),
        (("a", True, "alone"),),
        tuple((str(i), i == 0, "") for i in range(9)),
    ],
    ids=["two correct", "none correct", "one option", "nine options"],
)
def test_a_choice_needs_exactly_one_correct_option_among_two_to_eight(options):
    with pytest.raises(ValueError, match="exactly one correct"):
        choice("?", *options)
    with pytest.raises(ValueError, match="exactly one correct"):
        Choice("?", tuple(Option(*o) for o in options))


def test_a_vector_filled_with_the_expected_scalar_is_not_that_scalar():
    assert not same(torch.full((3,), 2.0), torch.tensor(2.0), 1e-5, 1e-6)
    assert not same([2.0, 2.0], 2.0, 1e-5, 1e-6)
    assert same(torch.tensor([2.0]), 2.0, 1e-5, 1e-6)  # one value in a 1-element tensor is that value
    assert same(torch.full((3,), 2.0), torch.tensor(2.0), 1e-5, 1e-6, broadcast=True)  # only to name a mistake


def test_an_interval_touching_zero_is_a_tie():
    assert Interval(0.05, 0.0, 0.1).verdict("A", "B") == "tie"
    assert Interval(-0.05, -0.1, 0.0).verdict("A", "B") == "tie"
    assert Interval(0.05, 1e-9, 0.1).verdict("A", "B") == "A higher"


@pytest.mark.parametrize("n_boot", [200.0, True, 99])
def test_the_bootstrap_needs_a_whole_number_of_draws(n_boot):
    with pytest.raises(ValueError, match=f"n_boot={n_boot!r} must be an int >= 100"):
        paired_bootstrap([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], n_boot=n_boot)


@pytest.mark.parametrize("level", [1.0, 0.4])
def test_every_interval_checks_its_level(level):
    with pytest.raises(ValueError, match="level="):
        interval(0.1, np.linspace(0, 1, 200), level=level)
    with pytest.raises(ValueError, match="level="):
        paired_bootstrap([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], level=level)
    assert interval(0.1, np.linspace(0, 1, 201), level=0.5).text(".2f") == "0.10 [0.25, 0.75]"


def test_a_function_that_returns_none_and_the_stub_is_told_it_returns_none():
    t = tasks()["01.clip_start"]
    calls = []

    def half_done(x, bits):
        calls.append(1)
        return ... if len(calls) == 1 else None

    v = evaluate(t, half_done)
    assert v.status == "not attempted" and "returns None" in v.summary, v
