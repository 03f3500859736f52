"""gradflow against other versions of itself: before/after numbers for a change.

Runs the gradflow side of the suite (training steps, hessian, memory, gradients()
build time) once per source tree, in alternating subprocesses for several rounds, and
prints medians per tree and the speedup of each tree over the first.

    python benchmarks/compare_versions.py --tree before=/tmp/gradflow-old --tree after=.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import Table, print_tables

HERE = Path(__file__).resolve().parent


GROUPS = ("mlp", "cnn", "hessian", "gradients", "memory")


def measure(repeats: int, groups=GROUPS) -> dict:
    """Milliseconds (MiB for memory) of each measurement, for the gradflow on sys.path."""
    import build_chain
    import cnn_step
    import conv_models
    import deep_mnist_step
    import hessian
    import memory
    import mlp_step
    import vgg_block_step
    from common import load, time_interleaved
    from models import batch, graph_train_step, mlp_layers
    gf = load("gradflow")
    results = {}
    if "cnn" in groups:
        for label, layers, shape, optimizer in (
                ("deep_mnist_step", deep_mnist_step.deep_mnist_layers(), (28, 28, 1, 50),
                 lambda m: m.train.AdamOptimizer(1e-4)),
                ("vgg_block_step", vgg_block_step.vgg_layers(), (32, 32, 3, 32),
                 lambda m: m.train.MomentumOptimizer(0.01, 0.9))):
            step = conv_models.graph_step(gf, layers, *batch(shape[:3], 10, shape[3]),
                                          optimizer)
            results[label] = time_interleaved({"gf": step}, repeats)["gf"] * 1e3
        x, y = batch((28, 28, 1), cnn_step.CLASSES, 64)
        cnn = graph_train_step(gf, cnn_step.cnn_layers(), x, y)
        results["cnn_step"] = time_interleaved({"gf": cnn}, repeats)["gf"] * 1e3
    if "mlp" in groups:
        for label, (sizes, batch_size) in mlp_step.CASES.items():
            step = graph_train_step(gf, mlp_layers(sizes),
                                    *batch((sizes[0],), sizes[-1], batch_size))
            results[f"mlp_step {label}"] = time_interleaved({"gf": step}, repeats)["gf"] * 1e3
    if "hessian" in groups:
        for n in (100, 400):
            a, x0 = hessian.problem(n)
            results[f"hessian n={n} run"] = hessian.time_gradflow(a, x0, repeats)[1] * 1e3
    if "gradients" in groups:
        build_chain.measure(100)  # warm up the graph builder
        for steps in (1000, 4000):
            results[f"gradients() of {steps} steps"] = 1e3 * statistics.median(
                build_chain.measure(steps)["gradient_s"] for _ in range(3))
    if "memory" in groups:
        graph, init, grads, feed = memory.build(50, 256, 256)
        with gf.Session(graph=graph) as session:
            session.run(init)
            results["memory peak (MiB)"] = \
                memory.measured_peak_bytes(session, grads, feed) / 2 ** 20
    return results


def run_tree(tree: Path, repeats: int, groups=GROUPS) -> dict:
    env = {**os.environ, "GRADFLOW_TREE": str(tree)}
    done = subprocess.run([sys.executable, __file__, "--worker", "--repeats", str(repeats),
                           "--only", *groups],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def comparison(trees: dict, rounds: int, repeats: int, groups=GROUPS) -> Table:
    samples: dict = {name: {} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            for metric, value in run_tree(tree, repeats, groups).items():
                samples[name].setdefault(metric, []).append(value)
    names = list(trees)
    table = Table(f"gradflow versions (median of {rounds} alternating rounds; ms, memory "
                  "in MiB)", ["measurement", *names, *(f"{n} speedup" for n in names[1:])])
    for metric in samples[names[0]]:
        medians = [statistics.median(samples[n][metric]) for n in names]
        table.add(metric, *medians, *(f"{medians[0] / m:.2f}x" for m in medians[1:]))
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="a gradflow source tree (repeatable; the first is the baseline)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS),
                        help="measurement groups (CNN steps, MLP steps, ...)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.path.insert(0, os.environ["GRADFLOW_TREE"])  # ahead of this checkout
        print(json.dumps(measure(args.repeats, args.only)))
        return 0
    trees = dict(spec.split("=", 1) for spec in args.tree)
    print_tables([comparison({k: Path(v).resolve() for k, v in trees.items()}, args.rounds,
                             args.repeats, args.only)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
