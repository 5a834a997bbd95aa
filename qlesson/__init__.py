"""qlesson: a hands-on course on quantization granularity.

Three parts, one folder each:

- :mod:`qlesson.quant`: the quantization library (granularities, quantize, errors, bytes,
  llama.cpp block formats, GEMM helpers, GPTQ and AWQ); its public names are re-exported here;
- :mod:`qlesson.teach`: what the lessons use to show it (examples, real weights, plots, widgets);
- :mod:`qlesson.course`: authoring, checking, grading, recall and the learner's workspace,
  with each lesson's tasks and recall questions in :mod:`qlesson.lessons`.

Importing qlesson runs nothing heavy: no seeding, no model loading, no backend changes.

>>> import qlesson as ql
>>> ql.quantize([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]], 4).q[0].tolist()
[0, 0, 0, 0]
"""

import importlib
from typing import Any

from qlesson.course.env import show_environment, versions
from qlesson.quant import formats
from qlesson.quant.awq import awq_scales
from qlesson.quant.double import DoubleQuant, double_quantize
from qlesson.quant.footprint import Footprint, footprint, total_footprint
from qlesson.quant.fp8 import FP8Tensor, quantize_fp8
from qlesson.quant.gptq import gptq
from qlesson.quant.granularity import (
    Granularity,
    PerBlock,
    PerChannel,
    PerGroup,
    PerTensor,
    block_size,
    scale_shape,
)
from qlesson.quant.metrics import ChannelErrors, Errors, channel_errors, errors
from qlesson.quant.quantize import QTensor, fake_quantize, qrange, quantize

__version__ = "0.1.0"

# v1 kept every module at the top level; `from qlesson import plots` still works, lazily
_MOVED = {
    **dict.fromkeys(("gemm", "granularity", "metrics"), "qlesson.quant"),
    **dict.fromkeys(
        ("analysis", "calculator", "examples", "models", "plots", "report", "ruler", "studies", "widgets"),
        "qlesson.teach",
    ),
    **dict.fromkeys(("checking", "grade", "grading", "recall", "tasks"), "qlesson.course"),
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return importlib.import_module(f"{_MOVED[name]}.{name}")
    raise AttributeError(f"module 'qlesson' has no attribute {name!r}")


__all__ = [
    "ChannelErrors",
    "DoubleQuant",
    "FP8Tensor",
    "Errors",
    "Footprint",
    "Granularity",
    "PerBlock",
    "PerChannel",
    "PerGroup",
    "PerTensor",
    "QTensor",
    "awq_scales",
    "block_size",
    "channel_errors",
    "double_quantize",
    "errors",
    "fake_quantize",
    "footprint",
    "formats",
    "gptq",
    "qrange",
    "quantize_fp8",
    "quantize",
    "scale_shape",
    "show_environment",
    "total_footprint",
    "versions",
]
