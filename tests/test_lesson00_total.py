"""Lesson 00's total-time line agrees with the lessons' own stated times (the ones `qlesson stats` reads)."""

import re
from pathlib import Path

from qlesson.course import stats

ROOT = Path(__file__).resolve().parent.parent


def test_total_time_line_matches_the_lessons_stated_times():
    text = (ROOT / "notebooks" / "00_start_here.py").read_text()
    m = re.search(r"In all: about (\d+) hours of lessons and (\d+) hours of exercises\.", text)
    assert m, "lesson 00 lost its total-time line"
    rows = [stats.lesson_stats(p) for p in stats.lessons() if p.name[:2] != "00"]
    lessons_h = sum(r.stated for r in rows) / 60
    exercises_h = sum(r.stated_exercise or 0 for r in rows) / 60
    said_lessons, said_exercises = int(m.group(1)), int(m.group(2))
    # "about N hours": the nearest whole hour, either one when the total sits near a half
    assert abs(said_lessons - lessons_h) <= 0.55, f"lessons total {lessons_h:.1f} h; the line says {said_lessons}"
    assert abs(said_exercises - exercises_h) <= 0.55, f"exercises {exercises_h:.1f} h; the line says {said_exercises}"
