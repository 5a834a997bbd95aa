"""The exercise checks accept right answers and reject typical wrong ones, naming the mistake."""

import pytest
import torch

from qlesson.course.checking import CheckFailed, NotAttempted
from qlesson.course.tasks import check, tasks


# Wrong answers written the way learners write them (not the checker's own mistake functions).
def per_tensor_scale_for_channels(w, bits):
    return torch.full((w.shape[0],), float(w.abs().max())) / (2 ** (bits - 1) - 1)


WRONG = {
    "01.symmetric_scale": [
        (lambda x, bits: x.abs().max() / 2 ** (bits - 1), "2**(bits-1) instead of 2**(bits-1) - 1"),
        (lambda x, bits: x.abs().max() / (2**bits - 1), "2**bits - 1"),
    ],
    "01.quantize_symmetric": [
        (lambda x, scale, bits: (x / scale).round(), "forgot to clamp"),
        (lambda x, scale, bits: (x / scale).int().float().clamp(-7, 7), "truncated toward zero"),
    ],
    "01.asymmetric_qparams": [
        (
            lambda x, bits: (
                (max(x.max(), 0) - min(x.min(), 0)) / (2**bits - 1),
                torch.round(min(x.min(), 0) / ((max(x.max(), 0) - min(x.min(), 0)) / (2**bits - 1))),
            ),
            "wrong sign",
        ),
        (
            lambda x, bits: (
                (x.max() - x.min()) / (2**bits - 1),
                torch.round(-x.min() / ((x.max() - x.min()) / (2**bits - 1))),
            ),
            "did not widen",
        ),
    ],
    "02.per_tensor_scale": [
        (lambda w, bits: w.abs().amax(1) / 7, "per-channel"),
        (lambda w, bits: w.abs().max() / 8, "2**(bits-1) instead"),
    ],
    "02.per_channel_scale": [
        (per_tensor_scale_for_channels, "per-tensor"),
        (lambda w, bits: w.abs().max(dim=0).values / (2 ** (bits - 1) - 1), "wrong axis"),
        (lambda w, bits: w.abs().amax(1) / 2 ** (bits - 1), "2**(bits-1) instead"),
    ],
    "02.quantize_per_channel": [
        (
            lambda w, bits: (
                (w / (w.abs().max() / 7)).round().clamp(-7, 7),
                w.abs().max() / 7 * torch.ones(w.shape[0]),
            ),
            "per-tensor",
        ),
        (
            lambda w, bits: (
                (w / (w.abs().amax(1, keepdim=True) / 2 ** (bits - 1)))
                .round()
                .clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1),
                w.abs().amax(1) / 2 ** (bits - 1),
            ),
            "2**(bits-1) instead",
        ),
    ],
    "02.row_maes": [
        (lambda w, bits: tuple(reversed(_good("02.row_maes")(w, bits))), "wrong order"),
        (
            lambda w, bits: tuple(torch.full((w.shape[0],), float(m.mean())) for m in _good("02.row_maes")(w, bits)),
            "whole tensor",
        ),
    ],
    "03.channel_absmax": [
        (lambda w: w.abs().max(0).values, "wrong axis"),
        (lambda w: w.max(1).values, "forgot abs"),
    ],
    "03.outlier_channel": [
        (lambda w: int(w.abs().max(0).values.argmax()), "input axis"),
        (lambda w: int(w.max(1).values.argmax()), "forgot abs"),
    ],
    "03.conv_scales": [
        (lambda w, bits: torch.ones(w.shape[0]) * w.abs().max() / (2 ** (bits - 1) - 1), "per-tensor"),
        (lambda w, bits: w.abs().amax(dim=(0, 2, 3)) / (2 ** (bits - 1) - 1), "wrong axis"),
    ],
    "04.quantize_per_group": [
        (
            lambda w, bits, g: (
                _good("02.quantize_per_channel")(w, bits)[0],
                _good("02.per_channel_scale")(w, bits).unsqueeze(1).repeat(1, w.shape[1] // g),
            ),
            "per-channel",
        ),
        (
            lambda w, bits, g: tuple(t.T for t in _good("04.quantize_per_group")(w.T.contiguous(), bits, g)),
            "wrong axis",
        ),
    ],
    "04.metadata_bytes": [
        (lambda n, k, g, sb: n * sb, "per-channel"),
        (lambda n, k, g, sb: k // g * sb, "forgot the N rows"),
    ],
    "04.bits_per_weight": [
        (lambda bits, g, sb: bits, "left out the scale"),
        (lambda bits, g, sb: bits + (sb // 8) / g, "bytes, not bits"),
    ],
    "04.q4_0_bits_per_weight": [(4.0, "left out the fp16 scale"), (4.125, "group of 128")],
    "05.asymmetric_zero_point": [
        (lambda x, bits: -_good("05.asymmetric_zero_point")(x, bits), "wrong sign"),
        (lambda x, bits: torch.round(-x.min() * (2**bits - 1) / (x.max() - x.min())), "did not widen"),
    ],
    "05.per_token_scales": [
        (lambda x, bits: x.abs().amax(0) / (2 ** (bits - 1) - 1), "per feature"),
        (lambda x, bits: x.abs().max().repeat(x.shape[0]) / (2 ** (bits - 1) - 1), "per-tensor"),
    ],
    "05.smooth_factors": [
        (lambda x, w, a: x.abs().amax(0) ** (1 - a) / w.abs().amax(0) ** a, "swapped alpha"),
        (lambda x, w, a: x.abs().amax(0) ** a / w.abs().amax(1).mean() ** (1 - a), "rows of w"),
    ],
    "06.scale_after_gemm": [
        (lambda x, q, s: x @ q.T / s, "divided"),
        (lambda x, q, s: x @ q.T, "forgot the scales"),
    ],
    "06.group_gemm": [
        (lambda x, q, s, g: (x @ q.T) * s.mean(dim=1), "one scale per row"),
        (lambda x, q, s, g: x @ (q * s.repeat(1, g)).T, "repeat instead of repeat_interleave"),
    ],
    "06.w8a8_rescale": [
        (lambda acc, s_x, s_w: acc * s_w, "only the weight scales"),
        (lambda acc, s_x, s_w: acc * s_x.unsqueeze(1), "only the activation scales"),
    ],
}


def _good(task_id):
    return tasks()[task_id].reference


def test_every_task_has_at_least_two_wrong_answers():
    assert set(WRONG) == set(tasks())
    assert all(len(v) >= 2 for v in WRONG.values())


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_reference_passes(task_id, capsys):
    t = tasks()[task_id]
    check(task_id, t.reference() if t.is_value else t.reference)
    out = capsys.readouterr().out
    assert out.count("✓") == len(t.cases)


@pytest.mark.parametrize(("task_id", "k"), [(t, k) for t, v in sorted(WRONG.items()) for k in range(len(v))])
def test_wrong_answer_fails_and_names_the_mistake(task_id, k, capsys):
    answer, words = WRONG[task_id][k]
    with pytest.raises(CheckFailed) as err:
        check(task_id, answer)
    message = str(err.value)
    assert "mistake:" in message and words in message, message
    out = capsys.readouterr().out
    assert "came back:" in out and "expected:" in out and "hint:" in out


@pytest.mark.parametrize("stub", [None, ..., lambda *a: None, lambda *a: ...])
def test_stubs_are_not_attempted(stub):
    with pytest.raises(NotAttempted, match="not attempted yet"):
        check("02.per_channel_scale", stub)


def test_not_implemented_is_not_attempted():
    def stub(w, bits):
        raise NotImplementedError

    with pytest.raises(NotAttempted):
        check("02.per_channel_scale", stub)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        check("nope", 1)


def test_friendly_errors_render_without_traceback():
    with pytest.raises(CheckFailed) as err:
        check("04.q4_0_bits_per_weight", 4.0)
    rendered = err.value._render_traceback_()
    assert rendered[0].startswith("CheckFailed: 04.q4_0_bits_per_weight case 1 failed")
