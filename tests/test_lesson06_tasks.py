"""Lesson 06's task 1 grades the kernel's output, so every right (u, v) passes, not only the reference's."""

import torch

from qlesson.course.checking import evaluate
from qlesson.course.tasks import tasks


def test_any_rescaled_pair_that_gives_the_same_y_passes():
    t = tasks()["06.kernel_scales"]
    assert evaluate(t, lambda s, a: (2 / a, s / 2)).passed
    assert evaluate(t, lambda s, a: (a.reciprocal().float(), s.clone().tolist())).passed


def test_named_mistakes_still_fire_and_a_near_miss_fails():
    t = tasks()["06.kernel_scales"]
    assert (
        evaluate(t, lambda s, a: (2 * a, s / 2)).mistake
        == "multiplied by AWQ's factor where the stored weight divides by it"
    )
    assert evaluate(t, lambda s, a: (s, 1 / a)).mistake == "swapped the two sides"
    v = evaluate(t, lambda s, a: (2 / a, s))  # a factor 2 too big
    assert v.status == "fail" and v.mistake.startswith("ask which index of W")  # the hint, not a wrong name
    v = evaluate(t, lambda s, a: (torch.ones(3), s))
    assert v.status == "fail" and "two vectors" in v.mistake
