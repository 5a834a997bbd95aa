"""The small worked examples of the course, as data. Each docstring says where it comes from.

>>> two_rows().shape, three_channels().shape, calculator_channels().shape
(torch.Size([2, 4]), torch.Size([3, 4]), torch.Size([4, 5]))
"""

from __future__ import annotations

import torch

ROW_A = (0.05, -0.08, 0.12, -0.15)
# The lesson text prints only Row B's reconstruction [2.21, -3.10, 1.77, -2.66] and its
# absmax 3.10; these inputs reproduce that reconstruction (lesson 02 checks it).
ROW_B = (2.0, -3.1, 1.7, -2.6)

# The interview note's 3x4 int8 example and the integers it prints (checked in lesson 02).
THREE_CHANNELS = ((-0.5, -0.3, 0.2, 0.4), (-2.0, -1.5, 1.0, 1.8), (-0.1, -0.08, 0.05, 0.09))
NOTE_PRINTED_Q = {
    "per-tensor": ((-32, -19, 13, 25), (-127, -95, 64, 115), (-6, -5, 3, 6)),
    "per-channel": ((-127, -76, 51, 102), (-127, -95, 64, 115), (-125, -100, 63, 113)),
}

# The calculator's 4-channel example: moderate, narrow positive, negative-only, tiny range.
CALCULATOR = (
    (0.12, -0.33, 0.48, -0.05, 0.91),
    (1.20, 0.95, 1.44, 1.10, 0.88),
    (-1.70, -1.22, -0.94, -1.43, -1.11),
    (0.03, 0.08, -0.02, 0.11, -0.06),
)

# A row in the spirit of the course page's figure: one outlier (8.1) among small weights.
OUTLIER_ROWS = (
    (0.21, -0.43, 8.1, 0.35, -0.12, 0.52, 0.44, -0.31),
    (0.61, -0.25, 0.18, -0.72, 0.33, 0.05, -0.48, 0.27),
    (-0.09, 0.14, 0.02, -0.11, 0.07, -0.16, 0.12, 0.04),
    (1.35, -0.92, 0.66, 1.12, -1.48, 0.83, -0.57, 0.95),
)


def two_rows() -> torch.Tensor:
    """The 2x4 weight of lesson 02: Row A quiet, Row B loud (absmax 3.10)."""
    return torch.tensor((ROW_A, ROW_B))


def three_channels() -> torch.Tensor:
    """The interview note's 3x4 weight (channel absmax 0.5, 2.0, 0.1)."""
    return torch.tensor(THREE_CHANNELS)


def calculator_channels() -> torch.Tensor:
    """The calculator's 4 channels of 5 values each."""
    return torch.tensor(CALCULATOR)


def outlier_rows() -> torch.Tensor:
    """4 channels of 8 weights; channel 0 holds the outlier 8.1."""
    return torch.tensor(OUTLIER_ROWS)


# LLaMA-7B's Linear weights per decoder layer, [out_features, in_features] (32 layers).
LLAMA_7B_LAYERS = 32
LLAMA_7B_LINEARS = {
    "q_proj": (4096, 4096),
    "k_proj": (4096, 4096),
    "v_proj": (4096, 4096),
    "o_proj": (4096, 4096),
    "gate_proj": (11008, 4096),
    "up_proj": (11008, 4096),
    "down_proj": (4096, 11008),
}
