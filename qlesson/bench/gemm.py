"""``python -m qlesson.bench gemm``: what dequantization costs inside a GEMM, side by side.

Every method computes ``y = x @ W.T`` for ``x [M, K]`` and a weight ``[N, K]`` stored one way
or another; each row reports the median time, the ratio to the fp32 ``F.linear`` baseline of
the same M, the bytes of the stored weight, the rate at which those bytes were consumed
(GB/s), and the relative error against the fp32 result. The machine's memory bandwidth is
measured in the same run, so every M = 1 row can be read as a fraction of it (the roofline).

How to read a run:

* Noise. The rows at one M are timed in interleaved rounds (``_interleaved_times``), so a burst of
  load lands on every row. Two rows do identical work (the fp32 baseline and the GEMM on codes
  stored as fp32); their gap estimates the run's noise. A verdict calls a gap a tie when it is under
  the largest of 10% (``NOISE_FLOOR``), that pair's gap and either row's IQR over its median (``pair_margin``). These
  are rough estimates, not bounds: a row cheaper than an operation it contains shows noise.
* ``of read BW`` divides an M = 1 row's rate (stored weight bytes over time, copies not counted) by
  the larger of a ``sum()`` probe and the faster fp32 product's read rate. The probe can fit in a
  small VM's last-level cache; the cache line of the output says whether the weight copies do.
* Fresh copies. ``F.linear`` takes float weights, so scale-after-GEMM with ``q.float()`` allocates a
  copy per call; the preallocated-buffer row moves the same bytes without allocating, so their gap
  is the allocation's cost. These rows are timed in rounds of their own (``ALLOCATING``).
* Each method cycles through four copies of its weight, which keep it out of cache only where the
  copies together exceed the last-level cache.
"""

from __future__ import annotations

import csv
import itertools
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from qlesson.quant.gemm import group_scaled_gemm, int_gemm_zero_points

Op = Callable[[], torch.Tensor]
UNSCALED = "codes only: no error vs fp32"
EPILOGUE = "cost of the 5% claim"
# a separate multiply, not a fused epilogue; runs stored before the rename carry the old name
SEPARATE_SCALE = "per-channel scale alone, a separate op: y_codes * s"
RENAMED = {"per-channel scale alone: y_codes * s (the epilogue)": SEPARATE_SCALE}
FOLDED = "input-channel scale on x: exact, M x K multiplies"
NO_WEIGHT_READ = (EPILOGUE,)
# rows that allocate a fresh fp32 copy of the weight on every call: under load they slow the row timed after
# them (about 2x in a probe), so ``run`` times them in a round of their own
ALLOCATING = ("dequantize per-", "per-channel scale after GEMM", "per-group 128 scales inside")
# the two fp32 products that read the same 67 MB: the roofline's read rate comes from them (``streaming_read_gb_s``)
FP32_PAIR = ("fp32", "GEMM on pre-converted codes")


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
    iqr_ms: float = float("nan")  # the spread of the repeated timings: upper minus lower quartile
    machine: str = ""  # the CPU or GPU model and its instruction set, as ``machine_name`` says
    torch: str = ""  # the torch version that ran it


@dataclass
class Bandwidth:
    copy_gb_s: float
    read_gb_s: float
    probe_read_gb_s: float = float("nan")  # the sum() probe's rate, where the roofline took a faster row's


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


