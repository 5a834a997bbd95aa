"""``python -m qlesson COMMAND``: the course's commands, the same on Linux, macOS and Windows.

    python -m qlesson lab            copy the notebooks into workspace/ (first run) and open JupyterLab there
    python -m qlesson update         bring workspace/ up to date with the course, keeping your edits
    python -m qlesson grade [NN ...] grade your exercises in workspace/exercises (--detail: full messages)
    python -m qlesson grade --submissions DIR   instructors: grade learners' copies in a clean room
    python -m qlesson reset PATH     start one notebook again (yours is kept as old.NAME)
    python -m qlesson stats [NN ...] each lesson's words, run time and honest time (--measure, --check)

``make lab`` and ``make grade`` call these.
"""

from __future__ import annotations

import os
import sys


def _update() -> None:
    from qlesson.course.workspace import prepare

    for line in prepare():
        print(line)


def _lab(args: list[str]) -> int:
    from qlesson.course.workspace import lab

    return lab(args)  # the update summary before JupyterLab's log and again once it is up


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1])
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "lab":
        return _lab(rest)
    if command == "update":
        _update()
        return 0
    if command == "grade":
        from qlesson.course.grade import main as grade_main

        return grade_main(rest)
    if command == "stats":
        from qlesson.course.stats import main as stats_main

        return stats_main(rest)
    if command == "reset" and len(rest) == 1:
        from qlesson.course.workspace import reset

        print(f"fresh copy: {reset(rest[0].replace(os.sep, '/').removeprefix('workspace/'))}")
        return 0
    print(__doc__.split("\n\n")[1])
    return 2


def run(argv: list[str]) -> int:
    """:func:`main`, with a file the commands cannot use reported in one line instead of a traceback."""
    from qlesson.course.workspace import CourseFileError

    try:
        return main(argv)
    except CourseFileError as err:
        print(f"qlesson: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
