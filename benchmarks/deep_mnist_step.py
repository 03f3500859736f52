"""TF1's "deep MNIST" tutorial model, one Adam training step: gradflow vs TensorFlow.

5x5 'SAME' convolutions with 32 and 64 filters, each followed by ReLU and 2x2 max
pooling, a dense layer of 1024 with ReLU, dropout (keep 0.5), a dense layer to 10
classes, mean sparse softmax cross entropy, Adam (1e-4), batch 50, float32. Beside
the step times, the FLOP bound: the step's FLOPs (its matrix products as im2col GEMMs)
at the rate of a 1024x1024x1024 float32 NumPy GEMM timed in the same rounds, and
gradflow's peak NumPy memory per step (tracemalloc).

    PYTHONPATH=. /opt/tfenv/bin/python benchmarks/deep_mnist_step.py [--repeats 10]
    python benchmarks/deep_mnist_step.py --ops     # CPU ms per step in each window kernel
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import Table, ms, print_tables, ratio_text, time_interleaved, verdict
from conv_models import candidates, op_times_text, peak_bytes
from models import batch

CLASSES = 10
BOUND_FACTOR = 1.5  # target: within this factor of the FLOP bound


def deep_mnist_layers(seed: int = 0) -> list:
    rng = np.random.default_rng(seed)

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    return [("conv", weight(5, 5, 1, 32), np.full(32, 0.1, np.float32), True),
            ("conv", weight(5, 5, 32, 64), np.full(64, 0.1, np.float32), True),
            ("flatten",),
            ("dense", weight(7 * 7 * 64, 1024), np.full(1024, 0.1, np.float32), True),
            ("dropout", 0.5),
            ("dense", weight(1024, CLASSES), np.full(CLASSES, 0.1, np.float32), False)]


def step_table(title: str, layers: list, x, y, optimizer, repeats: int) -> Table:
    """The step's times (gradflow, TensorFlow, bound), ratios and gradflow's peak memory."""
    steps, flops, gemm_flops = candidates(layers, x, y, optimizer)
    peak = peak_bytes(steps["gradflow"])
    times = time_interleaved(steps, repeats)
    gf_s, tf_s = times["gradflow"], times.get("tensorflow")
    rate = gemm_flops / times["gemm"]
    bound_s = flops / rate
    table = Table(title, ["batch", "gradflow", "tensorflow", "gf/tf", "<=1x", "GFLOP",
                          "bound", "GFLOP/s", "gf/bound", f"<={BOUND_FACTOR}x",
                          "tf/bound", "gf peak MiB"],
                  note="bound: the step's FLOPs (im2col GEMMs) at GFLOP/s, the rate of a "
                       "1024^3 float32 NumPy GEMM timed in the same rounds. Peak: "
                       "gradflow's NumPy allocations during one step (tracemalloc).")
    table.add(x.shape[0], ms(gf_s), ms(tf_s), ratio_text(gf_s, tf_s),
              verdict(None if tf_s is None else gf_s <= tf_s), flops / 1e9, ms(bound_s),
              rate / 1e9, ratio_text(gf_s, bound_s),
              verdict(gf_s <= BOUND_FACTOR * bound_s), ratio_text(tf_s, bound_s),
              peak / 2 ** 20)
    return table


def tables(batch_size: int = 50, repeats: int = 10) -> list[Table]:
    x, y = batch((28, 28, 1), CLASSES, batch_size)
    return [step_table("deep_mnist_step: ms per Adam step (median), float32",
                       deep_mnist_layers(), x, y,
                       lambda module: module.train.AdamOptimizer(1e-4), repeats)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--ops", action="store_true",
                        help="print gradflow's CPU ms per step in each convolution and "
                             "pooling kernel instead")
    args = parser.parse_args(argv)
    if args.ops:
        x, y = batch((28, 28, 1), CLASSES, args.batch)
        print(op_times_text(deep_mnist_layers(), x, y,
                            lambda module: module.train.AdamOptimizer(1e-4), args.repeats))
        return 0
    print_tables(tables(args.batch, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
