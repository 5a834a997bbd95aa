"""Error metrics between a tensor and its reconstruction.

Introduced in lesson 02. ``sqnr_db`` is the signal-to-quantization-noise ratio,
``10 * log10(sum(x**2) / sum((x - x_hat)**2))``: every 6 dB is about one more bit.
A perfect reconstruction has ``sqnr_db = inf``.

>>> e = errors([1.0, -2.0, 3.0, 4.0], [1.0, -2.0, 3.5, 4.0])
>>> e.mae, e.rmse, e.max_abs, round(e.sqnr_db, 2)
(0.125, 0.25, 0.5, 20.79)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor, normalize_axis


@dataclass(frozen=True)
class Errors:
    """Whole-tensor reconstruction errors (plain floats)."""

    mae: float
    rmse: float
    max_abs: float
    sqnr_db: float


@dataclass(frozen=True)
class ChannelErrors:
    """Errors for each index along one axis (1-D float64 tensors, one entry per channel)."""

    axis: int
    mae: torch.Tensor
    rmse: torch.Tensor
    max_abs: torch.Tensor
    sqnr_db: torch.Tensor


def _pair(x: ArrayLike, x_hat: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    a = as_float_tensor(x, "x").double()
    b = as_float_tensor(x_hat, "x_hat").double()
    if a.shape != b.shape:
        raise ValueError(
            f"x has shape {tuple(a.shape)} but x_hat has shape {tuple(b.shape)}; "
            "compare a tensor with its own reconstruction"
        )
    return a, b


def _sqnr_db(signal: torch.Tensor, noise: torch.Tensor, s_unit: torch.Tensor, n_unit: torch.Tensor) -> torch.Tensor:
    """SQNR in dB from sums of squares of ``x / s_unit`` (signal) and ``|x - x_hat| / n_unit`` (noise).

    noise 0 -> +inf (perfect); signal 0 with noise -> -inf. Never NaN.
    """
    scaled = 10 * torch.log10(signal / noise.clamp_min(1e-300)) + 20 * torch.log10(s_unit / n_unit)
    return torch.where(noise > 0, scaled, torch.full_like(scaled, math.inf))


def _unit(t: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """A positive factor (the largest magnitude of ``t``) dividing ``t`` into [-1, 1].

    Squares and sums of values near float64's maximum overflow and those of tiny values
    underflow; metrics are computed on ``x / unit`` and ``|x - x_hat| / unit`` (each with its
    own unit, so a tiny error beside large values keeps its RMSE) and scaled back.
    """
    big = t.abs().max() if dim is None else t.abs().amax(dim)
    return torch.where(big > 0, big, torch.ones_like(big))


def errors(x: ArrayLike, x_hat: ArrayLike) -> Errors:
    """MAE, RMSE, max absolute error and SQNR over the whole tensor."""
    a, b = _pair(x, x_hat)
    d = _difference(a, b)
    ua, ud = _unit(a), _unit(d)
    an, dn = a / ua, d / ud
    return Errors(
        mae=float(dn.mean() * ud),
        rmse=float(dn.square().mean().sqrt() * ud),
        max_abs=float(d.max()),
        sqnr_db=float(_sqnr_db(an.square().sum(), dn.square().sum(), ua, ud)),
    )


def _difference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|``, raising (not returning inf) when the difference overflows float64."""
    d = (a - b).abs()
    if not bool(torch.isfinite(d).all()):
        raise ValueError(
            "x - x_hat overflows float64 (the values are near 1.8e308 with opposite signs); "
            "scale both tensors down before comparing them"
        )
    return d


def channel_errors(x: ArrayLike, x_hat: ArrayLike, axis: int = 0) -> ChannelErrors:
    """The same metrics for each index along ``axis`` (each output channel by default).

    >>> ce = channel_errors([[0.0, 1.0], [2.0, 2.0]], [[0.0, 0.5], [2.0, 2.0]])
    >>> ce.mae.tolist(), ce.max_abs.tolist()
    ([0.25, 0.0], [0.5, 0.0])
    """
    a, b = _pair(x, x_hat)
    ax = normalize_axis(axis, a.ndim, "channel_errors")
    d = _difference(a, b).movedim(ax, 0).reshape(a.shape[ax], -1)
    s = a.movedim(ax, 0).reshape(a.shape[ax], -1)
    us, ud = _unit(s, dim=1), _unit(d, dim=1)
    sn, dn = s / us[:, None], d / ud[:, None]
    return ChannelErrors(
        axis=ax,
        mae=dn.mean(1) * ud,
        rmse=dn.square().mean(1).sqrt() * ud,
        max_abs=d.amax(1),
        sqnr_db=_sqnr_db(sn.square().sum(1), dn.square().sum(1), us, ud),
    )
