"""Lesson 09, section 3: the split control also scores the same fit on a different text."""

import torch

from qlesson.quant.granularity import PerChannel, PerGroup
from qlesson.teach import smarter


def test_the_held_out_column_scores_the_same_fit_on_other_tokens():
    g = torch.Generator().manual_seed(0)
    w = {"a": torch.randn(3, 8, generator=g, dtype=torch.float64)}
    fitted, unseen = ({"a": torch.randn(6, 8, generator=g, dtype=torch.float64)} for _ in range(2))
    variants = [("RTN", 4, PerChannel(0)), ("GPTQ", 4, PerChannel(0))]
    plain, _ = smarter.split_by_layer(w, fitted, unseen, variants)
    rows, _ = smarter.split_by_layer(w, fitted, unseen, variants, held_out=unseen)
    assert all("err on held-out text" not in r for r in plain)
    for r, p in zip(rows, plain, strict=True):
        assert r["err on held-out text"] == r["err on other half"]  # the same tokens: the same number
        assert {k: v for k, v in r.items() if k != "err on held-out text"} == p
    assert list(rows[0])[-1] == "unseen / fitted"


def test_print_against_reads_the_rows_of_held_out_rows(capsys):
    g = torch.Generator().manual_seed(1)
    w = {f"L3.{n}": torch.randn(4, 64, generator=g) for n in ("query", "output")}
    cal = {n: torch.randn(80, 64, generator=g) for n in w}
    held = {n: torch.randn(30, 64, generator=g) for n in w}
    variants = [("RTN", 4, PerGroup(32)), ("GPTQ", 4, PerChannel(0)), ("AWQ", 4, PerChannel(0))]
    rows, per, norms = smarter.held_out_rows(w, cal, held, [10, 20], variants)
    smarter.print_against(rows, per, norms, list(w))
    out = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in out[0].split("|")]
    assert head == ["held out, against RTN int4 per-group 32", "difference", "95% CI", "ratio: query", "output"]
    row = [c.strip() for c in out[2].split("|")]
    assert row[0] == "GPTQ int4 per-channel" and row[2].startswith("[") and row[2].endswith("]")
    gp, g32 = (per[k].sum(1) / norms.sum(1) for k in ("GPTQ int4 per-channel", "RTN int4 per-group 32"))
    assert row[3:] == [f"{gp[0] / g32[0]:.2f}", f"{gp[1] / g32[1]:.2f}"]
    ratio = rows[2]["held-out err"] / rows[0]["held-out err"]
    assert out[3] == f"held-out: AWQ int4 per-channel / RTN int4 per-group 32: {ratio:.2f}x"
