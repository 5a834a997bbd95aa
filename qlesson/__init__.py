"""qlesson: a hands-on course on quantization granularity.

Importing qlesson runs nothing heavy: no seeding, no model loading, no backend changes.

>>> import qlesson as ql
>>> ql.quantize([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]], 4).q[0].tolist()
[0, 0, 0, 0]
"""

from .env import show_environment, versions
from .footprint import Footprint, footprint, total_footprint
from .granularity import Granularity, PerChannel, PerGroup, PerTensor, block_size, scale_shape
from .metrics import ChannelErrors, Errors, channel_errors, errors
from .quantize import QTensor, fake_quantize, qrange, quantize

__version__ = "0.1.0"

__all__ = [
    "ChannelErrors",
    "Errors",
    "Footprint",
    "Granularity",
    "PerChannel",
    "PerGroup",
    "PerTensor",
    "QTensor",
    "block_size",
    "channel_errors",
    "errors",
    "fake_quantize",
    "footprint",
    "qrange",
    "quantize",
    "scale_shape",
    "show_environment",
    "total_footprint",
    "versions",
]
