"""How nbval grades a notebook, shown with pytest's own comparison."""

from __future__ import annotations


def diff_lines(stored: str, ran_now: str) -> list[str]:
    """The lines pytest prints for nbval's ``reference_output == test_output`` check.

    >>> diff_lines("7\\n", "8\\n")[-2:]
    ['- 8', '+ 7']
    """
    import difflib

    # pytest's string diff is ndiff(right, left): "-" marks the new output, "+" the stored one
    return [line.rstrip() for line in difflib.ndiff(ran_now.splitlines(), stored.splitlines()) if line[:1] in "+-"]


def explain_diff(stored: str, ran_now: str) -> None:
    """Print the diff nbval would show, labelled."""
    print(f"stored in the notebook : {stored!r}")
    print(f"printed by this run    : {ran_now!r}")
    print("nbval's diff:")
    for line in diff_lines(stored, ran_now):
        side = "stored (expected)" if line.startswith("+") else "ran now"
        print(f"  {line:<20} <- {side}")
