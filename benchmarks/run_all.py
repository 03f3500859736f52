"""Runs every benchmark in one process and prints its tables (gradflow vs its peers).

    PYTHONPATH=. python benchmarks/run_all.py            # the full suite
    PYTHONPATH=. python benchmarks/run_all.py --quick    # smaller sizes, a smoke run
    PYTHONPATH=. python benchmarks/run_all.py --only mlp_step cnn_step
    PYTHONPATH=. python benchmarks/run_all.py --update-readme   # refresh README's table

Peers (TensorFlow, JAX, PyTorch) are used when importable; see benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
from pathlib import Path

import build_chain
import build_repeat
import cnn_step
import deep_mnist_step
import hessian
import layers_build
import lstm_step
import memory
import mlp_step
import vgg_block_step
import xla_step
from common import machine_summary, print_tables

README = Path(__file__).with_name("README.md")
MARKERS = ("<!-- results:start -->", "<!-- results:end -->")

# name -> (full settings, quick settings), as keyword arguments of the module's tables()
SUITE = {
    "build_chain": (build_chain, {"step_counts": (1000, 4000, 16000, 64000)},
                    {"step_counts": (1000, 4000)}),
    "build_repeat": (build_repeat, {"repeats": 3}, {"repeats": 1, "steps": 200}),
    "mlp_step": (mlp_step, {"repeats": 15}, {"repeats": 5}),
    "cnn_step": (cnn_step, {"repeats": 10}, {"repeats": 3}),
    "deep_mnist_step": (deep_mnist_step, {"repeats": 10}, {"repeats": 3}),
    "vgg_block_step": (vgg_block_step, {"repeats": 10}, {"repeats": 3}),
    "hessian": (hessian, {"repeats": 20, "xla": True}, {"repeats": 5, "sizes": (100,)}),
    "memory": (memory, {}, {"layers": 20}),
    "layers_build": (layers_build, {"repeats": 7}, {"repeats": 3, "blocks": 2}),
    "lstm_step": (lstm_step, {"repeats": 15}, {"repeats": 3}),
    "xla_step": (xla_step, {"repeats": 15},
                 {"repeats": 5, "cases": {k: xla_step.CASES[k] for k in ("64-64-64-10", "cnn")}}),
}


def run(names, quick: bool) -> list:
    tables = []
    for name in names:
        module, full, small = SUITE[name]
        start = time.perf_counter()
        produced = module.tables(**(small if quick else full))
        print_tables(produced)
        print(f"({name}: {time.perf_counter() - start:.0f} s)\n", flush=True)
        tables += produced
    return tables


def update_readme(tables: list, header: str) -> None:
    """Replaces the text between the results markers of benchmarks/README.md."""
    body = "\n\n".join([header] + [t.markdown() for t in tables])
    text = README.read_text()
    pattern = re.compile(re.escape(MARKERS[0]) + ".*?" + re.escape(MARKERS[1]), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README} has no {MARKERS[0]} ... {MARKERS[1]} section")
    README.write_text(pattern.sub(lambda _: f"{MARKERS[0]}\n{body}\n{MARKERS[1]}", text))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--only", nargs="+", choices=list(SUITE), default=list(SUITE))
    parser.add_argument("--update-readme", action="store_true",
                        help="write the tables into benchmarks/README.md")
    args = parser.parse_args(argv)
    header = (f"Measured {datetime.date.today().isoformat()} with "
              f"`python benchmarks/run_all.py{' --quick' if args.quick else ''}`: "
              f"{machine_summary()}.")
    print(header, end="\n\n", flush=True)
    tables = run(args.only, args.quick)
    if args.update_readme:
        update_readme(tables, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