def _call_seconds(fn: Op, device: str, min_block: float = 1e-3, calls: int = 1) -> float:
    """Seconds per call of ``fn``: on a GPU ``calls`` calls queued back to back between two events
    (``calls=1``: one call alone, so the host's launch cost sits inside the time); on a CPU as many
    calls as fill ``min_block`` seconds (tiny ops)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / calls
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_block:
            return elapsed / calls


def _interleaved_times(ops: Sequence[Op], device: str, min_total: float, calls: int = 1) -> list[list[float]]:
    """Seconds per call of every op, timed in rounds: each round times every op once, in turn.

    Interleaving puts every op under the same background load, so a burst of load on a shared
    machine lands on all of them rather than on one row. One warm-up round first, then at least
    7 rounds (20 on a GPU), and more until ``min_total`` seconds have passed.
    """
    if not ops:
        return []
    for op in ops:
        op()
    times: list[list[float]] = [[] for _ in ops]
    rounds, least, start = 0, 20 if device == "cuda" else 7, time.perf_counter()
    while rounds < least or time.perf_counter() - start < min_total:
        for i, op in enumerate(ops):
            times[i].append(_call_seconds(op, device, calls=calls))
        rounds += 1
    return times


def median_and_iqr(times: Sequence[float]) -> tuple[float, float]:
    """The median of repeated timings and their spread: the interquartile range (upper minus lower quartile).

    >>> median_and_iqr([1.0, 2.0, 3.0, 4.0, 5.0])
    (3.0, 2.0)
    """
    if len(times) < 2:
        return (times[0], 0.0) if times else (float("nan"), float("nan"))
    q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return q2, q3 - q1


def machine_name(device: str = "cpu") -> str:
    """The model that runs a benchmark: the GPU's name, or the CPU's model and the vector instructions PyTorch uses.

    The instruction set decides which CPU kernels PyTorch runs (AVX2, AVX-512, with or without AMX), so a CPU
    reading names it.
    """
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    capability = torch.backends.cpu.get_cpu_capability()
    flags = cpu_flags()
    extra = [name for name, flag in (("AVX-512 BF16", "avx512_bf16"), ("AMX", "amx_tile")) if flag in flags]
    extras = f" with {', '.join(extra)}" if extra else ""
    return f"{model}, PyTorch CPU kernels: {capability}{extras}"


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux lists them (``/proc/cpuinfo``); empty where they cannot be read."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def measure_bandwidth(mbytes: int = 256, device: str = "cpu", min_run_time: float = 0.3) -> Bandwidth:
    """A large tensor copy (read + write) and a read-only reduction, in GB/s."""
    n = mbytes * 2**20 // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    timer = (lambda f: _time_cuda(f)) if device == "cuda" else (lambda f: _time_cpu(f, min_run_time))
    t_copy = timer(lambda: dst.copy_(src))
    t_read = timer(lambda: src.sum())
    return Bandwidth(copy_gb_s=2 * n * 4 / t_copy / 1e9, read_gb_s=n * 4 / t_read / 1e9)


def last_level_cache_bytes() -> int | None:
    """The size of this CPU's last-level cache as Linux reports it (``/sys``), or None where it cannot be read.

    Cycling ``copies`` weights keeps a weight out of cache only where their bytes together exceed this.
    """
    folder = Path("/sys/devices/system/cpu/cpu0/cache")
    sizes = []
    for index in sorted(folder.glob("index*")):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * unit)
    return max(sizes) if sizes else None


def cache_line(size: int = 4096, probe_mib: int = 128, copies: int = 4) -> str:
    """One line: the last-level cache against four copies of each weight format and the bandwidth probe.

    >>> cache_line(4096, 128, 4).startswith("last-level cache")
    True
    """
    llc = last_level_cache_bytes()
    if llc is None:
        return "last-level cache: size not reported by this system; copies may or may not exceed it"
    fits = [
        name
        for name, bytes_per in (("fp32", 4), ("bf16", 2), ("int8", 1), ("int4", 0.53125))
        if copies * bytes_per * size * size <= llc
    ]
    probe = "fits in it" if probe_mib * 2**20 <= llc else "exceeds it"
    said = (
        f"{copies} copies of the {', '.join(fits)} weights fit in it"
        if fits
        else f"{copies} copies of every weight exceed it"
    )
    return f"last-level cache {llc / 2**20:.0f} MiB: {said}; the {probe_mib} MiB bandwidth probe {probe}"


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
    x_bf = x.to(torch.bfloat16)
    packed: list[tuple[torch.Tensor, torch.Tensor]] = []  # packed once, only for the rows that are timed

    def pack() -> tuple[torch.Tensor, torch.Tensor]:
        if not packed:
            q4, sz, _ = _pack_int4(w, group)
            if device == "cpu":
                codes = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q4, 2)
            else:
                codes = torch.ops.aten._convert_weight_to_int4pack((q4[:, ::2] << 4 | q4[:, 1::2]).to(torch.uint8), 8)
            packed.append((codes, sz.to(torch.bfloat16)))
        return packed[0]

    def op() -> torch.Tensor:
        codes, sz = pack()
        if device == "cpu":
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x_bf, codes, group, sz)
        return torch.ops.aten._weight_int4pack_mm(x_bf, codes, group, sz)

    op.prepare = pack  # type: ignore[attr-defined]  # ``run`` packs every copy it times before timing
    return op


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
        ("dequantize per-tensor, then F.linear", lambda: F.linear(x, q_t.float() * s_t), int8_bytes + 4, ""),
        (
            "dequantize per-channel, then F.linear",
            lambda: F.linear(x, q.float() * s[:, None]),
            int8_bytes + 4 * n,
            "",
        ),
        (
            "dequantize per-group 128, then F.linear",
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
            "scale after GEMM (preallocated fp32 buffer)",
            lambda: F.linear(x, buf.copy_(q)) * s,
            int8_bytes + 4 * n,
            "no allocation",
        ),
    ]
    qf = q.float()
    y_codes: list[torch.Tensor] = []  # the GEMM on the codes, computed once, only where its row is timed

    def scale_alone() -> torch.Tensor:
        if not y_codes:
            y_codes.append(F.linear(x, qf))
        return y_codes[0] * s

    scale_alone.prepare = lambda: scale_alone() is None  # type: ignore[attr-defined]  # run() calls it untimed
    s_in = torch.linspace(0.5, 2.0, k, device=device)
    ops += [
        ("GEMM on pre-converted codes: F.linear(x, q_fp32)", lambda: F.linear(x, qf), fp32_bytes, UNSCALED),
        (SEPARATE_SCALE, scale_alone, 4 * n, EPILOGUE),
        (
            "input-channel scale folded into x: F.linear(x * s_in, q_fp32)",
            lambda: F.linear(x * s_in, qf),
            fp32_bytes,
            FOLDED,
        ),
        (
            "per-group 128 scales inside the reduction, unfused",
            lambda: group_scaled_gemm(x, q_g, s_g, g),
            int8_bytes + 4 * n * k // g,
            "partial sums per group, scaled, summed",
        ),
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
    if x.shape[0] > 16 and device == "cuda":
        s_x = x.abs().amax(1, keepdim=True).clamp_min(1e-12) / 127
        qx = torch.round(x / s_x).clamp(-127, 127).to(torch.int8)
        ops.append(("int8 GEMM alone: torch._int_mm on int8 x", lambda: torch._int_mm(qx, q.T), int8_bytes, UNSCALED))
    return ops


def reference_error(y: torch.Tensor, ref: torch.Tensor) -> float:
    return float((y.float() - ref).norm() / ref.norm())


def _rotating(ops: Sequence[Op]) -> Op:
    """Call the next of several equivalent ops each time, so a weight stays out of the last-level cache
    between calls where the copies together are larger than it (``cache_line`` says where)."""
    cycle = itertools.cycle(ops)
    return lambda: next(cycle)()


def _timed_apart(ops: Mapping[str, Op], device: str, min_run_time: float, calls: int) -> dict[str, list[float]]:
    """Each op's call times, from interleaved rounds; the rows that allocate a weight copy per call
    (``ALLOCATING``) get rounds of their own."""
    by_name: dict[str, list[float]] = {}
    for heavy in (False, True):
        group = [name for name in ops if name.startswith(ALLOCATING) == heavy]
        if group:
            ts = _interleaved_times([ops[n] for n in group], device, min_run_time * len(group), calls=calls)
            by_name.update(zip(group, ts, strict=True))
    return by_name


def run(
    ms: Sequence[int] = (1, 16, 256),
    k: int = 4096,
    n: int = 4096,
    device: str = "cpu",
    min_run_time: float = 0.2,
    progress: bool = True,
    quick: bool = False,
    copies: int = 4,
    rows_for: Mapping[int, Sequence[str]] | None = None,
    back_to_back: int = 1,
) -> list[GemmRow]:
    """Time every method for every M on ``device``; returns rows (also usable as a table).

    At every M each method cycles through ``copies`` copies of its weight (and of whatever it
    derives from it: codes, buffers, packed layouts), so every M is measured under the same cache
    conditions. The copies keep a weight out of the last-level cache only where together they are
    larger than it (``last_level_cache_bytes``); ``main`` prints which formats that holds for.
    ``rows_for`` maps an M to the method-name prefixes timed at that M (all methods where absent).
    The methods at one M are timed in interleaved rounds (``_interleaved_times``); each row keeps
    the median of its calls and their IQR (``median_and_iqr``). On a GPU ``back_to_back`` calls are
    queued between two events and averaged, as a model's layers are queued (1: each call alone).
    """
    if copies < 1:
        raise ValueError(f"copies={copies!r}: pass at least 1 (4 is the default)")
    if back_to_back < 1:
        raise ValueError(f"back_to_back={back_to_back!r}: pass at least 1 call per timed block")
    from tqdm import tqdm

    g = torch.Generator().manual_seed(0)
    w = (torch.randn(n, k, generator=g) * torch.rand(n, 1, generator=g) * 0.05).to(device)
    rows: list[GemmRow] = []
    who, version = machine_name(device), torch.__version__
    bar = tqdm(
        total=len(ms), desc=f"gemm on {device} (one step per M)", file=sys.stderr, disable=not progress, leave=False
    )
    for m in ms:
        x = torch.randn(m, k, generator=torch.Generator().manual_seed(m)).to(device)
        ref = F.linear(x, w)
        weights = [w] + [w.clone() for _ in range(copies - 1)]
        per_copy = [methods(x, wc, device, quick) for wc in weights]
        wanted = None if rows_for is None else rows_for.get(m)
        found: list[tuple[str, int, str, float, Op] | GemmRow] = []
        for j, (name, op, nbytes, note) in enumerate(per_copy[0]):
            if wanted is not None and not any(name.startswith(p) for p in wanted):
                continue
            for lst in per_copy:  # a layout packed lazily is packed now, outside the timing
                getattr(lst[j][1], "prepare", lambda: None)()
            timed = _rotating([lst[j][1] for lst in per_copy]) if len(per_copy) > 1 else op
            try:
                y = op()
                err = float("nan") if note in (UNSCALED, FOLDED) else reference_error(y, ref)
            except (RuntimeError, NotImplementedError) as exc:  # an op this build or device lacks
                nan = float("nan")
                found.append(GemmRow(device, m, name, nan, nan, nbytes, 0.0, nan, f"unsupported: {exc}"[:80]))
                continue
            found.append((name, nbytes, note, err, timed))
        timed = {f[0]: f[4] for f in found if not isinstance(f, GemmRow)}
        by_name = _timed_apart(timed, device, min_run_time, back_to_back)
        base = None
        for f in found:
            if isinstance(f, GemmRow):
                rows.append(f)
                continue
            name, nbytes, note, err, _ = f
            t, iqr = median_and_iqr(by_name[name])
            base = base or t
            rows.append(
                GemmRow(
                    device, m, name, t * 1e3, t / base, nbytes, nbytes / t / 1e9, err, note, iqr * 1e3, who, version
                )
            )
        del per_copy, weights
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
        if bandwidth is not None:  # only where the row streams its weight bytes
            share = r.m == 1 and r.note not in NO_WEIGHT_READ
            d["of read BW"] = f"{100 * r.gb_per_s / bandwidth.read_gb_s:.0f}%" if share else ""
        d["note"] = r.note
        out.append(d)
    return table(out)


def write_csv(rows: Sequence[GemmRow], path: str | Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)


def load_line(load: float | None = None, cores: int | None = None) -> str:
    """The machine's 1-minute load average against its core count, with a warning when it is busy."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # not available on every platform
            return "load average: not available on this platform"
    cores = cores or os.cpu_count() or 1
    line = f"load average {load:.1f} on {cores} cores"
    if load > cores:
        line += ": busy, other work shares the cores, so every time below is slower and noisier than on an idle machine"
    return line


