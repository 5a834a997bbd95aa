"""``python -m qlesson.bench gemm``: what dequantization costs inside a GEMM, side by side.

Every method computes ``y = x @ W.T`` for ``x [M, K]`` and a weight ``[N, K]`` stored one way
or another; each row reports the median time, the ratio to the fp32 ``F.linear`` baseline of
the same M, the bytes of the stored weight, the rate at which those bytes were consumed
(GB/s), and the relative error against the fp32 result. The machine's memory bandwidth is
measured in the same run, so every M = 1 row can be read as a fraction of it (the roofline).
"""

from __future__ import annotations

import csv
import itertools
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

Op = Callable[[], torch.Tensor]
UNSCALED = "codes only: no error vs fp32"
EPILOGUE = "cost of the 5% claim"


@dataclass
class GemmRow:
    device: str
    m: int
    method: str
    median_ms: float
    x_fp32: float
    weight_bytes: int
    gb_per_s: float
    rel_error: float
    note: str = ""


@dataclass
class Bandwidth:
    copy_gb_s: float
    read_gb_s: float


def _time_cpu(fn: Op, min_run_time: float) -> float:
    from torch.utils.benchmark import Timer

    # Timer uses one thread unless told otherwise: pin it to the threads torch uses.
    t = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return t.blocked_autorange(min_run_time=min_run_time).median


