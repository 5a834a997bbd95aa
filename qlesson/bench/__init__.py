"""Benchmarks: ratios measured side by side in one run (``python -m qlesson.bench``).

Timings are medians over repeats with a warm-up, on a fixed number of threads. The
machines are shared and noisy, so read ratios, not absolute milliseconds.
"""

from .quantize import bench_quantize
from .timing import Row, median_time, print_header

__all__ = ["Row", "bench_quantize", "median_time", "print_header"]