TOO_NOISY = "too noisy here: rerun when the machine is idle"


def too_noisy(rows: Sequence[GemmRow], load: float | None = None, cores: int | None = None) -> bool:
    """Whether a run is too noisy to read: the load exceeds the cores, or the two identical fp32 products
    (``identical_gap``) at M = 1 differ by more than ``NOISE_FLOOR``.

    >>> too_noisy([], load=0.5, cores=2), too_noisy([], load=3.0, cores=2)
    (False, True)
    """
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    gap = identical_gap(rows, 1) if rows else None
    return load > (cores or os.cpu_count() or 1) or (gap is not None and gap > NOISE_FLOOR)


def main(
    quick: bool = False,
    csv_path: str | None = None,
    size: int = 4096,
    full: bool = True,
    ms: Sequence[int] = (1, 16, 256),
    rows_for: Mapping[int, Sequence[str]] | None = None,
    shown: Mapping[int, Sequence[str]] | None = None,
) -> tuple[list[GemmRow], Bandwidth]:
    """Print the machine, its bandwidth and the table (``full=False``: the key rows only);
    ``quick`` uses short timings (seconds, not minutes); ``ms`` and ``rows_for`` (see ``run``)
    choose the batch sizes and the rows (``LESSON_ROWS``: the lesson's short run).
    ``shown`` (``LESSON_SHOWN``): print only those rows of the key table, and one bandwidth line
    instead of the probe, cache and roofline lines (``detail_lines`` gives them afterwards).

    The returned bandwidth is the roofline's (``roofline_bandwidth``): the larger of the read
    probe and the fastest rate at which an M = 1 row of this run streamed its weight.

    Returns this CPU's rows and bandwidth only, so verdicts, peaks and plots never mix devices.
    With a CUDA GPU its rows are printed too, and ``csv_path`` stores them (the CPU rows otherwise).
    """
    print(
        f"GEMM y = x @ W.T, K = N = {size}, M in {tuple(ms)}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads\nCPU: {machine_name()}"
    )
    first_load = load_line()
    print(first_load)
    probe = 128 if quick else 256
    bw = measure_bandwidth(probe, min_run_time=0.1 if quick else 0.3)
    if shown is None:
        print(f"CPU memory bandwidth: copy {bw.copy_gb_s:.1f} GB/s, read-only reduction {bw.read_gb_s:.1f} GB/s")
        print(cache_line(size, probe))
    rows = run(ms=ms, k=size, n=size, min_run_time=0.02 if quick else 0.2, quick=quick, rows_for=rows_for)
    bw = roofline_bandwidth(bw, rows)
    if shown is None:
        print(roofline_line(bw))
        print(format_table(rows, bw) if full else key_table(rows, bw))
    else:
        print(f"read bandwidth {bw.read_gb_s:.1f} GB/s (a sum() probe or fp32 F.linear's weight read, the faster)")
        print(key_table(lesson_view(rows, shown), half_column=False))  # `of read BW`: the full key_table
        if "busy" in first_load or too_noisy(rows):
            print(TOO_NOISY)
    if torch.cuda.is_available():
        gbw = measure_bandwidth(1024, device="cuda")
        print(f"\nGPU {torch.cuda.get_device_name(0)}: copy {gbw.copy_gb_s:.0f} GB/s, read {gbw.read_gb_s:.0f} GB/s")
        gpu_rows = run(k=size, n=size, device="cuda", quick=quick)
        print(format_table(gpu_rows, gbw))
    else:
        gpu_rows = []
        if shown is None:
            print("\nno CUDA GPU: the GPU rows are skipped")
    if csv_path:
        write_csv(gpu_rows or rows, csv_path)
        print(f"wrote {csv_path} ({'GPU' if gpu_rows else 'CPU'} rows)")
    return rows, bw


def gpu_copies(size: int = 4096, floor: int = 4) -> int:
    """Weight copies to cycle on this GPU so that even the smallest (int4) weight's copies together
    are at least twice its L2 cache: every format then streams from memory, at every M."""
    import math

    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
    int4_bytes = size * size // 2
    return max(floor, math.ceil(2 * l2 / int4_bytes))