def _time_cuda(fn: Op, repeats: int = 20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def measure_bandwidth(mbytes: int = 256, device: str = "cpu", min_run_time: float = 0.3) -> Bandwidth:
    """A large tensor copy (read + write) and a read-only reduction, in GB/s."""
    n = mbytes * 2**20 // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    timer = (lambda f: _time_cuda(f)) if device == "cuda" else (lambda f: _time_cpu(f, min_run_time))
    t_copy = timer(lambda: dst.copy_(src))
    t_read = timer(lambda: src.sum())
    return Bandwidth(copy_gb_s=2 * n * 4 / t_copy / 1e9, read_gb_s=n * 4 / t_read / 1e9)


def _pack_int4(w: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric 4-bit codes [N, K] (int32, 0..15), scales_and_zeros [K/g, N, 2], dequantized weight.

    The fused kernels read ``w = (q - 8) * scale + zero``, so ``zero = min + 8 * scale``.
    """
    n, k = w.shape
    wg = w.reshape(n, k // group, group)
    lo, hi = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
    scale = ((hi - lo) / 15).clamp_min(1e-8)
    q = torch.round((wg - lo) / scale).clamp(0, 15)
    deq = (q * scale + lo).reshape(n, k)
    sz = torch.stack([scale.squeeze(-1), (lo + 8 * scale).squeeze(-1)], -1).transpose(0, 1).contiguous()
    return q.to(torch.int32).reshape(n, k), sz, deq


def _int4_op(x: torch.Tensor, w: torch.Tensor, group: int, device: str) -> Op:
    """PyTorch's fused int4 weight-only kernel (tinygemm layout), packed once, bf16 activations."""
    q4, sz, _ = _pack_int4(w, group)
    x_bf, sz_bf = x.to(torch.bfloat16), sz.to(torch.bfloat16)
    if device == "cpu":
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q4, 2)
        return lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(x_bf, packed, group, sz_bf)
    packed = torch.ops.aten._convert_weight_to_int4pack((q4[:, ::2] << 4 | q4[:, 1::2]).to(torch.uint8), 8)
    return lambda: torch.ops.aten._weight_int4pack_mm(x_bf, packed, group, sz_bf)


def methods(x: torch.Tensor, w: torch.Tensor, device: str, quick: bool = False) -> list[tuple[str, Op, int, str]]:
    """(name, zero-argument op, stored weight bytes, note) for every method on ``device``.

    ``quick`` drops the one scalar-fallback row at M > 1, which alone takes seconds per call.
    """
    n, k = w.shape
    s = w.abs().amax(1) / 127
    q = torch.round(w / s[:, None]).clamp(-127, 127).to(torch.int8)
    s_t = w.abs().max() / 127
    q_t = torch.round(w / s_t).clamp(-127, 127).to(torch.int8)
    g = 128
    s_g = w.reshape(n, k // g, g).abs().amax(-1) / 127
    q_g = torch.round(w.reshape(n, k // g, g) / s_g[..., None]).clamp(-127, 127).to(torch.int8).reshape(n, k)
    buf = torch.empty(n, k, device=device)
    low = torch.bfloat16 if device == "cpu" else torch.float16
    w_low, x_low = w.to(low), x.to(low)
    int8_bytes, fp32_bytes = n * k, 4 * n * k
    ops: list[tuple[str, Op, int, str]] = [
        ("fp32 F.linear (baseline)", lambda: F.linear(x, w), fp32_bytes, ""),
        (f"{str(low).split('.')[-1]} F.linear", lambda: F.linear(x_low, w_low), 2 * n * k, "half-width weights"),
        ("naive: dequant per-tensor, then F.linear", lambda: F.linear(x, q_t.float() * s_t), int8_bytes + 4, ""),
        (
            "naive: dequant per-channel, then F.linear",
            lambda: F.linear(x, q.float() * s[:, None]),
            int8_bytes + 4 * n,
            "",
        ),
        (
            "naive: dequant per-group 128, then F.linear",
            lambda: F.linear(x, (q_g.float().reshape(n, k // g, g) * s_g[..., None]).reshape(n, k)),
            int8_bytes + 4 * n * k // g,
            "",
        ),
        (
            "per-channel scale after GEMM: F.linear(x, q.float()) * s",
            lambda: F.linear(x, q.float()) * s,
            int8_bytes + 4 * n,
            "fresh fp32 copy each call",
        ),
        (
            "same, preallocated buffer: buf.copy_(q); F.linear(x, buf) * s",
            lambda: F.linear(x, buf.copy_(q)) * s,
            int8_bytes + 4 * n,
            "no allocation",
        ),
    ]
    qf = q.float()
    y_codes = F.linear(x, qf)
    ops += [
        ("GEMM on pre-converted codes: F.linear(x, q_fp32)", lambda: F.linear(x, qf), fp32_bytes, UNSCALED),
        ("per-channel scale alone: y_codes * s (the epilogue)", lambda: y_codes * s, 4 * n, EPILOGUE),
    ]
    return ops + _kernel_ops(x, w, q, s, device, quick)


def _kernel_ops(
    x: torch.Tensor, w: torch.Tensor, q: torch.Tensor, s: torch.Tensor, device: str, quick: bool
) -> list[tuple[str, Op, int, str]]:
    """The rows that use PyTorch's fused weight-only kernels and its int8 GEMM."""
    n, k = w.shape
    low = torch.bfloat16 if device == "cpu" else torch.float16
    x_low = x.to(low)
    int8_bytes = n * k
    ops: list[tuple[str, Op, int, str]] = []
    if device == "cpu" and not (quick and x.shape[0] > 1):
        ops += [
            (
                "fused int8 weight-only per-channel, fp32 x",
                lambda: torch.ops.aten._weight_int8pack_mm(x, q, s),
                int8_bytes + 4 * n,
                "scalar fallback",
            ),
        ]
    if device == "cpu":
        ops += [
            (
                "fused int8 weight-only per-channel, bf16 x",
                lambda: torch.ops.aten._weight_int8pack_mm(x_low, q, s.to(low)),
                int8_bytes + 2 * n,
                "vectorized path",
            ),
        ]
    else:
        ops.append(
            (
                "fused int8 weight-only per-channel, fp16 x",
                lambda: torch.ops.aten._weight_int8pack_mm(x_low, q, s.to(low)),
                int8_bytes + 2 * n,
                "",
            )
        )
    for gs in (32, 64, 128, 256):
        if k % gs == 0 and n % 16 == 0:
            bytes4 = n * k // 2 + 2 * 2 * n * k // gs
            ops.append((f"fused int4 weight-only group {gs}", _int4_op(x, w, gs, device), bytes4, "asymmetric, bf16 x"))

    def w8a8() -> torch.Tensor:
        s_x = x.abs().amax(1, keepdim=True).clamp_min(1e-12) / 127
        qx = torch.round(x / s_x).clamp(-127, 127).to(torch.int8)
        return torch._int_mm(qx, q.T).float() * s_x * s

    if x.shape[0] > 16 or device == "cpu":
        ops.append(("W8A8: per-token act quant + torch._int_mm + rescale", w8a8, int8_bytes + 4 * n, "int8 x too"))
    return ops


def reference_error(y: torch.Tensor, ref: torch.Tensor) -> float:
    return float((y.float() - ref).norm() / ref.norm())


def _rotating(ops: Sequence[Op]) -> Op:
    """Call the next of several equivalent ops each time: their weights together exceed the CPU cache."""
    cycle = itertools.cycle(ops)
    return lambda: next(cycle)()


def run(
    ms: Sequence[int] = (1, 16, 256),
    k: int = 4096,
    n: int = 4096,
    device: str = "cpu",
    min_run_time: float = 0.2,
    progress: bool = True,
    quick: bool = False,
    copies_at_m1: int = 4,
) -> list[GemmRow]:
    """Time every method for every M on ``device``; returns rows (also usable as a table).

    At M = 1 each method cycles through ``copies_at_m1`` copies of its weight, so that a compact
    weight cannot sit in the last-level cache between calls and the rows measure memory traffic.
    """
    from tqdm import tqdm

    g = torch.Generator().manual_seed(0)
    w = (torch.randn(n, k, generator=g) * torch.rand(n, 1, generator=g) * 0.05).to(device)
    rows: list[GemmRow] = []
    bar = tqdm(
        total=len(ms), desc=f"gemm on {device} (one step per M)", file=sys.stderr, disable=not progress, leave=False
    )
    for m in ms:
        x = torch.randn(m, k, generator=torch.Generator().manual_seed(m)).to(device)
        ref = F.linear(x, w)
        base = None
        copies = [w] + [w.clone() for _ in range(copies_at_m1 - 1 if m == 1 else 0)]
        per_copy = [methods(x, wc, device, quick) for wc in copies]
        for j, (name, op, nbytes, note) in enumerate(per_copy[0]):
            timed = _rotating([lst[j][1] for lst in per_copy]) if len(per_copy) > 1 else op
            try:
                y = op()
                err = float("nan") if note == UNSCALED else reference_error(y, ref)
                t = _time_cuda(timed) if device == "cuda" else _time_cpu(timed, min_run_time)
            except (RuntimeError, NotImplementedError) as exc:  # an op this build or device lacks
                nan = float("nan")
                rows.append(GemmRow(device, m, name, nan, nan, nbytes, 0.0, nan, f"unsupported: {exc}"[:80]))
                continue
            base = base or t
            rows.append(GemmRow(device, m, name, t * 1e3, t / base, nbytes, nbytes / t / 1e9, err, note))
        del per_copy, copies
        bar.update()
    bar.close()
    return rows


def format_table(rows: Sequence[GemmRow], bandwidth: Bandwidth | None = None) -> str:
    from qlesson.teach.report import table

    out = []
    for r in rows:
        d = {
            "M": r.m,
            "method": r.method,
            "ms": f"{r.median_ms:.3f}",
            "x fp32": f"{r.x_fp32:.2f}",
            "weight MB": f"{r.weight_bytes / 1e6:.1f}",
            "GB/s": f"{r.gb_per_s:.1f}",
            "rel err": "" if r.rel_error != r.rel_error else f"{r.rel_error:.1e}",
        }
        if bandwidth is not None:
            d["of read BW"] = f"{100 * r.gb_per_s / bandwidth.read_gb_s:.0f}%" if r.m == 1 else ""
        d["note"] = r.note
        out.append(d)
    return table(out)


def write_csv(rows: Sequence[GemmRow], path: str | Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)


def main(quick: bool = False, csv_path: str | None = None, size: int = 4096) -> tuple[list[GemmRow], Bandwidth]:
    """Print the machine, its bandwidth and the table; ``quick`` uses short timings (seconds, not minutes)."""
    print(
        f"GEMM y = x @ W.T, K = N = {size}, M in (1, 16, 256); {platform.machine()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    bw = measure_bandwidth(128 if quick else 256, min_run_time=0.1 if quick else 0.3)
    print(f"CPU memory bandwidth: copy {bw.copy_gb_s:.1f} GB/s, read-only reduction {bw.read_gb_s:.1f} GB/s")
    rows = run(k=size, n=size, min_run_time=0.02 if quick else 0.2, quick=quick)
    print(format_table(rows, bw))
    if torch.cuda.is_available():
        gbw = measure_bandwidth(1024, device="cuda")
        print(f"\nGPU {torch.cuda.get_device_name(0)}: copy {gbw.copy_gb_s:.0f} GB/s, read {gbw.read_gb_s:.0f} GB/s")
        gpu_rows = run(k=size, n=size, device="cuda", quick=quick)
        print(format_table(gpu_rows, gbw))
        rows += gpu_rows
    else:
        print("\nno CUDA GPU: the GPU rows are skipped")
    if csv_path:
        write_csv(rows, csv_path)
        print(f"wrote {csv_path}")
    return rows, bw


def _row(rows: Sequence[GemmRow], m: int, prefix: str) -> GemmRow | None:
    return next((r for r in rows if r.m == m and r.method.strip().startswith(prefix)), None)


def verdict(rows: Sequence[GemmRow]) -> list[str]:
    """Plain sentences about a run: the winner per M, the dequantize-first penalty, the 5% claim."""
    lines = []
    for m in sorted({r.m for r in rows}):
        timed = [r for r in rows if r.m == m and r.median_ms == r.median_ms and r.note not in (UNSCALED, EPILOGUE)]
        best = min(timed, key=lambda r: r.median_ms)
        lines.append(f"M = {m}: fastest is '{best.method}' at {best.x_fp32:.2f}x the fp32 time")
        naive = _row(rows, m, "naive: dequant per-channel")
        if naive:
            lines.append(f"M = {m}: dequantize-then-matmul (per-channel) takes {naive.x_fp32:.2f}x the fp32 time")
        codes, scaled = _row(rows, m, "GEMM on pre-converted"), _row(rows, m, "per-channel scale alone")
        if codes and scaled:
            extra = 100 * scaled.median_ms / codes.median_ms
            holds = "holds" if extra < 5 else "does not hold"
            lines.append(
                f"M = {m}: applying the per-channel scale after the GEMM costs {extra:.2f}% of the GEMM "
                f"(the under-5% claim {holds} here)"
            )
    return lines


RESULTS = Path(__file__).resolve().parents[2] / "notebooks" / "results"


def stored_results(folder: Path = RESULTS) -> list[Path]:
    """GEMM runs stored with the course (``notebooks/results/gemm_<device>.csv``), by name."""
    return sorted(folder.glob("gemm_*.csv"))


def read_csv(path: str | Path) -> list[GemmRow]:
    """Rows written by ``--csv`` (for example a stored run from a GPU machine)."""
    with open(path, newline="") as f:
        return [
            GemmRow(
                device=r["device"],
                m=int(r["m"]),
                method=r["method"],
                median_ms=float(r["median_ms"]),
                x_fp32=float(r["x_fp32"]),
                weight_bytes=int(r["weight_bytes"]),
                gb_per_s=float(r["gb_per_s"]),
                rel_error=float(r["rel_error"]),
                note=r["note"],
            )
            for r in csv.DictReader(f)
        ]
