"""Instruction counts of gradflow work: before/after numbers that a busy machine cannot blur.

Wall times on a shared machine move by 20% from one run to the next; the number of
instructions a piece of work executes does not. This runs a workload under
``valgrind --tool=callgrind`` twice, with ``n`` and ``n + extra`` repetitions, and
prints the difference divided by ``extra``: the cost of one repetition, start-up and
imports cancelled out. OpenBLAS runs on one thread (its idle threads spin), with a fixed
hash seed and no address randomisation, so a count repeats to within a few thousand.

    python benchmarks/instructions.py mlp_step 64-64-64-10 --batch 32 [--tree PATH]
    python benchmarks/instructions.py mlp_step 64-64-64-10 --optimizer adam   # Adam 1e-3
    python benchmarks/instructions.py gradients 4000 [--tree PATH]   # the 4k-step chain
    python benchmarks/instructions.py deep_mnist_step 50 [--tree PATH]  # a CNN step (batch)
    python benchmarks/instructions.py vgg_block_step 32 [--tree PATH]
    python benchmarks/instructions.py lstm_step 50 [--tree PATH]     # a 50-step LSTM step

``--tree`` measures the gradflow source tree at PATH (default: this checkout).
Needs valgrind (Debian's ``valgrind`` package) and ``setarch``.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CNN_KINDS = ("deep_mnist_step", "vgg_block_step")


def workload(kind: str, size: str, batch: int, repetitions: int,
             optimizer: str = "sgd") -> None:
    """The work counted, run in the child process (gradflow from GRADFLOW_TREE)."""
    sys.path.insert(0, os.environ["GRADFLOW_TREE"])
    import gradflow as gf
    if kind == "gradients":  # the chain is built either way: only gradients() counts
        import build_chain
        with gf.Graph().as_default():
            x, loss = build_chain.build_chain(int(size))
            for _ in range(repetitions):
                gf.gradients(loss, [x])
        return
    if kind in CNN_KINDS:  # size is the batch
        import conv_models
        import deep_mnist_step
        import vgg_block_step
        from models import batch as make_batch
        layers, input_shape, optimizer = {
            "deep_mnist_step": (deep_mnist_step.deep_mnist_layers(), (28, 28, 1),
                                lambda m: m.train.AdamOptimizer(1e-4)),
            "vgg_block_step": (vgg_block_step.vgg_layers(), (32, 32, 3),
                               lambda m: m.train.MomentumOptimizer(0.01, 0.9))}[kind]
        step = conv_models.graph_step(gf, layers, *make_batch(input_shape, 10, int(size)),
                                      optimizer)
        for _ in range(2 + repetitions):
            step()
        return
    if kind == "lstm_step":  # benchmarks/lstm_step.py's training step, ``size`` steps long
        import lstm_step
        step = lstm_step.graph_step(gf, int(size))
        for _ in range(3 + repetitions):
            step()
        return
    from models import batch as make_batch, graph_train_step, mlp_layers
    sizes = [int(s) for s in size.split("-")]
    data = make_batch((sizes[0],), sizes[-1], batch)
    if optimizer == "adam":
        import conv_models
        step = conv_models.graph_step(gf, mlp_layers(sizes), *data,
                                      lambda m: m.train.AdamOptimizer(1e-3))
    else:
        step = graph_train_step(gf, mlp_layers(sizes), *data)
    for _ in range(3 + repetitions):  # 3 warm-up steps: the plan is compiled by then
        step()


def count(tree: Path, kind: str, size: str, batch: int, repetitions: int,
          optimizer: str = "sgd") -> int:
    env = {**os.environ, "GRADFLOW_TREE": str(tree), "OPENBLAS_NUM_THREADS": "1",
           "GRADFLOW_BLAS_THREADS": "fixed", "PYTHONHASHSEED": "0"}
    command = ["setarch", os.uname().machine, "-R", "valgrind", "--tool=callgrind",
               "--callgrind-out-file=/dev/null", sys.executable, __file__, "--worker",
               kind, size, "--batch", str(batch), "--repetitions", str(repetitions),
               "--optimizer", optimizer]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["mlp_step", "gradients", "lstm_step", *CNN_KINDS])
    parser.add_argument("size", help="MLP layer sizes (64-64-64-10), chain steps (4000), "
                                     "LSTM time steps (50) or a CNN step's batch (50)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tree", type=Path, default=HERE.parent)
    parser.add_argument("--extra", type=int, default=None,
                        help="repetitions counted (default: 300 MLP steps, 10 LSTM steps, "
                             "or 1 gradients call)")
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd",
                        help="the MLP step's optimizer (mlp_step only)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repetitions", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        workload(args.kind, args.size, args.batch, args.repetitions, args.optimizer)
        return 0
    extra = args.extra or {"mlp_step": 300, "gradients": 1, "lstm_step": 10}.get(args.kind, 2)
    base = count(args.tree, args.kind, args.size, args.batch, 0, args.optimizer)
    total = count(args.tree, args.kind, args.size, args.batch, extra, args.optimizer)
    unit = "gradients() call" if args.kind == "gradients" else "step"
    what = f"{args.kind} {args.size}" + (f" {args.optimizer}" if args.kind == "mlp_step" else "")
    print(f"{what} ({args.tree}): {(total - base) // extra:,} instructions per {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