def gpu_main(csv_path: str | None = None, size: int = 4096, back_to_back: int = 10) -> list[GemmRow]:
    """The GPU table alone, timed twice with the same weight copies: each call alone after a
    synchronize, then ``back_to_back`` calls queued between two events (as a model queues its layers).
    ``csv_path`` stores the queued rows, and the lone ones beside it (``_alone.csv``)."""
    if not torch.cuda.is_available():
        raise ValueError("gpu_main needs a CUDA GPU; on a CPU run `python -m qlesson.bench gemm`")
    copies = gpu_copies(size)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    gbw = measure_bandwidth(1024, device="cuda")
    print(
        f"GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}: copy {gbw.copy_gb_s:.0f} GB/s, "
        f"read {gbw.read_gb_s:.0f} GB/s; L2 {l2 / 2**20:.0f} MiB, {copies} copies of every weight"
    )
    by_mode = {}
    for calls in (1, back_to_back):
        rows = run(k=size, n=size, device="cuda", copies=copies, back_to_back=calls, progress=False)
        how = "each call alone" if calls == 1 else f"{calls} calls queued back to back"
        print(f"\n{how}:\n{format_table(rows, gbw)}")
        by_mode[calls] = rows
    if csv_path:
        write_csv(by_mode[back_to_back], csv_path)
        alone = str(Path(csv_path).with_suffix("")) + "_alone.csv"
        write_csv(by_mode[1], alone)
        print(f"wrote {csv_path} and {alone}")
    return by_mode[back_to_back]


# the lesson's short run: its argument at M = 1 (bytes decide) and M = 128 (arithmetic decides)
LESSON_ROWS: dict[int, tuple[str, ...]] = {
    1: (
        "fp32 F.linear",
        "bfloat16 F.linear",
        "dequantize per-channel",
        "per-channel scale after GEMM",
        "scale after GEMM (preallocated",
        "GEMM on pre-converted codes",
        "per-channel scale alone",
        "input-channel scale folded",
        "fused int8 weight-only per-channel, bf16",
        "fused int4 weight-only group 128",
    ),
    128: (
        "fp32 F.linear",
        "GEMM on pre-converted codes",
        "fused int8 weight-only per-channel, bf16",
        "fused int4 weight-only group 128",
    ),
}
# the rows of that run the lesson's main line shows and reads (the rest: its Going deeper)
LESSON_SHOWN: dict[int, tuple[str, ...]] = {
    1: (
        "fp32 F.linear",
        "dequantize per-channel",
        "scale after GEMM (preallocated",
        "fused int8 weight-only per-channel, bf16",
        "fused int4 weight-only group 128",
    ),
    128: ("fp32 F.linear", "fused int8 weight-only per-channel, bf16", "fused int4 weight-only group 128"),
}


def lesson_view(rows: Sequence[GemmRow], shown: Mapping[int, Sequence[str]] = LESSON_SHOWN) -> list[GemmRow]:
    """The rows whose method starts with one of ``shown[m]``'s prefixes (all rows at an M it does not name).

    >>> names = ("fp32 F.linear", "per-channel scale alone")
    >>> rows = [GemmRow("cpu", 1, name, 1.0, 1.0, 0, 0.0, 0.0) for name in names]
    >>> [r.method for r in lesson_view(rows)]
    ['fp32 F.linear']
    """
    return [r for r in rows if r.m not in shown or any(r.method.startswith(p) for p in shown[r.m])]


def rates_at(rows: Sequence[GemmRow], m: int, size: int = 4096) -> dict[str, float]:
    """Each weight format's rate (GFLOP/s) in this run at M, keyed as ``FORMATS`` (only the formats timed at M).

    At an M where a kernel is compute bound this is its peak; below that, less.

    >>> rates_at([GemmRow("cpu", 256, "fp32 F.linear (baseline)", 1.0, 1.0, 0, 0.0, 0.0)], 256, 1000)
    {'fp32': 512.0}
    """
    out = {}
    for label, _, prefix in FORMATS:
        r = _row(rows, m, prefix)
        if r is not None and r.median_ms > 0:
            out[label] = 2 * m * size * size / r.median_ms / 1e6
    return out


def streaming_read_gb_s(rows: Sequence[GemmRow], m: int = 1) -> tuple[float, str] | None:
    """The faster rate (GB/s) at which the fp32 pair (``FP32_PAIR``) at M streamed its weight, and that row's method.

    Each read its whole weight once per call, so its bytes over its time is a read rate this machine reached.
    Only this pair counts: a row timed in a quieter moment of the round (the folded row once did, at 0.25x
    its identical twin) would set a line the rows the lesson shows cannot be compared with.

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 64 * 10**6, 6.4, 0.0),
    ...         GemmRow("cpu", 1, SEPARATE_SCALE, 0.01, 0.0, 16384, 99.0, 0.0, EPILOGUE)]
    >>> streaming_read_gb_s(rows)
    (6.4, 'fp32 F.linear (baseline)')
    """
    seen = [(r.gb_per_s, r.method) for r in rows if r.m == m and r.method.startswith(FP32_PAIR) and r.gb_per_s > 0]
    return max(seen) if seen else None


def roofline_bandwidth(bandwidth: Bandwidth, rows: Sequence[GemmRow]) -> Bandwidth:
    """The read bandwidth for the roofline: the larger of the ``sum()`` probe and ``streaming_read_gb_s``.

    A reduction can under-measure what the memory delivers (on some VMs a matrix-vector product
    streams faster than ``src.sum()``), and a roofline must not sit below a rate the same run reached.
    """
    best = streaming_read_gb_s(rows)
    read = max(bandwidth.read_gb_s, best[0]) if best else bandwidth.read_gb_s
    return Bandwidth(copy_gb_s=bandwidth.copy_gb_s, read_gb_s=read, probe_read_gb_s=bandwidth.read_gb_s)


def roofline_line(bw: Bandwidth) -> str:
    """Where the roofline's read bandwidth came from: the ``sum()`` probe or a faster M = 1 row of the run.

    >>> roofline_line(Bandwidth(11.0, 14.9, 5.2))[:46]
    'roofline bandwidth 14.9 GB/s: an M = 1 row str'
    """
    probe = bw.probe_read_gb_s
    if probe == probe and bw.read_gb_s > probe:
        return (
            f"roofline bandwidth {bw.read_gb_s:.1f} GB/s: an M = 1 row streamed its weight faster than the sum() "
            f"probe's {probe:.1f} GB/s, so the faster rate is used"
        )
    return f"roofline bandwidth {bw.read_gb_s:.1f} GB/s: the probe's (no M = 1 row streamed its weight faster)"


