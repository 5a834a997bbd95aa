"""Command line: ``python -m qlesson.bench {quantize,gemm,widgets,gptq} [--quick] [--threads N] [--csv FILE]``."""

from __future__ import annotations

import argparse

import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qlesson.bench", description=__doc__)
    parser.add_argument("which", choices=["quantize", "gemm", "widgets", "gptq"], help="which benchmark to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds, for CI and notebooks)")
    parser.add_argument("--csv", default=None, help="gemm: also write the rows to this CSV file")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.which == "quantize":
        from .quantize import main as run_quantize

        run_quantize(quick=args.quick)
    elif args.which == "gemm":
        from .gemm import main as run_gemm

        run_gemm(quick=args.quick, csv_path=args.csv)
    elif args.which == "gptq":
        from .gptq import main as run_gptq

        run_gptq(quick=args.quick)
    else:
        from .widgets import main as run_widgets

        run_widgets()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
