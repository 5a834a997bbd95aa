"""How sure is a comparison? Paired bootstrap intervals over sentences (lessons 03 to 10).

A table that says method A scores 0.9353 and method B 0.9354 on a few dozen sentences has
not shown that B is better: other sentences could reverse the order. The bootstrap asks what
the difference would look like on other samples of the same kind. Draw as many sentences as
there are, *with replacement*, compute the statistic of A and of B on that draw, keep the
difference, and repeat; the middle 95% of the differences is the interval. The draw is
*paired*: A and B are scored on the same resampled sentences, so what the sentences share
(an easy sentence is easy for both) cancels.

A difference is called a win only when its interval excludes 0; otherwise it is a **tie**
at this sample size, which is not the same as "equal".

The course's evaluation text comes in paraphrase pairs (sentences ``2k`` and ``2k + 1``), and
the two sentences of a pair score alike, so the unit that is resampled is the *pair*
(``pairs=True``). A statistic that depends on which other sentences are in the set, such as
each sentence's rank correlation against all the others, cannot be resampled as fixed
per-sentence values: :func:`jackknife_pairs` recomputes it with each pair left out.

The resampling uses numpy's PCG64 generator with a fixed seed (the same draws on every
machine), and every statistic is computed in float64, so the printed bounds do not depend on
the CPU.

>>> a = [0.91, 0.95, 0.88, 0.97, 0.93, 0.90]
>>> d = paired_bootstrap(a, [x - 0.01 for x in a])
>>> round(d.diff, 4), round(d.lo, 4), round(d.hi, 4), d.verdict("A", "B")
(0.01, 0.01, 0.01, 'A higher')
>>> paired_bootstrap([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]).verdict()
'tie'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

ArrayLike = Sequence[float] | np.ndarray | torch.Tensor
N_BOOT = 2000


@dataclass(frozen=True)
class Interval:
    """A paired difference ``A - B``, its bootstrap interval ``[lo, hi]`` and the confidence level."""

    diff: float
    lo: float
    hi: float
    level: float = 0.95

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0."""
        return self.lo > 0 or self.hi < 0

    def verdict(self, a: str = "A", b: str = "B") -> str:
        """``"A higher"``, ``"B higher"`` or ``"tie"`` (the interval spans 0).

        >>> Interval(0.02, 0.01, 0.03).verdict("g32", "g128"), Interval(0.02, -0.01, 0.03).verdict()
        ('g32 higher', 'tie')
        """
        if self.lo > 0:
            return f"{a} higher"
        if self.hi < 0:
            return f"{b} higher"
        return "tie"

    def text(self, fmt: str = "+.4f") -> str:
        """``+0.0123 [+0.0051, +0.0190]``: the difference and its interval.

        >>> Interval(0.0123, 0.0051, 0.019).text()
        '+0.0123 [+0.0051, +0.0190]'
        """
        return f"{self.diff:{fmt}} [{self.lo:{fmt}}, {self.hi:{fmt}}]"


def _as_1d(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x.detach().cpu().double() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{name} has shape {arr.shape}; pass one value per sentence (1-d, at least 2 values)")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or inf; pass finite per-sentence values")
    return arr


def _check(n_boot: int, level: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"n_boot={n_boot!r} must be an int >= 100 (2000 is the default)")
    if not 0.5 <= level < 1:
        raise ValueError(f"level={level!r} must be in [0.5, 1), e.g. 0.95")