def detail_lines(bw: Bandwidth, size: int = 4096, probe_mib: int = 128) -> list[str]:
    """What ``main(shown=...)`` leaves out of its header: the two probes, the cache, the roofline's source."""
    probe = bw.probe_read_gb_s if bw.probe_read_gb_s == bw.probe_read_gb_s else bw.read_gb_s
    return [
        f"CPU memory bandwidth: copy {bw.copy_gb_s:.1f} GB/s, read-only reduction {probe:.1f} GB/s",
        cache_line(size, probe_mib),
        roofline_line(bw),
    ]


KEY_ROWS = (
    "fp32 F.linear",
    "bfloat16 F.linear",
    "float16 F.linear",
    "dequantize per-channel",
    "per-channel scale after GEMM",
    "scale after GEMM (preallocated",
    "input-channel scale folded",
    "per-group 128 scales inside",
    "GEMM on pre-converted codes",
    "per-channel scale alone",
    "fused int8 weight-only per-channel, bf16",
    "fused int8 weight-only per-channel, fp16",
    "fused int4 weight-only group 128",
    "W8A8",
)


def key_table(rows: Sequence[GemmRow], bandwidth: Bandwidth | None = None, half_column: bool = True) -> str:
    """The rows that carry the lesson's argument, with ratios to both fp32 and the half-width baseline.

    The fused kernels take bf16 activations (on the GPU the int8 weight-only op is given fp16 and casts to
    fp32 inside), so ``x half`` is their fair comparison; ``x fp32`` is what switching from an fp32 model buys.
    ``half_column=False`` leaves ``x half`` out (the lesson's main line).
    """
    from qlesson.teach.report import table

    out = []
    for m in sorted({r.m for r in rows}):
        half = next((r for r in rows if r.m == m and r.method.split()[0] in ("bfloat16", "float16")), None)
        for prefix in KEY_ROWS:
            r = _row(rows, m, prefix)
            if r is None or r.median_ms != r.median_ms:
                continue
            d = {
                "M": m,
                "method": r.method[:62],
                "ms": f"{r.median_ms:.3f}",
                "x fp32": f"{r.x_fp32:.2f}",
            }
            if half_column:
                d["x half"] = f"{r.median_ms / half.median_ms:.2f}" if half else ""
            if bandwidth is not None:
                share = m == 1 and r.note not in NO_WEIGHT_READ + (FOLDED,)
                d["of read BW"] = f"{100 * r.gb_per_s / bandwidth.read_gb_s:.0f}%" if share else ""
            out.append(d)
    return table(out)


