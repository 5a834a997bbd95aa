"""Lesson 11's tasks are tied to the real formats: the references agree with the files the engines read."""

import numpy as np
import pytest
import torch

from qlesson.course import checking
from qlesson.engines import onnx_quant
from qlesson.lessons import l11_your_model_in_an_engine as l11
from qlesson.quant import packed

G = torch.Generator().manual_seed(11)


def test_reading_matmulnbits_gives_back_the_packed_layer():
    """The task's reference reads ORT's own packing (onnx_quant.pack_nibbles) of qlesson's int4 codes exactly."""
    linear = torch.nn.Linear(96, 5)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(5, 96, generator=G))
    layer = packed.QuantLinear.from_linear(linear, "int4-g32")
    u = (layer.int_codes() + 8).numpy().astype(np.uint8)
    B = onnx_quant.pack_nibbles(u, 32)
    scales = layer.scale.float().reshape(-1).numpy()
    assert torch.equal(l11._read_matmulnbits(B, scales, 32), layer.weight())
    assert not torch.equal(l11._read_matmulnbits(B, scales, 32, halves=True), layer.weight())


def test_file_bytes_counts_what_a_packed_model_stores():
    """The reference of 11.file_bytes equals the bytes QuantLinear buffers hold, plus float32 for everything else."""
    model = torch.nn.Sequential(torch.nn.Linear(100, 6), torch.nn.Linear(6, 100), torch.nn.Linear(128, 64))
    plan = {"0": "int3-channel", "1": "int4-tensor", "2": "int4-g32-asym"}
    q = packed.quantize_model(model, plan)
    stored = 0
    for _, m in packed.quant_layers(q).values():
        b = m.nbytes()
        stored += b["codes"] + b["scales"] + b["zero_points"] + 4 * m.bias.numel()
    linears = {k: tuple(m.weight.shape) for k, m in model.named_children()}
    assert l11._file_bytes(linears, {}, plan) == stored
    assert l11._file_bytes(linears, {"table": (50, 100)}, plan) == stored + 4 * 5000


def test_file_bytes_of_minilm_matches_the_lesson_table():
    """Lesson 11's section 1 counts 53.51 MB for MiniLM at its plan; the task's count of the same shapes agrees."""
    linears, others = l11._bert(30522, 384, 6, 1536)
    linears["pooler"] = (384, 384)
    plan = {k: "int4-g32" if k.endswith("intermediate") else "int4-g128" for k in linears}
    total = l11._file_bytes(linears, others, plan)
    assert total == 53_511_936  # the lesson prints 53.51 MB, from the packed model's buffers


def _task(judge):
    return checking.Task(
        "t.plan", "a plan", lambda: None, [checking.Case((), "one case")], "hint", is_value=True, judge=judge
    )


def test_a_judged_task_passes_what_the_judge_accepts_and_names_what_it_refuses():
    task = _task(lambda plan: None if plan.get("*") == "ok" else f"{plan} is refused")
    assert checking.evaluate(task, {"*": "ok"}).passed
    v = checking.evaluate(task, {"*": "no"})
    assert v.status == "fail" and v.mistake == "{'*': 'no'} is refused" and "came back:" in v.detail
    hidden = checking.Task(
        "t.plan",
        "a plan",
        lambda: None,
        [checking.Case((), "secret", hidden=True)],
        "hint",
        is_value=True,
        judge=lambda plan: "refused",
    )
    v = checking.evaluate(hidden, {"*": "no"})
    assert v.status == "fail" and "came back:" not in v.detail and "secret" not in v.detail
    assert checking.evaluate(task, ...).status == "not attempted"


@pytest.mark.slow
def test_the_challenge_refuses_a_plan_over_budget_and_the_baseline():
    t = next(t for t in l11.TASKS if t.task_id == "11.plan")
    assert "over the budget" in checking.evaluate(t, {"*": "int4-g32-asym"}).summary
    assert "does not beat" in checking.evaluate(t, {"*": "int4-g128"}).summary
    assert "does not beat" in checking.evaluate(t, {"*": "int4-g32"}).summary  # the starter plan is the bar
    assert checking.evaluate(t, l11.SOLUTION_PLAN).passed
    assert packed.plan_bits(l11._encoder(), l11.SOLUTION_PLAN) <= l11.BUDGET
    assert l11.plan_quality(l11.SOLUTION_PLAN, l11.HELD_OUT_SENTENCES) >= l11.STRETCH


def test_the_held_out_sentences_are_new():
    from qlesson.teach.activations import CALIBRATION_SENTENCES
    from qlesson.teach.calibration import PARAGRAPHS
    from qlesson.teach.eval_text import EVAL_SENTENCES
    from qlesson.teach.models import SENTENCES

    held = set(l11.HELD_OUT_SENTENCES)
    assert len(held) == 24 and not held & set(SENTENCES) and not held & set(EVAL_SENTENCES)
    course = " ".join([*SENTENCES, *EVAL_SENTENCES, *PARAGRAPHS, *CALIBRATION_SENTENCES])
    runs = [" ".join(w[i : i + 6]) for s in held for w in [s.split()] for i in range(len(w) - 5)]
    assert [r for r in runs if r in course] == []  # no run of six words shared with the course's texts


def test_the_signed_nibble_and_the_fp16_float_layer_are_named():
    t = next(t for t in l11.TASKS if t.task_id == "11.read_matmulnbits")
    v = checking.evaluate(t, lambda B, s, g: l11._read_matmulnbits(B, s, g, signed=True))
    assert v.mistake and "signed int4" in v.mistake
    v = checking.evaluate(t, lambda B, s, g: l11._read_matmulnbits(B, s, g, zero_point=7))
    assert v.mistake and v.mistake.startswith("subtracted 7")
    t = next(t for t in l11.TASKS if t.task_id == "11.file_bytes")
    v = checking.evaluate(t, lambda a, b, p: l11._file_bytes(a, b, p, float16=True))
    assert v.mistake and "16 bits" in v.mistake
