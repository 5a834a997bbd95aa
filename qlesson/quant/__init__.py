"""The quantization library: granularities, quantize/dequantize, errors, bytes, block formats.

Nothing here knows about lessons or grading; everything here is what a quantization
library would ship. ``import qlesson as ql`` re-exports the public names.

>>> from qlesson.quant import PerGroup, quantize
>>> quantize([[1.0, -2.0, 0.5, 0.25]], bits=4, granularity=PerGroup(2)).scale.tolist()
[[0.2857142984867096, 0.0714285746216774]]
"""

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
from qlesson.quant.packed import (
    QuantLinear,
    Scheme,
    dequantized_weights,
    load_packed,
    plan_bits,
    quantize_model,
    resolve_plan,
    save_packed,
    simulate,
)
from qlesson.quant.quantize import QTensor, fake_quantize, qrange, quantize

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
    "QuantLinear",
    "Scheme",
    "awq_scales",
    "block_size",
    "channel_errors",
    "dequantized_weights",
    "double_quantize",
    "errors",
    "fake_quantize",
    "footprint",
    "gptq",
    "load_packed",
    "plan_bits",
    "qrange",
    "quantize_fp8",
    "quantize",
    "quantize_model",
    "resolve_plan",
    "save_packed",
    "scale_shape",
    "simulate",
    "total_footprint",
]
