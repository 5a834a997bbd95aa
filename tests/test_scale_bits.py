"""Lesson 08's scale-format study: what each way of storing a block's scale costs."""

import pytest
import torch

from qlesson.teach import scale_bits


def _layer(seed=0, rows=16, k=256):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, k, generator=g) * torch.rand(rows, 1, generator=g)


def test_fp32_scales_are_the_ideal_and_finer_formats_lose_less():
    rows = {r["scale format"]: r for r in scale_bits.scale_rows(_layer(), block=32)}
    assert rows["fp32"]["median scale error"] < 1e-7
    assert rows["fp16"]["median scale error"] <= 2**-11  # half a step of fp16's 10-bit mantissa
    assert rows["6-bit x fp16"]["SQNR dB"] > rows["E8M0 rceil"]["SQNR dB"] + 1
    assert rows["E4M3 x fp32"]["worst scale error"] <= 1 / 16 + 1e-9  # 3 mantissa bits, rounded to nearest
    assert rows["E8M0 rceil"]["worst scale error"] < 1  # a power of two at or above: up to 2x


def test_e8m0_up_never_clips_and_is_a_power_of_two():
    ideal = torch.tensor([[0.3, 1.0, 0.013, 5.5]], dtype=torch.float64)
    s = scale_bits.stored_scales(ideal, "E8M0 rceil")
    assert bool((s >= ideal).all()) and bool((torch.log2(s) == torch.round(torch.log2(s))).all())


def test_bits_per_weight_count_every_stored_scale():
    x = _layer(k=256)  # 16 rows x 8 blocks of 32 = 128 blocks, 16 super-blocks of 8
    rows = {r["scale format"]: r for r in scale_bits.scale_rows(x, block=32, super_blocks=8)}
    assert rows["fp16"]["scale bits / weight"] == 0.5
    assert rows["6-bit x fp16"]["scale bits / weight"] == (6 * 128 + 16 * 16) / x.numel()
    assert rows["E4M3 x fp32"]["scale bits / weight"] == (8 * 128 + 32) / x.numel()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"block": 24}, "multiple of block"),
        ({"block": 32, "super_blocks": 4}, "super_blocks=4"),
        ({"bits": 1}, "bits=1"),
    ],
)
def test_bad_arguments_say_what_works(kwargs, words):
    with pytest.raises(ValueError, match=words):
        scale_bits.scale_rows(_layer(rows=3, k=64), **kwargs)
    with pytest.raises(ValueError, match="not one of"):
        scale_bits.stored_scales(torch.ones(1, 1), "bf16")


def test_floor_power_of_two_puts_the_block_max_in_4_to_8_ticks_and_may_clip():
    amax = torch.tensor([[0.3, 1.0, 0.013, 5.5, 0.7, 4.0, 7.9]], dtype=torch.float64)
    s = scale_bits.stored_scales(amax / 7, "E8M0 floor", amax=amax, qmax=7)
    ticks = amax / s
    assert bool((ticks >= 4).all()) and bool((ticks < 8).all())
    assert bool((torch.log2(s) == torch.round(torch.log2(s))).all())
    assert bool((ticks > 7.5).any())  # those blocks clip their top weight at 7


def test_eight_bit_sub_scales_are_finer_than_six_bit_ones():
    rows = {r["scale format"]: r for r in scale_bits.scale_rows(_layer(), block=16, bits=6, super_blocks=16)}
    assert rows["int8 x fp16"]["median scale error"] < rows["6-bit x fp16"]["median scale error"]
    assert rows["int8 x fp16"]["SQNR dB"] > rows["6-bit x fp16"]["SQNR dB"]
    assert rows["int8 x fp16"]["scale bits / weight"] == (8 * 256 + 16 * 16) / (16 * 256)


def test_fp4_codes_under_e4m3_scales_are_nvfp4_and_under_e8m0_are_mxfp4_rceil_and_floor():
    import numpy as np

    from qlesson.quant import microscaling

    x = _layer(seed=3, rows=8, k=128) * 0.05
    err = lambda v: float(((torch.as_tensor(v).double() - x.double()) ** 2).sum())  # noqa: E731
    signal = float(x.double().square().sum())
    nv = scale_bits.scale_rows(x, block=16, codes="E2M1", formats=("E4M3 x fp32",))[0]["SQNR dB"]
    mx = scale_bits.scale_rows(x, block=32, codes="E2M1", formats=("E8M0 rceil",))[0]["SQNR dB"]
    nv_ref = 10 * np.log10(signal / err(microscaling.quantize_nvfp4(x.numpy()).values()))
    mx_ref = 10 * np.log10(signal / err(microscaling.quantize_mx(x.numpy(), "rceil").values()))
    assert abs(nv - nv_ref) < 1e-6 and abs(mx - mx_ref) < 1e-6
    fl = scale_bits.scale_rows(x, block=32, codes="E2M1", formats=("E8M0 floor",))[0]["SQNR dB"]
    fl_ref = 10 * np.log10(signal / err(microscaling.quantize_mx(x.numpy(), "floor").values()))
    assert abs(fl - fl_ref) < 1e-6


