"""Small, careful timer shared by every benchmark."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Row:
    """One benchmarked method: its median time and the ratio to the run's baseline."""

    name: str
    median_s: float
    ratio: float


def median_time(fn: Callable[[], object], *, repeats: int = 7, warmup: int = 2, min_time_s: float = 0.05) -> float:
    """Median seconds per call over ``repeats`` runs, each long enough to beat timer noise."""
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(min_time_s / once))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def print_header(title: str) -> None:
    """Machine, torch version and thread count: what every benchmark table depends on."""
    print(title)
    print(f"machine: {platform.machine()} {platform.processor() or ''}".rstrip())
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
