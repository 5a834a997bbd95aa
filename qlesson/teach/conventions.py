"""Three conventions for symmetric signed codes, measured on the same row (lesson 01).

* the **restricted** range ``[-(2^(b-1) - 1), 2^(b-1) - 1]`` with ``scale = absmax / qmax``, this
  course's choice (and TensorRT's): symmetric, one code (-2^(b-1)) left unused;
* **PyTorch's** ``per_channel_symmetric`` observer: the full ``[-128, 127]`` with
  ``scale = absmax / 127.5`` (half the code span), so the positive end can clip by half a tick;
* **llama.cpp's Q4_0**: ``d = v / -8`` where ``v`` is the value of largest magnitude *with its
  sign*, codes ``-8..7``: that value lands exactly on -8 and the other side clips at +7.

>>> rows = convention_rows(torch.linspace(-1, 1, 32))
>>> [r["convention"].split(",")[0] for r in rows]
['restricted [-7', 'full [-8', 'Q4_0 [-8', 'divide by 8']
"""

from __future__ import annotations

from typing import Any

import torch


def _fake(x: torch.Tensor, scale: float, lo: int, hi: int) -> torch.Tensor:
    return torch.clamp(torch.round(x / scale), lo, hi) * scale


def convention_rows(row: torch.Tensor) -> list[dict[str, Any]]:
    """Scale, codes used, MAE and max error of one row of 32 values at 4 bits, by convention.

    The PyTorch row takes its scale from torch's own observer; the Q4_0 row round-trips through
    :mod:`qlesson.quant.formats` (bit-identical to llama.cpp's reference).
    """
    import numpy as np

    from qlesson.quant import formats

    if row.ndim != 1 or row.numel() != 32:
        raise ValueError(f"a row of 32 values is needed (one Q4_0 block); got shape {tuple(row.shape)}")
    absmax = float(row.abs().max())
    obs = torch.ao.quantization.PerChannelMinMaxObserver(
        ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-8, quant_max=7
    )
    obs(row[None])
    torch_scale = float(obs.calculate_qparams()[0][0])
    raw = formats.quantize(row[None].numpy().astype(np.float32), "Q4_0")
    q4_0 = torch.from_numpy(formats.dequantize(raw, "Q4_0")).reshape(-1)
    results = {
        "restricted [-7, 7]: absmax / 7": (absmax / 7, _fake(row, absmax / 7, -7, 7)),
        "full [-8, 7], absmax / 7.5: PyTorch's observer": (torch_scale, _fake(row, torch_scale, -8, 7)),
        "Q4_0 [-8, 7], d = max / -8": (float(raw[0, :2].view(np.float16)[0]), q4_0),
        "divide by 8, clamp [-8, 7]": (absmax / 8, _fake(row, absmax / 8, -8, 7)),
    }
    return [
        {
            "convention": name,
            "scale": abs(scale),
            "MAE": float((x_hat - row).abs().mean()),
            "max error": float((x_hat - row).abs().max()),
            "error at the largest value": float((x_hat - row)[row.abs().argmax()].abs()),
        }
        for name, (scale, x_hat) in results.items()
    ]
