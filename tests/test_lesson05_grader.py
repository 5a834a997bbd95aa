"""Lesson 05, task 1: a learner who rounds in the textbook order, round(x / scale + zp), and makes another
mistake is told the case that is really wrong and the mistake's name, as is one who adds zp after rounding."""

import pytest
import torch

from qlesson.course.checking import evaluate
from qlesson.lessons import l05_zero_points_and_activations as l05

TASK = next(t for t in l05.TASKS if t.task_id == "05.asymmetric_roundtrip")


def _learner(added_first, truncate=False, widen=True, steps=None, guard=True):
    """A learner's round trip in plain Python numbers, with one chosen mistake."""

    def roundtrip(x, bits):
        lo = min(float(x.min()), 0.0) if widen else float(x.min())
        hi = max(float(x.max()), 0.0) if widen else float(x.max())
        scale = (hi - lo) / (steps(bits) if steps else 2**bits - 1)
        if guard and scale == 0:
            return torch.zeros_like(x)
        zp = int(-lo / scale) if truncate else round(-lo / scale)
        codes = torch.round(x / scale + zp) if added_first else torch.round(x / scale) + zp
        return (torch.clamp(codes, 0, 2**bits - 1) - zp) * scale

    return roundtrip


@pytest.mark.parametrize("added_first", [True, False], ids=["round(x/s + zp)", "round(x/s) + zp"])
@pytest.mark.parametrize(
    ("mistake", "words", "case"),
    [
        ({"truncate": True}, "truncated the zero point", 3),
        ({"widen": False}, "did not widen", 1),
        ({"steps": lambda b: 2**b}, "2**bits", 1),
    ],
    ids=["truncated zp", "not widened", "2**bits steps"],
)
def test_a_mistake_is_named_at_its_own_case_in_either_rounding_order(added_first, mistake, words, case):
    verdict = evaluate(TASK, _learner(added_first, **mistake))
    assert verdict.status == "fail" and words in (verdict.mistake or ""), verdict.summary
    assert f"[case {case}:" in verdict.summary, verdict.summary


@pytest.mark.parametrize("added_first", [True, False])
def test_both_rounding_orders_pass(added_first):
    assert evaluate(TASK, _learner(added_first)).status == "pass"


def test_no_scale_zero_guard_is_named_at_the_all_zeros_case():
    def no_guard(x, bits):  # torch numbers: 0 / 0 is NaN, not an error
        lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
        scale = (hi - lo) / (2**bits - 1)
        zp = torch.round(-lo / scale)
        return (torch.clamp(torch.round(x / scale + zp), 0, 2**bits - 1) - zp) * scale

    verdict = evaluate(TASK, no_guard)
    assert "0 / 0 is NaN" in (verdict.mistake or "") and "[case 5:" in verdict.summary, verdict.summary