def pair_resamples(n: int, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """``[n_boot, n]`` sentence indices from ``n / 2`` pairs drawn with replacement (both sentences of each).

    >>> pair_resamples(4, n_boot=3).shape
    (3, 4)
    """
    if n % 2:
        raise ValueError(f"{n} sentences cannot form pairs; pass an even number")
    p = resamples(n // 2, n_boot, seed)
    return np.stack([2 * p, 2 * p + 1], axis=-1).reshape(n_boot, n)


def resamples(n: int, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """``[n_boot, n]`` indices drawn with replacement from ``range(n)``: the same on every machine.

    >>> resamples(5, n_boot=2).shape
    (2, 5)
    """
    return np.random.Generator(np.random.PCG64(seed)).integers(0, n, size=(n_boot, n))


def interval(diff: float, boots: np.ndarray, level: float = 0.95) -> Interval:
    """``diff`` with the percentile interval of its bootstrap replicates ``boots``.

    >>> interval(0.5, np.linspace(0.0, 1.0, 101)).text(".3f")
    '0.500 [0.025, 0.975]'
    """
    if not 0.5 <= level < 1:
        raise ValueError(f"level={level!r} must be in [0.5, 1), e.g. 0.95")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(boots, [tail, 100 - tail])
    return Interval(float(diff), float(lo), float(hi), level)


def pair_means(x: ArrayLike) -> np.ndarray:
    """The mean of each pair of consecutive values (sentences ``2k`` and ``2k + 1``).

    >>> pair_means([1.0, 3.0, 2.0, 2.0]).tolist()
    [2.0, 2.0]
    """
    arr = _as_1d(x, "x")
    if arr.size % 2:
        raise ValueError(f"{arr.size} values cannot form pairs; pass an even number (sentences 2k and 2k + 1)")
    return arr.reshape(-1, 2).mean(1)


def paired_bootstrap(
    a: ArrayLike, b: ArrayLike, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95, pairs: bool = False
) -> Interval:
    """Mean of ``a - b`` over sentences (one value of each per sentence) with a paired bootstrap interval.

    ``a`` and ``b`` are per-sentence scores of two methods on the same sentences, e.g. each
    sentence's cosine to its FP32 embedding. With ``pairs=True`` the resampled unit is a pair
    of consecutive sentences (the evaluation text's paraphrase pairs); the mean is the same.
    """
    _check(n_boot, level)
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a has {x.size} values and b {y.size}; pass both methods' scores on the same sentences")
    if pairs:
        x, y = pair_means(x), pair_means(y)
    d = x - y
    idx = resamples(d.size, n_boot, seed)
    return interval(d.mean(), d[idx].mean(axis=1), level)


def mean_interval(a: ArrayLike, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95) -> Interval:
    """The mean of per-sentence values ``a`` with its bootstrap interval (``diff`` holds the mean).

    >>> mean_interval([1.0, 1.0, 1.0]).text(".2f")
    '1.00 [1.00, 1.00]'
    """
    _check(n_boot, level)
    x = _as_1d(a, "a")
    return interval(x.mean(), x[resamples(x.size, n_boot, seed)].mean(axis=1), level)


def jackknife_pairs(stat: Callable[[np.ndarray], float], n: int, level: float = 0.95) -> Interval:
    """``stat(all sentences)`` with a jackknife interval that leaves out one pair of sentences at a time.

    ``stat(keep)`` computes the difference A - B on the sentences ``keep`` (sorted indices, no
    repeats), recomputing whatever depends on the set (a rank correlation against the other
    sentences). The interval is ``diff +- z x SE``, with the jackknife standard error over the
    ``n / 2`` leave-one-pair-out values and ``z`` the normal quantile of ``level``.

    >>> v = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 1.05])
    >>> jackknife_pairs(lambda keep: float(v[keep].mean()), 6).text(".3f")
    '1.042 [0.983, 1.101]'
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 4 or n % 2:
        raise ValueError(f"n={n!r} must be an even number of sentences (pairs), at least 4")
    return _jackknife(stat, n, 2, level)


def jackknife_sentences(stat: Callable[[np.ndarray], float], n: int, level: float = 0.95) -> Interval:
    """Like :func:`jackknife_pairs`, leaving out one sentence at a time (sentences that are not paired).

    For a statistic of pooled tokens, such as an SQNR in dB over every token of the sentences
    kept, whose percentile bootstrap is biased (a resample repeats sentences, and a repeated
    outlier token moves a per-tensor scale): the jackknife interval is centred on ``stat``.

    >>> v = np.array([1.0, 1.2, 0.9, 1.1, 1.0, 1.05])
    >>> jackknife_sentences(lambda keep: float(v[keep].mean()), 6).text(".3f")
    '1.042 [0.960, 1.123]'
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise ValueError(f"n={n!r} must be the number of sentences, an int >= 3")
    return _jackknife(stat, n, 1, level)


def _jackknife(stat: Callable[[np.ndarray], float], n: int, unit: int, level: float) -> Interval:
    from statistics import NormalDist

    if not 0.5 <= level < 1:
        raise ValueError(f"level={level!r} must be in [0.5, 1), e.g. 0.95")
    m = n // unit
    full = stat(np.arange(n))
    loo = np.array([stat(np.delete(np.arange(n), range(unit * j, unit * j + unit))) for j in range(m)])
    se = float(np.sqrt((m - 1) / m * ((loo - loo.mean()) ** 2).sum()))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return Interval(float(full), float(full - z * se), float(full + z * se), level)


def paired_bootstrap_stat(
    stat: Callable[[np.ndarray, int], float],
    n: int,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """A statistic that is not a mean of per-sentence values (a rank correlation, a ratio of sums).

    ``stat(idx, which)`` computes method ``which`` (0 for A, 1 for B) on the sentences ``idx``
    (indices into the ``n`` sentences, repeats allowed); the interval is that of
    ``stat(idx, 0) - stat(idx, 1)`` over the same draws.

    >>> v = np.array([[3.0, 1.0, 2.0, 5.0], [1.0, 1.0, 1.0, 1.0]])
    >>> paired_bootstrap_stat(lambda idx, k: float(v[k, idx].sum()), 4, n_boot=200).diff
    7.0
    """
    _check(n_boot, level)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n={n!r} must be the number of sentences, an int >= 2")
    full = np.arange(n)
    boots = np.array([stat(idx, 0) - stat(idx, 1) for idx in resamples(n, n_boot, seed)])
    return interval(stat(full, 0) - stat(full, 1), boots, level)
