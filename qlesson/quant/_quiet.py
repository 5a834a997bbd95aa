"""Keep third-party import chatter out of notebook outputs.

torchao, imported directly or by transformers when it is installed, logs a warning for each
CUDA extension it cannot load on a CPU machine, and torch logs a deprecation for two of its
enums. Both are harmless here; outside this context the loggers are as they were.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

NOISY = ("torchao", "torch.utils._pytree")


@contextlib.contextmanager
def quiet_imports(*names: str) -> Iterator[None]:
    """Raise the loggers ``names`` (default :data:`NOISY`) to ERROR meanwhile, then restore them.

    >>> log = logging.getLogger("torchao")
    >>> before = log.level
    >>> with quiet_imports():
    ...     log.level == logging.ERROR
    True
    >>> log.level == before
    True
    """
    loggers = [logging.getLogger(n) for n in names or NOISY]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved, strict=True):
            lg.setLevel(level)
