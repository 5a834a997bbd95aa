"""Everything that belongs to one lesson, found by its number: ``l01_the_ruler.py`` and so on.

Each module ``lNN_<name>.py`` holds that lesson's exercise tasks (``TASKS``, data: cases,
reference, named mistakes) and its recall questions (``RECALL``). The lesson itself is
``notebooks/NN_<name>.py`` (a jupytext source paired with the ``.ipynb``) and its exercise
``exercises/solutions/NN_<name>.py``. Adding a lesson means adding files, not editing a registry.

>>> sorted(numbers())[:3]
['00', '01', '02']
>>> module("02").__name__
'qlesson.lessons.l02_one_ruler_or_many'
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["module", "numbers"]


def numbers() -> dict[str, str]:
    """Lesson number -> module name, for every ``lNN_*`` module in this package."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        name = info.name
        if len(name) > 4 and name[0] == "l" and name[1:3].isdigit() and name[3] == "_":
            found[name[1:3]] = name
    return dict(sorted(found.items()))


def module(number: str) -> ModuleType:
    """The module of lesson ``number`` ("01", "02", ...); a ``ValueError`` lists the known ones."""
    known = numbers()
    if number not in known:
        raise ValueError(f"no lesson {number!r} with tasks or recall questions; known: {', '.join(known)}")
    return importlib.import_module(f"{__name__}.{known[number]}")
