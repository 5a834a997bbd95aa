"""What every exporter is checked with: the evaluation sentences, the simulation, cosines.

The *simulation* of a file is float64 MiniLM (:func:`qlesson.teach.models.load_minilm`) with its
Linear weights replaced by exactly the dequantized weights the file holds. An engine that reads
the file should give the same embeddings up to its own float32 arithmetic.

>>> hf_name("L3.query"), hf_name("L0.attention output"), hf_name("L5.output")
('encoder.layer.3.attention.self.query', 'encoder.layer.0.attention.output.dense', 'encoder.layer.5.output.dense')
>>> short_of("encoder.layer.2.intermediate.dense")
'L2.intermediate'
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from qlesson.teach.models import SENTENCES, embed, replaced_weights, short_name

# The sentences every engine is evaluated on: the course's own (lesson 03), nothing downloaded.
EVAL_SENTENCES: tuple[str, ...] = SENTENCES

_HF_SUFFIX = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "attention output": "attention.output.dense",
    "intermediate": "intermediate.dense",
    "output": "output.dense",
}


def hf_name(short: str) -> str:
    """The BertModel module name (``encoder.layer.N....``) of a course short name (``LN.kind``)."""
    m = re.fullmatch(r"L(\d+)\.(.+)", short)
    if short == "pooler":
        return "pooler.dense"
    if not m or m.group(2) not in _HF_SUFFIX:
        raise ValueError(f"{short!r} is not a short Linear name of MiniLM; expected e.g. 'L3.query' or 'pooler'")
    return f"encoder.layer.{m.group(1)}.{_HF_SUFFIX[m.group(2)]}"


def short_of(hf: str) -> str:
    """The course short name of a BertModel Linear module name (the inverse of :func:`hf_name`)."""
    return short_name(hf)


def bert_of(model: Any) -> torch.nn.Module:
    """The transformers ``BertModel`` inside the SentenceTransformer (its first module's ``auto_model``)."""
    first = model[0]
    bert = getattr(first, "auto_model", None) or getattr(first, "model", None)
    if bert is None:
        raise ValueError("expected a SentenceTransformer whose first module holds a BertModel (load_minilm())")
    return bert


def tokenize(model: Any, sentences: Sequence[str] = EVAL_SENTENCES) -> dict[str, np.ndarray]:
    """``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, padded to the longest sentence) as the model's
    tokenizer gives them: what an exported graph is fed."""
    enc = model.tokenizer(list(sentences), padding=True, return_tensors="np")
    return {k: np.asarray(enc[k], dtype=np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}


def q8_0_round(x: torch.Tensor) -> torch.Tensor:
    """``x`` rounded as llama.cpp's CPU kernels round an activation row before an integer dot product
    (``quantize_row_q8_0``): blocks of 32 along the last axis, scale = largest |value| / 127 stored in fp16,
    codes ``round(x / scale)`` (half away from zero), returned dequantized in ``x``'s dtype.

    >>> x = torch.tensor([63.5, 1.3, -0.74, 0.25] + [0.0] * 28)  # scale 63.5 / 127 = 0.5
    >>> q8_0_round(x)[:4].tolist()  # 0.25 / 0.5 = 0.5 rounds away from zero, to code 1
    [63.5, 1.5, -0.5, 0.5]
    >>> q8_0_round(torch.zeros(2, 32)).abs().sum().item()
    0.0
    """
    if x.shape[-1] % 32:
        raise ValueError(f"last axis {x.shape[-1]} is not a multiple of 32: Q8_0 rounds blocks of 32 values")
    blocks = x.reshape(*x.shape[:-1], x.shape[-1] // 32, 32).double()
    d = (blocks.abs().amax(-1, keepdim=True) / 127).half().double()
    safe = torch.where(d > 0, d, torch.ones_like(d))
    codes = torch.where(d > 0, torch.sign(blocks) * torch.floor(blocks.abs() / safe + 0.5), torch.zeros_like(blocks))
    return (codes * d).reshape(x.shape).to(x.dtype)


@contextlib.contextmanager
def rounded_inputs(model: Any, names: Sequence[str]) -> Iterator[None]:
    """Within the block, the Linear layers ``names`` (short names) see their input rounded by :func:`q8_0_round`."""
    bert = bert_of(model)
    hooks = [
        bert.get_submodule(hf_name(n)).register_forward_pre_hook(lambda _, args: (q8_0_round(args[0]),)) for n in names
    ]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def reference_embeddings(
    model: Any,
    deq: Mapping[str, torch.Tensor] | None = None,
    sentences: Sequence[str] = EVAL_SENTENCES,
    round_activations: bool = False,
) -> np.ndarray:
    """Unit-normalised float64 embeddings ``[len(sentences), 384]`` of MiniLM, with the Linear weights named in
    ``deq`` (short names, ``[out, in]``) replaced by those tensors: the simulation of a quantized file.
    ``deq=None`` is the float model. ``round_activations``: the layers in ``deq`` also round their input to
    Q8_0 blocks (:func:`q8_0_round`), as llama.cpp does on a CPU for Q8_0 and Q4_0 weights."""
    if deq is None:
        return embed(model, tuple(sentences)).double().numpy()
    rounding = rounded_inputs(model, list(deq)) if round_activations else contextlib.nullcontext()
    with replaced_weights(model, {k: torch.as_tensor(v) for k, v in deq.items()}), rounding:
        return embed(model, tuple(sentences)).double().numpy()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two ``[n, d]`` arrays (float64).

    >>> cosines(np.array([[1.0, 0.0], [0.0, 3.0]]), np.array([[2.0, 0.0], [0.0, -1.0]])).tolist()
    [1.0, -1.0]
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"expected two [n, d] arrays of the same shape with n >= 1, got {a.shape} and {b.shape}")
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    if not (np.all(na > 0) and np.all(nb > 0)):
        raise ValueError("an embedding row is all zeros: cosine is undefined; check the engine's output")
    return (a * b).sum(1) / (na * nb)


def worst_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest row-wise cosine between two sets of embeddings."""
    return float(cosines(a, b).min())