def peak_gflops(size: int = 2048, device: str = "cpu", dtype: torch.dtype = torch.float32) -> float:
    """Measured rate of one large square matrix product (a practical peak for the roofline)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(device, dtype)
    b = torch.randn(size, size, generator=g).to(device, dtype)
    t = _time_cuda(lambda: a @ b) if device == "cuda" else _time_cpu(lambda: a @ b, 0.3)
    return 2 * size**3 / t / 1e9


# (label, bytes per weight, the method whose rate at large M is that format's peak)
FORMATS = (
    ("fp32", 4.0, "fp32 F.linear"),
    ("bf16", 2.0, "bfloat16 F.linear"),
    ("int8 weight-only, bf16 x", 1.0, "fused int8 weight-only per-channel, bf16"),
    ("int4 g128 weight-only (bf16 scale + zero), bf16 x", 4.25 / 8, "fused int4 weight-only group 128"),
    ("W8A8 (int8 x and w)", 1.0, "W8A8"),
)


def kernel_peaks(
    m: int = 512, size: int = 4096, min_run_time: float = 0.2, rows: Sequence[GemmRow] = ()
) -> dict[str, float]:
    """Each weight format's own compute peak on this CPU: its kernel's GFLOP/s on a large ``[m, size]`` batch.

    The rate of a product big enough to be compute bound, measured with the same kernels as the
    benchmark rows (one copy of the weight: at this M the weight is read once per many FLOPs).
    ``rows`` (a benchmark run at K = N = ``size``): where one of its rows ran a kernel faster
    than the M = ``m`` measurement (timing noise), the peak is that faster rate, so no row of
    the run sits above its own format's "peak".
    """
    g = torch.Generator().manual_seed(0)
    w = torch.randn(size, size, generator=g) * 0.02
    x = torch.randn(m, size, generator=g)
    ops = {name: op for name, op, _, _ in methods(x, w, "cpu", quick=True)}
    out = {}
    for label, _, prefix in FORMATS:
        op = next(op for name, op in ops.items() if name.startswith(prefix))
        seen = [2 * r.m * size * size / r.median_ms / 1e6 for r in rows if r.method.startswith(prefix)]
        out[label] = max([2 * m * size * size / _time_cpu(op, min_run_time) / 1e9] + [v for v in seen if v == v])
    return out


def ridge_rows(peaks: dict[str, float], read_gb_s: float, rate_name: str = "peak GFLOP/s") -> list[dict[str, object]]:
    """The roofline's ridge point of each weight format, from its own peak, and the M where it is reached.

    A ``[M, K] x [K, N]`` product does ``2 M K N`` FLOPs and reads ``K N * bytes`` of weight, so its
    intensity is ``2 M / bytes`` FLOPs per weight byte; with its kernel's peak it turns compute bound
    at ``M = peak / bandwidth * bytes / 2``. ``rate_name`` labels the rate column (a run's rate at one M
    is a peak only where that M is compute bound).

    >>> ridge_rows({"fp32": 100.0}, 50.0)[0]["compute bound from M ="]
    4.0
    """
    unknown = set(peaks) - {label for label, _, _ in FORMATS}
    if unknown:
        raise ValueError(f"peaks for {sorted(unknown)}: known formats are {[f[0] for f in FORMATS]}")
    return [
        {
            "weights": label,
            "bytes per weight": b,
            rate_name: peaks[label],
            "ridge FLOPs/byte": peaks[label] / read_gb_s,
            "FLOPs per byte at M = 1": 2 / b,
            "compute bound from M =": peaks[label] / read_gb_s * b / 2,
        }
        for label, b, _ in FORMATS
        if label in peaks
    ]


def zero_point_cost(m: int = 16, k: int = 2048, n: int = 2048, repeats: float = 0.3) -> dict[str, float]:
    """Time an int8 GEMM on symmetric codes against the same GEMM plus the zero-point corrections.

    Both use ``torch._int_mm`` (int8 x int8 -> int32); the asymmetric one adds a per-token row sum
    of the activation codes and the per-channel terms (``int_gemm_zero_points``' algebra).
    """
    g = torch.Generator().manual_seed(0)
    qx = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
    qw = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
    zx, zw = 3, torch.randint(-8, 8, (n,), generator=g, dtype=torch.int32)
    col = qw.int().sum(1)  # offline, once per weight

    def asymmetric() -> torch.Tensor:
        acc = torch._int_mm(qx, qw.T)
        return acc - zw[None, :] * qx.int().sum(1, keepdim=True) - zx * col[None, :] + k * zx * zw[None, :]

    exact = bool(torch.equal(asymmetric().long(), int_gemm_zero_points(qx, zx, qw, zw.long())))
    sym = _time_cpu(lambda: torch._int_mm(qx, qw.T), repeats)
    asym = _time_cpu(asymmetric, repeats)
    # the corrections' arithmetic: a row sum (M K adds) and three [M, N] terms, next to M N K multiply-adds
    work = (m * k + 3 * m * n) / (m * n * k)
    return {
        "symmetric ms": sym * 1e3,
        "with zero points ms": asym * 1e3,
        "ratio": asym / sym,
        "exact": exact,
        "work share": work,
    }


def _row(rows: Sequence[GemmRow], m: int, prefix: str) -> GemmRow | None:
    return next((r for r in rows if r.m == m and r.method.strip().startswith(prefix)), None)


def find_row(rows: Sequence[GemmRow], m: int, prefix: str) -> GemmRow | None:
    """The row at M whose method starts with ``prefix`` (None where no such row was timed).

    >>> find_row([GemmRow("cpu", 1, "fp32 F.linear (baseline)", 1.0, 1.0, 0, 0.0, 0.0)], 1, "fp32").method
    'fp32 F.linear (baseline)'
    """
    return _row(rows, m, prefix)


NOISE_FLOOR = 0.10


def noise_margin(rows: Sequence[GemmRow], m: int) -> float:
    """How far apart two identical products landed at M in this run: a smaller difference is a tie.

    The fp32 ``F.linear`` baseline and the GEMM on pre-converted codes do the same work (an fp32
    product with an fp32 ``[N, K]`` weight), so the gap between their times is timing noise. The
    margin is that gap as a fraction, and never less than ``NOISE_FLOOR``.

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 3.0, 1.0, 0, 0.0, 0.0),
    ...         GemmRow("cpu", 1, "GEMM on pre-converted codes", 3.6, 1.2, 0, 0.0, 0.0)]
    >>> round(noise_margin(rows, 1), 3), noise_margin(rows[:1], 1)
    (0.2, 0.1)
    """
    gap = identical_gap(rows, m)
    return NOISE_FLOOR if gap is None else max(NOISE_FLOOR, gap)


def identical_gap(rows: Sequence[GemmRow], m: int) -> float | None:
    """The measured gap (a fraction) between the two rows that do identical work at M, or None without them.

    One pair of medians from one kernel: a rough estimate of the run's noise, not a bound.

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 3.0, 1.0, 0, 0.0, 0.0),
    ...         GemmRow("cpu", 1, "GEMM on pre-converted codes", 3.15, 1.05, 0, 0.0, 0.0)]
    >>> round(identical_gap(rows, 1), 3), identical_gap(rows[:1], 1)
    (0.05, None)
    """
    a, b = _row(rows, m, "fp32"), _row(rows, m, "GEMM on pre-converted")
    if not (a and b) or not (a.median_ms > 0 and b.median_ms > 0):
        return None
    return max(a.median_ms, b.median_ms) / min(a.median_ms, b.median_ms) - 1


def spread(row: GemmRow) -> float:
    """A row's spread as a fraction of its median: the IQR of its repeated timings over their median (0 if unknown).

    >>> spread(GemmRow("cpu", 1, "fp32", 10.0, 1.0, 0, 0.0, 0.0, iqr_ms=1.5))
    0.15
    """
    if not (row.iqr_ms == row.iqr_ms and row.median_ms > 0):
        return 0.0
    return row.iqr_ms / row.median_ms


def pair_margin(rows: Sequence[GemmRow], m: int, a: GemmRow, b: GemmRow) -> float:
    """The margin inside which rows ``a`` and ``b`` at M tie: ``noise_margin`` or either row's ``spread``, the larger.

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 0, 0.0, 0.0, iqr_ms=3.0)]
    >>> pair_margin(rows, 1, rows[0], rows[0])
    0.3
    """
    return max(noise_margin(rows, m), spread(a), spread(b))


def tie_reason(rows: Sequence[GemmRow], m: int, a: GemmRow, b: GemmRow, b_name: str = "") -> str:
    """Which margin made ``a`` and ``b`` a tie: a row's own spread, or the run's noise at M (``pair_margin``).
    ``b_name`` names ``b`` (its method's first two words where empty).

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 0, 0.0, 0.0, iqr_ms=0.5),
    ...         GemmRow("cpu", 1, "fused int4 weight-only group 128", 7.0, 0.7, 0, 0.0, 0.0, iqr_ms=3.5)]
    >>> print(tie_reason(rows, 1, rows[1], rows[0]), "|", tie_reason(rows, 1, rows[0], rows[0]))
    its timings spread by 50% of their median | inside the run's 10% noise
    """
    noise, own, other = noise_margin(rows, m), spread(a), spread(b)
    if own >= max(noise, other) and own > noise:
        return f"its timings spread by {own:.0%} of their median"
    if other > noise:
        return f"{b_name or ' '.join(b.method.split()[:2])}'s timings spread by {other:.0%} of their median"
    return f"inside the run's {noise:.0%} noise"


def compare(ms: float, base_ms: float, margin: float) -> str:
    """'faster', 'slower' or 'tie': a ratio inside ``1 +- margin`` (either way) is a tie.

    >>> compare(9.0, 10.0, 0.1), compare(9.5, 10.0, 0.1), compare(12.0, 10.0, 0.1)
    ('faster', 'tie', 'slower')
    """
    if not (ms > 0 and base_ms > 0) or margin < 0:
        raise ValueError(f"compare({ms!r}, {base_ms!r}, {margin!r}): times must be positive, the margin >= 0")
    if ms * (1 + margin) < base_ms:
        return "faster"
    return "slower" if ms > base_ms * (1 + margin) else "tie"


def verdict(rows: Sequence[GemmRow], brief: bool = False) -> list[str]:
    """Plain sentences about a run: the noise, the dequantize-first penalty, the 5% claim, who beats whom.

    Every "faster" is beyond this run's noise at that M (``noise_margin``); smaller gaps are ties.
    ``brief``: only the lines the lesson's main line reads (half-width and dequantize-first against
    fp32, and the compact kernels against the faster dense product), a tie as "too close to call".
    """
    if brief:
        lines = []
        for m in sorted({r.m for r in rows}):
            half, fp32, naive = _half_row(rows, m), _row(rows, m, "fp32"), _row(rows, m, "dequantize per-channel")
            if half and fp32 and half.median_ms == half.median_ms:
                ratio = half.median_ms / fp32.median_ms
                lines.append(f"M = {m}: {half.method.split()[0]} F.linear takes {ratio:.2f}x the fp32 time")
            if naive:
                lines.append(f"M = {m}: dequantize-then-matmul (per-channel) takes {naive.x_fp32:.2f}x the fp32 time")
            lines.append(f"M = {m}: {faster_than_dense(rows, m, twin=False, reasons=False)}")
        return lines
    lines = []
    for m in sorted({r.m for r in rows}):
        margin, gap = noise_margin(rows, m), identical_gap(rows, m)
        measured = f"differed by {gap:.1%}" if gap is not None else "were not both timed"
        spreads = [  # the rows that read a weight: the ones the verdicts compare
            spread(r) for r in rows if r.m == m and r.iqr_ms == r.iqr_ms and r.median_ms > 0 and r.note != EPILOGUE
        ]
        if spreads:
            lines.append(
                f"M = {m}: two identical fp32 products {measured}; each row's timings spread by "
                f"{min(spreads):.0%} to {max(spreads):.0%} of its median (IQR over its repeats); a gap under "
                f"{margin:.0%} (that gap or a {NOISE_FLOOR:.0%} floor, the larger) or under either row's spread "
                "is called a tie"
            )
        else:
            lines.append(
                f"M = {m}: two identical fp32 products {measured}; gaps under {margin:.0%} (that gap or a "
                f"{NOISE_FLOOR:.0%} floor, the larger) are called ties"
            )
        half, fp32 = _half_row(rows, m), _row(rows, m, "fp32")
        if half and fp32 and half.median_ms == half.median_ms:
            lines.append(
                f"M = {m}: {half.method.split()[0]} F.linear takes {half.median_ms / fp32.median_ms:.2f}x the fp32 time"
            )
        naive = _row(rows, m, "dequantize per-channel")
        if naive:
            lines.append(f"M = {m}: dequantize-then-matmul (per-channel) takes {naive.x_fp32:.2f}x the fp32 time")
        fresh, kept = _row(rows, m, "per-channel scale after GEMM"), _row(rows, m, "scale after GEMM (preallocated")
        if fresh and kept and fresh.x_fp32 > 1:
            if compare(kept.median_ms, fresh.median_ms, pair_margin(rows, m, kept, fresh)) == "faster":
                share = (fresh.median_ms - kept.median_ms) / (fresh.median_ms - _row(rows, m, "fp32").median_ms)
                lines.append(
                    f"M = {m}: a preallocated buffer removes {share:.0%} of the extra time of a fresh q.float() copy "
                    "(allocation and page faults, not arithmetic)"
                )
            else:
                lines.append(f"M = {m}: a preallocated buffer was not faster than a fresh q.float() copy beyond noise")
        share = scale_shares(rows, m)
        if share:
            folded = share["folded into x"]
            codes, fold = _row(rows, m, "GEMM on pre-converted"), _row(rows, m, "input-channel scale folded")
            noise = " (within noise)" if abs(folded) <= pair_margin(rows, m, codes, fold) else ""
            half_share = f", {share['scale after, of half']:.2%} of the half-width GEMM" if len(share) > 4 else ""
            lines.append(
                f"M = {m}: a separate per-channel scale multiply after the GEMM costs {share['scale after']:.2%} of "
                f"the fp32 GEMM on the codes{half_share}; folding an "
                f"input-channel scale into x changes its time by {folded:+.1%}{noise}"
            )
        lines.append(f"M = {m}: {faster_than_dense(rows, m)}")
    return lines


def _half_row(rows: Sequence[GemmRow], m: int) -> GemmRow | None:
    return next((r for r in rows if r.m == m and r.method.split()[0] in ("bfloat16", "float16")), None)


def faster_than_dense(rows: Sequence[GemmRow], m: int, twin: bool = True, reasons: bool = True) -> str:
    """Each compact-weight kernel at M against the faster dense product timed at M (fp32 or the half-width one).

    A half-width ``F.linear`` is the fair baseline only where the machine has fast half-width arithmetic;
    a CPU without bf16 instructions runs bf16 slower than fp32, so the faster of the two is the bar to beat.
    The fp32 product is timed twice (``F.linear`` and the GEMM on codes stored as fp32, the same work): its time
    is the faster of the two, so a slow draw of the baseline alone does not make a kernel look faster.
    Gaps inside the run's noise at M (``pair_margin``) are ties, and a tie says which margin made it
    (``tie_reason``). ``twin=False`` compares with fp32 ``F.linear`` alone (its twin left out), so the ratios
    match a table that shows only ``F.linear``; ``reasons=False`` calls a tie "too close to call", without its reason.

    >>> rows = [GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 0, 0.0, 0.0),
    ...         GemmRow("cpu", 1, "bfloat16 F.linear", 20.0, 2.0, 0, 0.0, 0.0),
    ...         GemmRow("cpu", 1, "fused int4 weight-only group 128", 5.0, 0.5, 0, 0.0, 0.0)]
    >>> faster_than_dense(rows, 1)
    'against the faster dense product, fp32 F.linear: int4 g128 weight-only 0.50x (faster)'
    """
    pair = (_row(rows, m, "fp32"), _row(rows, m, "GEMM on pre-converted") if twin else None)
    fp32 = [r for r in pair if r and r.median_ms > 0]
    dense = [r for r in (min(fp32, key=lambda r: r.median_ms) if fp32 else None, _half_row(rows, m)) if r]
    dense = [r for r in dense if r.median_ms == r.median_ms]
    if not dense:
        return "no dense product timed"
    base = min(dense, key=lambda r: r.median_ms)
    name = "fp32 F.linear" if base in fp32 else " ".join(base.method.split()[:2])
    said = []
    for prefix, short in COMPACT.items():
        r = _row(rows, m, prefix)
        if r is not None and r.median_ms == r.median_ms:
            ratio, margin = r.median_ms / base.median_ms, pair_margin(rows, m, r, base)
            called = compare(r.median_ms, base.median_ms, margin)
            if called == "tie":
                called = f"tie: {tie_reason(rows, m, r, base, name)}" if reasons else "too close to call"
            said.append(f"{short} {ratio:.2f}x ({called})")
    if base in fp32 and len(fp32) == 2:
        name += " (the faster of its two timings)"
    return f"against the faster dense product, {name}: {', '.join(said) if said else 'no compact kernel timed'}"


# the key table's compact-weight kernels, by short name
COMPACT = {
    "fused int8 weight-only per-channel, bf16": "int8 weight-only",
    "fused int8 weight-only per-channel, fp16": "int8 weight-only",
    "fused int4 weight-only group 128": "int4 g128 weight-only",
    "W8A8": "W8A8",
}


def faster_than_baselines(rows: Sequence[GemmRow], m: int) -> str:
    """Which compact-weight kernels (fused int8/int4 weight-only, W8A8) beat fp32 and the half-width baseline at M.

    Beating means faster beyond the run's noise at M (``noise_margin``); kernels inside it are named as ties.
    """
    half = next((r for r in rows if r.m == m and r.method.split()[0] in ("bfloat16", "float16")), None)
    fp32 = _row(rows, m, "fp32")
    compact = {}
    for prefix, short in COMPACT.items():
        r = _row(rows, m, prefix)
        if r is not None and r.median_ms == r.median_ms:
            compact[short] = r
    out = []
    for base in (fp32, half):
        if base is None:
            continue
        said = {
            short: compare(r.median_ms, base.median_ms, pair_margin(rows, m, r, base)) for short, r in compact.items()
        }
        won = [short for short, v in said.items() if v == "faster"]
        tied = [short for short, v in said.items() if v == "tie"]
        name = base.method.split()[0]
        line = f"faster than {name} F.linear: {', '.join(won) if won else 'none'}"
        out.append(line + (f" (tie: {', '.join(tied)})" if tied else ""))
    return "; ".join(out)


def scale_shares(rows: Sequence[GemmRow], m: int) -> dict[str, float] | None:
    """At M: a separate scale multiply (``y_codes * s``) and the fold into ``x``, as fractions of the GEMM on
    codes, and what each adds in microseconds (a fixed cost per call shows as the same microseconds at every M);
    with a bf16/fp16 ``F.linear`` row, also the multiply as a fraction of that faster GEMM (``scale after, of half``).

    >>> times = {"GEMM on pre-converted codes": 2.0, "per-channel scale alone": 0.1, "input-channel scale folded": 2.5}
    >>> rows = [GemmRow("cpu", 1, name, t, 1.0, 0, 0.0, 0.0) for name, t in times.items()]
    >>> scale_shares(rows, 1)
    {'scale after': 0.05, 'folded into x': 0.25, 'scale after us': 100.0, 'folded into x us': 500.0}
    """
    codes, scaled = _row(rows, m, "GEMM on pre-converted"), _row(rows, m, "per-channel scale alone")
    folded = _row(rows, m, "input-channel scale folded")
    half = next((r for r in rows if r.m == m and r.method.split()[0] in ("bfloat16", "float16")), None)
    if not (codes and scaled and folded):
        return None
    out = {
        "scale after": scaled.median_ms / codes.median_ms,
        "folded into x": folded.median_ms / codes.median_ms - 1,
        "scale after us": scaled.median_ms * 1e3,
        "folded into x us": (folded.median_ms - codes.median_ms) * 1e3,
    }
    if half is not None and half.median_ms > 0:  # the half-width GEMM a deployment would run
        out["scale after, of half"] = scaled.median_ms / half.median_ms
    return out


def int4_against_half(rows: Sequence[GemmRow], m: int) -> list[str]:
    """Lines on a stored GPU run at M: the int4 group-128 kernel's time against the half-width ``F.linear``,
    then a separate scale multiply's time against the GEMM on codes (what an epilogue saves).

    >>> times = {"float16 F.linear": 0.033, "fused int4 weight-only group 128": 0.020}
    >>> times |= {"GEMM on pre-converted codes": 0.04, "per-channel scale alone": 0.017}
    >>> times |= {"input-channel scale folded": 0.04}
    >>> for part in int4_against_half([GemmRow("cuda", 1, k, t, 1.0, 0, 0.0, 0.0) for k, t in times.items()], 1):
    ...     print(part)
    M = 1: int4 g128 20 us, float16 F.linear 33 us (int4 faster)
      a separate scale multiply 17 us, 43% of the GEMM on codes
    """
    half, int4 = _half_row(rows, m), _row(rows, m, "fused int4 weight-only group 128")
    if half is None or int4 is None:
        raise ValueError(f"the stored run has no half-width F.linear or int4 group-128 row at M = {m}")
    faster = "int4 faster" if int4.median_ms < half.median_ms else "int4 slower"
    line = (
        f"M = {m}: int4 g128 {int4.median_ms * 1e3:.0f} us, {half.method.split(' (')[0]} "
        f"{half.median_ms * 1e3:.0f} us ({faster})"
    )
    share = scale_shares(rows, m)
    if not share:
        return [line]
    return [
        line,
        f"  a separate scale multiply {share['scale after us']:.0f} us, {share['scale after']:.0%} of the GEMM on "
        "codes",
    ]


def tflops(rows: Sequence[GemmRow], m: int, prefix: str) -> float:
    """The rate (TFLOP/s) of the row at M whose method starts with ``prefix``; the shape comes from the fp32 row.

    >>> rows = [GemmRow("cuda", 256, "fp32 F.linear (baseline)", 0.2, 1.0, 4 * 4096 * 4096, 0.0, 0.0)]
    >>> round(tflops(rows, 256, "fp32"), 1)
    42.9
    """
    base, row = _row(rows, m, "fp32"), _row(rows, m, prefix)
    if base is None or row is None:
        raise ValueError(f"no row at M = {m} starting with 'fp32' and {prefix!r}: pass rows of one benchmark run")
    return 2 * m * (base.weight_bytes / 4) / (row.median_ms / 1e3) / 1e12


RESULTS = Path(__file__).resolve().parents[2] / "notebooks" / "results"


def stored_results(folder: Path = RESULTS) -> list[Path]:
    """GEMM runs stored with the course (``notebooks/results/gemm_<device>.csv``), by name; a GPU run's
    one-call-at-a-time twin (``gemm_<device>_alone.csv``, from ``gpu_main``) is left out."""
    return sorted(p for p in folder.glob("gemm_*.csv") if not p.stem.endswith("_alone"))


def stored_rooflines(folder: Path = RESULTS) -> list[dict[str, object]]:
    """Peak GEMM rate and bandwidth measured on other machines (``roofline_<device>.json``)."""
    import json

    return [json.loads(p.read_text()) for p in sorted(folder.glob("roofline_*.json"))]


def read_csv(path: str | Path) -> list[GemmRow]:
    """Rows written by ``--csv`` (for example a stored run from a GPU machine)."""
    with open(path, newline="") as f:
        return [
            GemmRow(
                device=r["device"],
                m=int(r["m"]),
                method=RENAMED.get(r["method"], r["method"]),
                median_ms=float(r["median_ms"]),
                x_fp32=float(r["x_fp32"]),
                weight_bytes=int(r["weight_bytes"]),
                gb_per_s=float(r["gb_per_s"]),
                rel_error=float(r["rel_error"]),
                note=r["note"],
                iqr_ms=float(r.get("iqr_ms") or "nan"),
                machine=r.get("machine") or "",
                torch=r.get("torch") or "",
            )
            for r in csv.DictReader(f)
        ]
