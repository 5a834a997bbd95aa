"""Command line: ``python -m qlesson.bench WHICH [--quick] [--threads N] [--csv FILE] [--store]``.

``WHICH``: quantize, gemm, widgets, gptq, engines, lesson03 or lesson08.

``engines`` times MiniLM per granularity in ONNX Runtime and llama.cpp (one thread unless ``--threads``);
``--store`` writes its reading to ``notebooks/results/engines_cpu.json`` (lesson 11 prints it).

``lesson03`` and ``lesson08`` run those lessons' slow Going-deeper studies and store their readings in
``notebooks/results/`` (the lessons print the stored readings).
"""

from __future__ import annotations

import argparse

import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qlesson.bench", description=__doc__)
    which = ["quantize", "gemm", "widgets", "gptq", "engines", "lesson03", "lesson08"]
    parser.add_argument("which", choices=which, help="which benchmark (or lesson study) to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds, for CI and notebooks)")
    parser.add_argument("--csv", default=None, help="gemm: also write the rows to this CSV file")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--store", action="store_true", help="engines: write notebooks/results/engines_cpu.json")
    parser.add_argument(
        "--gpu-only", action="store_true", help="gemm: the CUDA table alone, each call alone and queued"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.which == "quantize":
        from .quantize import main as run_quantize

        run_quantize(quick=args.quick)
    elif args.which == "gemm":
        from .gemm import gpu_main
        from .gemm import main as run_gemm

        if args.gpu_only:
            gpu_main(csv_path=args.csv)
        else:
            run_gemm(quick=args.quick, csv_path=args.csv)
    elif args.which in ("lesson03", "lesson08"):
        from .lessons import main as run_lesson

        run_lesson(args.which[-2:])
    elif args.which == "engines":
        from .engines import main as run_engines

        run_engines(quick=args.quick, store=args.store, threads=args.threads or 1)
    elif args.which == "gptq":
        from .gptq import main as run_gptq

        run_gptq(quick=args.quick)
    else:
        from .widgets import main as run_widgets

        run_widgets()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