def test_grid_rows_sum_errors_over_layers_and_a_float_grid_shrugs_off_a_power_of_two():
    layers = {"a": _layer(seed=1), "b": _layer(seed=2) * 3}
    rows = {r["scale format"]: r for r in scale_bits.grid_rows(layers, block=32, formats=("fp32", "E8M0 rceil"))}
    one = scale_bits.scale_rows(layers["a"], block=32, formats=("fp32",))[0]["SQNR dB"]
    assert rows["fp32"]["int4 -7..7 SQNR dB"] != one  # pooled over both layers, not layer a alone
    loss = {c: rows["fp32"][c] - rows["E8M0 rceil"][c] for c in ("int4 -7..7 SQNR dB", "FP4 E2M1 SQNR dB")}
    assert loss["FP4 E2M1 SQNR dB"] < loss["int4 -7..7 SQNR dB"]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"codes": "nf4"}, "codes='nf4'"),
        ({"codes": "E2M1", "bits": 6}, "bits=6"),
        ({"formats": ("fp32", "bf16")}, "bf16"),
        ({"formats": ()}, "pick one or more"),
    ],
)
def test_bad_codes_and_formats_say_what_works(kwargs, words):
    with pytest.raises(ValueError, match=words):
        scale_bits.scale_rows(_layer(rows=2, k=64), **kwargs)


def test_grid_rows_refuses_no_layers():
    with pytest.raises(ValueError, match="empty"):
        scale_bits.grid_rows({})


@pytest.mark.parametrize("bits, block, super_blocks", [(4, 32, 8), (4, 16, 8), (6, 16, 16)])
def test_more_sub_scale_bits_never_cost_more_than_noise(bits, block, super_blocks):
    sweep = ("4-bit x fp16", "5-bit x fp16", "6-bit x fp16", "int8 x fp16", "fp32")
    for seed in (0, 1, 2):
        rows = scale_bits.scale_rows(
            _layer(seed=seed), block=block, bits=bits, super_blocks=super_blocks, formats=sweep
        )
        sqnr = [r["SQNR dB"] for r in rows]
        assert all(b >= a - 0.05 for a, b in zip(sqnr, sqnr[1:], strict=False)), sqnr
        assert sqnr[-1] - sqnr[0] > 0  # 4-bit sub-scales cost something against the ideal


def test_narrow_sub_scales_count_their_bits_and_stay_in_range():
    x = _layer(k=256)  # 128 blocks of 32, 16 super-blocks of 8
    rows = {r["scale format"]: r for r in scale_bits.scale_rows(x, block=32, super_blocks=8)}
    for fmt, b in (("4-bit x fp16", 4), ("5-bit x fp16", 5)):
        assert rows[fmt]["scale bits / weight"] == (b * 128 + 16 * 16) / x.numel()
    ideal = x.double().reshape(16, 8, 32).abs().amax(-1) / 7  # super-blocks of 8 blocks, one per row here
    s = scale_bits.stored_scales(ideal, "4-bit x fp16")
    d = (ideal.amax(-1, keepdim=True) / 15).half().double()
    steps = s / d
    assert bool((steps == torch.round(steps)).all()) and int(steps.min()) >= 1 and int(steps.max()) <= 15


def test_chain_adds_up_and_refuses_a_lone_start():
    line = scale_bits.chain([("a", 10.0), ("b", 11.5), ("c", 11.0)])
    assert line == "a 10.00 dB, b +1.50, c -0.50: 11.00 dB"
    with pytest.raises(ValueError, match="at least one step"):
        scale_bits.chain([("a", 10.0)])
    with pytest.raises(ValueError, match="finite"):
        scale_bits.chain([("a", 10.0), ("b", float("inf"))])


def test_clip_false_keeps_codes_past_qmax_and_only_matters_where_a_scale_rounded_down():
    x = _layer(seed=4)
    fmts = ("fp32", "E8M0 floor", "E8M0 rceil")
    clipped, free = (
        {r["scale format"]: r["SQNR dB"] for r in scale_bits.scale_rows(x, block=16, bits=6, formats=fmts, clip=c)}
        for c in (True, False)
    )
    assert free["fp32"] == clipped["fp32"] and free["E8M0 rceil"] == clipped["E8M0 rceil"]  # never past qmax
    assert free["E8M0 floor"] > clipped["E8M0 floor"]  # blocks whose max lands past 31.5 ticks clip their top code
    with pytest.raises(ValueError, match="integer codes"):
        scale_bits.scale_rows(x, block=16, codes="E2M1", clip=False)


def test_rule_rows_give_qmax_over_2m_and_the_loss_follows_the_move():
    rows = scale_bits.rule_rows(_layer(seed=5), block=16, bits=6, super_blocks=16)
    by = {r["scale format"]: r for r in rows}
    for fmt, m in scale_bits.SUB_MAX.items():
        assert by[fmt]["steps m"] == m and by[fmt]["bound (ticks)"] == 31 / (2 * m)
    assert by["fp16"]["bound (ticks)"] == "" and by["E4M3 x fp32"]["steps m"] == ""
    sweep = [by[f] for f in ("4-bit x fp16", "5-bit x fp16", "6-bit x fp16", "int8 x fp16")]
    moves = [r["median move (ticks)"] for r in sweep]
    assert moves == sorted(moves, reverse=True)  # more steps, a smaller move
    assert sweep[0]["SQNR loss dB"] > sweep[-1]["SQNR loss dB"] > 0
    assert all(r["clipping dB"] >= 0 for r in rows)  # unclamped codes never do worse
