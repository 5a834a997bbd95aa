"""Which axis of a weight is its *output* channel, found from the module, not assumed.

A per-channel weight scale belongs on the axis that indexes outputs, because only there is it
constant along the reduction and factors out of the product. PyTorch and its ecosystem store
that axis in different places:

======================  ==========================  ===========
module                  weight layout               output axis
======================  ==========================  ===========
``nn.Linear``           ``[out, in]``               0
``nn.Conv2d``           ``[out, in/groups, kh, kw]`` 0
``nn.ConvTranspose2d``  ``[in, out/groups, kh, kw]`` 1
GPT-2 ``Conv1D``        ``[in, out]``               1
``nn.Embedding``        ``[vocab, dim]``            0 (one row per token)
======================  ==========================  ===========

>>> output_axis(torch.nn.Linear(3, 5)), output_axis(torch.nn.ConvTranspose2d(4, 6, 3))
(0, 1)
"""

from __future__ import annotations

import torch

_CONV_TRANSPOSE = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
_CONV = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def output_axis(module: torch.nn.Module) -> int:
    """The weight axis that indexes the module's outputs (for an embedding: the token rows)."""
    if isinstance(module, _CONV_TRANSPOSE):
        return 1
    if isinstance(module, (torch.nn.Linear, torch.nn.Embedding, *_CONV)):
        return 0
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):  # GPT-2's Conv1D: x @ W + b, W [in, out]
        return 1
    raise ValueError(
        f"no known output axis for {type(module).__name__}; pass the axis yourself "
        "(the one whose index picks an output feature)"
    )


def _probe(module: torch.nn.Module) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if isinstance(module, torch.nn.Embedding):
        return torch.arange(module.num_embeddings)
    if isinstance(module, (*_CONV, *_CONV_TRANSPOSE)):
        return torch.randn(2, module.in_channels, *([5] * (module.weight.ndim - 2)), generator=gen)
    in_features = module.weight.shape[1] if isinstance(module, torch.nn.Linear) else module.weight.shape[0]
    return torch.randn(2, in_features, generator=gen)


def _changed(module: torch.nn.Module, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    diff = (after - before).abs()
    if isinstance(module, torch.nn.Embedding):
        return diff.amax(1) > 0  # one flag per token row
    if isinstance(module, (*_CONV, *_CONV_TRANSPOSE)):
        return diff.movedim(1, 0).flatten(1).amax(1) > 0  # one flag per output channel
    return diff.amax(0) > 0  # one flag per output feature


def _moved(module: torch.nn.Module, axis: int, index: int) -> torch.Tensor:
    x = _probe(module)
    with torch.no_grad():
        before = module(x)
        saved = module.weight.clone()
        module.weight.select(axis, index).mul_(2.0)
        after = module(x)
        module.weight.copy_(saved)
    return _changed(module, before, after)


def outputs_changed(module: torch.nn.Module, axis: int, index: int = 0) -> int:
    """How many output channels change when weight slice ``index`` along ``axis`` is doubled.

    >>> outputs_changed(torch.nn.Linear(3, 5), 0), outputs_changed(torch.nn.Linear(3, 5), 1)
    (1, 5)
    """
    return int(_moved(module, axis, index).sum())


def touches_one_output(module: torch.nn.Module, axis: int, index: int = 0) -> bool:
    """Check ``axis`` by experiment: doubling weight slice ``index`` along it changes output ``index`` only.

    >>> touches_one_output(torch.nn.Linear(3, 5), 0), touches_one_output(torch.nn.Linear(3, 5), 1)
    (True, False)
    """
    moved = _moved(module, axis, index)
    return bool(moved[index]) and int(moved.sum()) == 1


def zoo() -> dict[str, torch.nn.Module]:
    """One small module of each kind in the table above (GPT-2's Conv1D from ``transformers``)."""
    from transformers.pytorch_utils import Conv1D

    with torch.random.fork_rng():  # seeded modules without touching the caller's random state
        torch.manual_seed(0)
        return {
            "nn.Linear(16, 8)": torch.nn.Linear(16, 8),
            "nn.Conv2d(3, 8, 3)": torch.nn.Conv2d(3, 8, 3),
            "nn.ConvTranspose2d(4, 8, 3)": torch.nn.ConvTranspose2d(4, 8, 3),
            "GPT-2 Conv1D(nf=8, nx=16)": Conv1D(8, 16),
            "nn.Embedding(10, 8)": torch.nn.Embedding(10, 8),
        }
