"""MiniLM as llama.cpp's BERT GGUF, its Linear weights in qlesson's own Q8_0 / Q4_0 / Q4_K bytes, run in llama.cpp.

Introduced in lesson 11. :func:`export_gguf` writes what llama.cpp's ``convert_hf_to_gguf.py`` writes for a
``BertModel`` (architecture ``bert``, mean pooling, non-causal attention, the WordPiece vocabulary in the
converter's "phantom space" spelling, the same tensor names and F32 embeddings/norms/biases; the pooler is
dropped, as the converter does), except that each of the 36 encoder Linear weights is stored in the format its
``plan`` names, as the bytes :func:`qlesson.quant.formats.quantize` computes. GGUF stores a ``[out, in]`` weight
with ``ne0 = in``: the rows the bytes already are, so no transpose. ``deq`` is read back *from the file*.

How close the engine comes to the simulation (float64 MiniLM with exactly ``deq``):

- ``F32``: float32 arithmetic (and llama.cpp's tanh-approximated GELU) only: worst cosine 0.999999.
- quantized: on CPU llama.cpp does not multiply by the dequantized weights. It quantizes each *activation*
  row too (to Q8_0 blocks of 32 for Q8_0/Q4_0 weights, to Q8_K blocks of 256 for Q4_K) and takes integer
  dot products. That second rounding is not in the simulation, so engine vs simulation is about 4e-4 from 1
  (Q8_0: as large as Q8_0's weight rounding itself, 2e-4 from float), while Q4_0's weight rounding is
  4e-2 from float: the engine stays 100 times closer to the simulation than to float. Bounds with margin:
  :data:`SIMULATION_BOUND`.

>>> plan_for("Q4_K")["L0.query"], plan_for("Q4_K")["L0.output"]  # Q4_K needs rows of 256: 384 is not
('Q4_0', 'Q4_K')
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qlesson.engines.common import EVAL_SENTENCES, bert_of, hf_name
from qlesson.quant import formats

FORMATS = ("F32", "Q8_0", "Q4_0", "Q4_K")
ROW_BLOCK = {"F32": 1, "Q8_0": 32, "Q4_0": 32, "Q4_K": 256}
# Worst engine-vs-simulation cosine each format must reach over EVAL_SENTENCES. Measured 2026-11-27 with
# llama-cpp-python 0.3.36 on x86-64 (1 thread): F32 0.999999, Q8_0 0.99963, Q4_0 0.99964, Q4_K mix 0.99945;
# each bound allows about 4 times the measured gap.
SIMULATION_BOUND = {"F32": 0.99999, "Q8_0": 0.998, "Q4_0": 0.998, "Q4_K": 0.997}
ARCH = "bert"
_KINDS = ("query", "key", "value", "attention output", "intermediate", "output")
REQUIRED_KEYS = (
    "general.architecture",
    "bert.block_count",
    "bert.context_length",
    "bert.embedding_length",
    "bert.feed_forward_length",
    "bert.attention.head_count",
    "bert.attention.layer_norm_epsilon",
    "bert.attention.causal",
    "bert.pooling_type",
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.token_type_count",
)
ENGINES_HINT = "llama-cpp-python is not installed: run `make engines` (or `python course.py engines`)"


def short_names(n_layers: int = 6) -> list[str]:
    """The 36 encoder Linear short names a plan covers, in file order.

    >>> short_names()[:3], len(short_names())
    (['L0.query', 'L0.key', 'L0.value'], 36)
    """
    return [f"L{i}.{k}" for i in range(n_layers) for k in _KINDS]


def plan_for(fmt: str, n_layers: int = 6, hidden: int = 384) -> dict[str, str]:
    """One format for every Linear weight; ``Q4_K`` only where a row (``in_features``) is a multiple of 256
    (``L*.output``, 1536 wide), and Q4_0 on the 384-wide ones. llama.cpp's own quantizer falls back too, to Q5_0
    (``src/llama-quant.cpp``), which qlesson does not write: Q4_0 keeps the mix at 4.5 bits per weight."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {FORMATS}")
    in_features = {k: (4 * hidden if k == "output" else hidden) for k in _KINDS}
    return {
        s: ("Q4_0" if fmt == "Q4_K" and in_features[s.split(".", 1)[1]] % 256 else fmt) for s in short_names(n_layers)
    }


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_gguf` wrote: the file, its size, the plan, and the float32 Linear weights it holds."""

    path: Path
    size_bytes: int
    plan: dict[str, str]
    deq: dict[str, torch.Tensor]


@functools.cache
def _name_map() -> Any:
    import gguf

    return gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, 64)


def gguf_name(short: str) -> str:
    """llama.cpp's tensor name of a course short name, from gguf's own BERT name map.

    >>> gguf_name("L2.query"), gguf_name("L5.attention output"), gguf_name("L0.output")
    ('blk.2.attn_q.weight', 'blk.5.attn_output.weight', 'blk.0.ffn_down.weight')
    """
    name = _name_map().get_name(hf_name(short) + ".weight", (".weight",))
    if name is None or short == "pooler":
        raise ValueError(f"{short!r} has no tensor in llama.cpp's BERT GGUF (the converter drops the pooler)")
    return name


def _check_plan(plan: Mapping[str, str], shapes: Mapping[str, tuple[int, int]]) -> dict[str, str]:
    unknown = sorted(set(plan) - set(shapes))
    if unknown:
        raise ValueError(f"plan names {unknown}, which are not encoder Linear weights; use names from short_names()")
    out = {}
    for s in shapes:
        fmt = plan.get(s, "F32")
        if fmt not in FORMATS:
            raise ValueError(f"plan[{s!r}] = {fmt!r}; expected one of {FORMATS}")
        k = shapes[s][1]
        if k % ROW_BLOCK[fmt]:
            raise ValueError(
                f"plan[{s!r}] = {fmt!r}, but its rows have {k} values, not a multiple of {ROW_BLOCK[fmt]}: "
                "use Q8_0 or Q4_0 there (plan_for('Q4_K') does)"
            )
        out[s] = fmt
    return out


def phantom(token: str, control: bool) -> str:
    """A WordPiece token in the converter's "phantom space" spelling, the one llama.cpp's WPM tokenizer reads:
    a word-start piece gets U+2581 in front, a continuation piece loses its ``##``, control tokens stay.

    >>> phantom("quant", False), phantom("##ization", False), phantom("[CLS]", True)
    ('▁quant', 'ization', '[CLS]')
    """
    return token if control else token[2:] if token.startswith("##") else "\u2581" + token


def _write_vocab(writer: Any, tokenizer: Any) -> None:
    """The vocabulary the way ``convert_hf_to_gguf.py``'s ``BertModel.set_vocab`` writes it."""
    import gguf

    reverse = {i: t for t, i in tokenizer.vocab.items()}
    special = set(tokenizer.all_special_ids)
    tokens, types = [], []
    for i in range(len(reverse)):
        tok = reverse[i]
        control = i in special
        types.append(gguf.TokenType.CONTROL if control else gguf.TokenType.NORMAL)
        tokens.append(phantom(tok, control))
    writer.add_token_type_count(2)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("bert-bge")  # the converter's hash of this (bert-base-uncased) tokenizer's output
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    log = logging.getLogger("gguf.vocab")  # it warns that GGUF has no key for the [CLS] id (llama.cpp uses bos)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory() as d:  # special ids and add_* flags as gguf.SpecialVocab reads them
            tokenizer.save_pretrained(d)
            gguf.SpecialVocab(d, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)
    finally:
        log.setLevel(level)


def export_gguf(model: Any, path: str | os.PathLike[str], plan: Mapping[str, str]) -> ExportResult:
    """Write ``model`` (``load_minilm()``) as a BERT GGUF with each Linear weight in ``plan[short]`` (default F32)."""
    import gguf

    from qlesson.quant import kquants

    bert = bert_of(model)
    cfg = bert.config
    linears = {s: bert.get_submodule(hf_name(s)).weight for s in short_names(cfg.num_hidden_layers)}
    plan = _check_plan(plan, {s: tuple(w.shape) for s, w in linears.items()})
    path = Path(path)
    w = gguf.GGUFWriter(str(path), ARCH)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_layer_norm_eps(cfg.layer_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    _write_vocab(w, model.tokenizer)
    names = _name_map()
    by_hf = {hf_name(s) + ".weight": s for s in linears}
    for hf, p in bert.state_dict().items():
        if hf.startswith("pooler.") or hf.endswith("position_ids"):
            continue
        name = names.get_name(hf, (".weight", ".bias"))
        if name is None:
            raise ValueError(f"no llama.cpp BERT tensor for {hf!r}; is this a BertModel?")
        x = p.detach().to(torch.float32).numpy()
        fmt = plan.get(by_hf.get(hf, ""), "F32")
        if fmt == "F32":
            w.add_tensor(name, x)
        else:
            raw = kquants.quantize(x, fmt) if fmt == "Q4_K" else formats.quantize(x, fmt)
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=gguf.GGMLQuantizationType[fmt])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ExportResult(path, path.stat().st_size, plan, read_linear_weights(path))


def read_linear_weights(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The float32 ``[out, in]`` Linear weights a BERT GGUF holds, dequantized with qlesson's own code."""
    import gguf

    tensors = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}
    n_layers = sum(1 for n in tensors if n.endswith("attn_q.weight"))
    out = {}
    for s in short_names(n_layers):
        t = tensors[gguf_name(s)]
        fmt = t.tensor_type.name
        rows = int(t.shape[1])
        data = np.asarray(t.data).reshape(rows, -1)
        x = data.astype(np.float32) if fmt == "F32" else formats.dequantize(data, fmt)
        out[s] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    return out


def check_gguf(path: str | os.PathLike[str], model: Any | None = None) -> dict[str, str]:
    """Read a BERT GGUF back and raise a ValueError naming what llama.cpp would abort (or crash) on.

    Checks the required keys and the architecture, every expected tensor's presence and shape (against
    ``model``'s config when given, else the file's own keys), row lengths divisible by the type's block,
    and each tensor's byte size. Returns the format of every Linear weight (short name -> type name).
    """
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError, IndexError) as e:
        raise ValueError(f"{path}: not a readable GGUF file ({e}); write it again with export_gguf") from e
    fields = reader.fields
    missing = [k for k in REQUIRED_KEYS if k not in fields]
    if missing:
        raise ValueError(f"{path}: missing GGUF key(s) {missing}; llama.cpp cannot load it: write it with export_gguf")

    def key(k: str) -> Any:
        return fields[k].contents()

    if key("general.architecture") != ARCH:
        raise ValueError(f"{path}: architecture is {key('general.architecture')!r}, expected {ARCH!r}")
    n_layers, d, ff, ctx = (
        int(key(f"bert.{k}")) for k in ("block_count", "embedding_length", "feed_forward_length", "context_length")
    )
    if model is not None:
        cfg = bert_of(model).config
        want = (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size, cfg.max_position_embeddings)
        if (n_layers, d, ff, ctx) != want:
            raise ValueError(
                f"{path}: (layers, hidden, ffn, context) = {(n_layers, d, ff, ctx)} but the model has {want}: "
                "this file is not this model; export it again"
            )
    n_vocab, n_types = len(fields["tokenizer.ggml.tokens"].data), int(key("tokenizer.ggml.token_type_count"))
    expected = _expected_tensors(n_layers, d, ff, ctx, n_vocab, n_types)
    words = [bytes(fields["tokenizer.ggml.tokens"].parts[i]) for i in fields["tokenizer.ggml.tokens"].data[:2000]]
    if key("tokenizer.ggml.model") == "bert" and not any(w.startswith("\u2581".encode()) for w in words):
        raise ValueError(
            f"{path}: no vocabulary token starts with U+2581: the WordPiece vocabulary is not in llama.cpp's phantom-"
            "space spelling (gguf_bert.phantom), and llama.cpp would crash tokenizing; export it again"
        )
    tensors = {t.name: t for t in reader.tensors}
    absent = [n for n in expected if n not in tensors]
    if absent:
        raise ValueError(f"{path}: missing tensor(s) {absent[:4]}{'...' if len(absent) > 4 else ''}; export again")
    linear = {gguf_name(s): s for s in short_names(n_layers)}
    starts = sorted(int(t.data_offset) for t in reader.tensors) + [os.path.getsize(path)]
    room = {
        int(t.data_offset): starts[starts.index(int(t.data_offset)) + 1] - int(t.data_offset) for t in reader.tensors
    }
    align = int(fields["general.alignment"].contents()) if "general.alignment" in fields else 32
    result = {}
    for name, shape in expected.items():
        t = tensors[name]
        fmt = _check_tensor(path, name, t, shape, name in linear, room[int(t.data_offset)], align)
        if name in linear:
            result[linear[name]] = fmt
    return result


def _expected_tensors(
    n_layers: int, d: int, ff: int, ctx: int, n_vocab: int, n_types: int
) -> dict[str, tuple[int, ...]]:
    """Every tensor a BERT GGUF must hold, with its shape (ne order: the row length first)."""
    expected = {
        "token_embd.weight": (d, n_vocab),
        "token_types.weight": (d, n_types),
        "position_embd.weight": (d, ctx),
        "token_embd_norm.weight": (d,),
        "token_embd_norm.bias": (d,),
    }
    shapes = {"attn_q": (d, d), "attn_k": (d, d), "attn_v": (d, d), "attn_output": (d, d), "ffn_up": (d, ff)}
    shapes["ffn_down"] = (ff, d)
    bias_len = {"attn_q": d, "attn_k": d, "attn_v": d, "attn_output": d, "ffn_up": ff, "ffn_down": d}
    for i in range(n_layers):
        for k, shape in shapes.items():
            expected[f"blk.{i}.{k}.weight"] = shape
            expected[f"blk.{i}.{k}.bias"] = (bias_len[k],)
        for k in ("attn_output_norm", "layer_output_norm"):
            expected[f"blk.{i}.{k}.weight"] = expected[f"blk.{i}.{k}.bias"] = (d,)
    return expected


def _check_tensor(
    path: str | os.PathLike[str], name: str, t: Any, shape: tuple[int, ...], is_linear: bool, have: int, align: int
) -> str:
    """One tensor's shape, type, block divisibility and byte size against what llama.cpp will read; its type name."""
    import gguf

    got = tuple(int(v) for v in t.shape)
    if got != shape:
        raise ValueError(f"{path}: tensor {name} has shape (ne) {got}, the model needs {shape}; export again")
    fmt = t.tensor_type.name
    if fmt not in FORMATS or (fmt != "F32" and not is_linear):
        raise ValueError(
            f"{path}: tensor {name} is {fmt}; llama.cpp's BERT here takes F32 or a plan format "
            f"{FORMATS[1:]} on Linear weights only"
        )
    block, type_size = gguf.GGML_QUANT_SIZES[t.tensor_type]
    if got[0] % block:
        raise ValueError(
            f"{path}: tensor {name} ({fmt}) has rows of {got[0]} values, not a multiple of its block {block}: "
            "use Q8_0 or Q4_0 for it (plan_for('Q4_K') does)"
        )
    want_bytes = int(np.prod(got)) // block * type_size
    if not want_bytes <= have < want_bytes + align:
        raise ValueError(
            f"{path}: tensor {name} has {have} bytes in the file, but {fmt} {got} needs {want_bytes}: "
            "its type, shape or data is corrupted or truncated; export again"
        )
    return fmt


def load_llama(path: str | os.PathLike[str], n_threads: int = 1, n_ctx: int = 512) -> Any:
    """A checked file loaded in ``llama_cpp.Llama`` for embeddings (ValueError from :func:`check_gguf` first)."""
    check_gguf(path)
    try:
        import llama_cpp
    except ImportError as e:
        raise ImportError(ENGINES_HINT) from e
    return llama_cpp.Llama(
        str(path),
        embedding=True,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_ubatch=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        verbose=False,
    )


def run_gguf(path_or_llama: Any, sentences: Sequence[str] = EVAL_SENTENCES, n_threads: int = 1) -> np.ndarray:
    """Unit-normalised float64 embeddings ``[len(sentences), d]`` from llama.cpp (mean pooling from the file).

    llama.cpp returns the pooled vector un-normalised (``Llama.embed(normalize=False)``); sentence-transformers'
    MiniLM ends in a Normalize module, so they are normalised here.
    """
    llm = load_llama(path_or_llama, n_threads) if isinstance(path_or_llama, (str, os.PathLike)) else path_or_llama
    e = np.asarray(llm.embed(list(sentences), normalize=False), dtype=np.float64)
    if e.shape[0] != len(sentences) or not np.all(np.isfinite(e)):
        raise ValueError(
            f"llama.cpp returned {e.shape} embeddings with non-finite values for {len(sentences)} "
            "sentences; check the file with check_gguf"
        )
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def losses(model: Any, fmt: str, folder: str | Path, float_emb: np.ndarray) -> dict[str, Any]:
    """One row of lesson 11's llama.cpp table: MiniLM written in ``fmt`` (every Linear weight) under ``folder``,
    and ``1 - mean cosine`` to ``float_emb`` for the weight-only simulation, the simulation with each quantized
    layer's input rounded to Q8_0 as llama.cpp's CPU kernels round it, and the engine itself. ``F32`` is the
    control: llama.cpp rounds no activation there, and its engine loss is printed as a bound where it is noise."""
    from qlesson.engines.common import cosines, reference_embeddings

    written = export_gguf(model, Path(folder) / f"{fmt}.gguf", plan_for(fmt))
    embeddings = {
        "engine": run_gguf(written.path),
        "weights": reference_embeddings(model, written.deq),
        "rounded": reference_embeddings(model, written.deq, round_activations=fmt != "F32"),
    }
    loss = {k: 1 - float(cosines(e, float_emb).mean()) for k, e in embeddings.items()}
    quantized = fmt != "F32"
    return {
        "format": fmt,
        "file MB": written.size_bytes / 1e6,
        "simulation: weights": loss["weights"],
        "+ activations to Q8_0": loss["rounded"] if quantized else "-",
        "engine": loss["engine"] if loss["engine"] > 1e-5 else "below 1e-5",
        "engine / weights": loss["engine"] / loss["weights"] if quantized else "-",
    }
