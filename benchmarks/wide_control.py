"""Wide control dependencies: ``group`` and ``control_dependencies`` over 10k-100k ops.

For each size n, n ``no_op``s are made (not timed), then one ``group`` over all of them
and one ``no_op`` inside ``control_dependencies`` over all of them are timed. Both must
grow linearly: the "growth" column is (time at n / time at the smallest n) divided by
(n / smallest n), so 1.0 means linear and 2.0 at 4x the size means quadratic.

TensorFlow (TF1 graph mode) runs in this interpreter when it is importable, or in the
interpreter given with ``--tf-python`` (one whose TensorFlow cannot import gradflow's
dependencies, e.g. ``/opt/tfenv/bin/python``); without either, its columns show "-".

    python benchmarks/wide_control.py [--sizes 10000 20000 50000 100000]
                                      [--tf-python /opt/tfenv/bin/python]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import Table, load, print_tables

SIZES = (10_000, 20_000, 50_000, 100_000)


def measure(module, sizes) -> dict:
    """Seconds of ``group`` and of ``control_dependencies`` + one op, per size."""
    results = {}
    for n in sizes:
        graph = module.Graph()
        with graph.as_default():
            ops = [module.no_op(name="n") for _ in range(n)]
            start = time.perf_counter()
            module.group(*ops)
            grouped = time.perf_counter() - start
            start = time.perf_counter()
            with module.control_dependencies(ops):
                module.no_op(name="after")
            controlled = time.perf_counter() - start
        results[n] = {"group": grouped, "control_dependencies": controlled}
    return results


def tensorflow_times(sizes, tf_python) -> dict | None:
    """TensorFlow's times, measured here or by ``tf_python``; None without TensorFlow."""
    if tf_python:
        done = subprocess.run([tf_python, str(Path(__file__).resolve()), "--worker",
                               "--sizes", *map(str, sizes)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"TensorFlow run by {tf_python} failed: {done.stderr[-500:]}",
                  file=sys.stderr)
            return None
        return {int(k): v for k, v in json.loads(done.stdout.splitlines()[-1]).items()}
    tf = load("tensorflow")
    return None if tf is None else measure(tf, sizes)


def growth(times: dict, sizes, what: str) -> list:
    """Per size: time over the smallest size's time, divided by the size ratio."""
    first = sizes[0]
    return [times[n][what] / times[first][what] / (n / first) for n in sizes]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--tf-python", default=None,
                        help="an interpreter with TensorFlow to time it in")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    if args.worker:  # run by --tf-python: TensorFlow's times as JSON
        tf = load("tensorflow")
        if tf is None:
            print("TensorFlow is not importable here", file=sys.stderr)
            return 1
        print(json.dumps(measure(tf, sizes)))
        return 0
    ours = measure(load("gradflow"), sizes)
    theirs = tensorflow_times(sizes, args.tf_python)
    tables = []
    for what in ("group", "control_dependencies"):
        table = Table(f"{what} over n ops (seconds; growth 1.0 = linear)",
                      ["n", "gradflow", "growth", "TensorFlow", "TF growth", "gradflow/TF"])
        mine = growth(ours, sizes, what)
        tf_growth = growth(theirs, sizes, what) if theirs else [None] * len(sizes)
        for n, g, tg in zip(sizes, mine, tf_growth, strict=True):
            tf_time = theirs[n][what] if theirs else None
            table.add(n, round(ours[n][what], 4), round(g, 2),
                      None if tf_time is None else round(tf_time, 4),
                      None if tg is None else round(tg, 2),
                      None if tf_time is None else round(ours[n][what] / tf_time, 3))
        tables.append(table)
    print_tables(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
