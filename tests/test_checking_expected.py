"""A task whose expected values would answer the exercise's own prediction does not print them."""

from qlesson.course.checking import Case, Task, evaluate


def _task(**kw) -> Task:
    return Task(
        "xx.t", "double", lambda x: 2 * x, [Case((3.0,), "x = 3"), Case((5.0,), "x = 5", hidden=True)], "twice x", **kw
    )


def test_a_failure_prints_the_expected_value_by_default():
    v = evaluate(_task(), lambda x: x + 1)
    assert v.status == "fail" and "expected:  6" in v.detail


def test_shows_expected_false_keeps_it_out_of_every_line():
    v = evaluate(_task(shows_expected=False), lambda x: x + 1)
    assert v.status == "fail" and "case 1 failed" in v.detail and "came back: 4" in v.detail
    assert "expected" not in v.detail and "6" not in v.detail and "6" not in v.summary
    assert evaluate(_task(shows_expected=False), lambda x: x * 2).status == "pass"
