"""A VGG-style block, one Momentum training step: gradflow vs TensorFlow.

3x3 'SAME' convolutions with 64 and 128 filters (ReLU, 2x2 max pooling after each) on
32x32x3 images, a dense layer to 10 classes, mean sparse softmax cross entropy,
Momentum (0.01, 0.9), batch 32, float32; with the FLOP bound and peak memory as in
``deep_mnist_step``.

    PYTHONPATH=. /opt/tfenv/bin/python benchmarks/vgg_block_step.py [--repeats 10]
    python benchmarks/vgg_block_step.py --ops      # CPU ms per step in each window kernel
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import Table, print_tables
from conv_models import op_times_text
from deep_mnist_step import step_table
from models import batch

CLASSES = 10


def vgg_layers(seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    layers = []
    for c_in, c_out in ((3, 64), (64, 128)):
        w = rng.standard_normal((3, 3, c_in, c_out)) / np.sqrt(9 * c_in)
        layers.append(("conv", w.astype(np.float32), np.zeros(c_out, np.float32), True))
    w = rng.standard_normal((8 * 8 * 128, CLASSES)) / np.sqrt(8 * 8 * 128)
    return layers + [("flatten",), ("dense", w.astype(np.float32),
                                    np.zeros(CLASSES, np.float32), False)]


def tables(batch_size: int = 32, repeats: int = 10) -> list[Table]:
    x, y = batch((32, 32, 3), CLASSES, batch_size)
    return [step_table("vgg_block_step: ms per Momentum step (median), float32",
                       vgg_layers(), x, y,
                       lambda module: module.train.MomentumOptimizer(0.01, 0.9), repeats)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--ops", action="store_true",
                        help="print gradflow's CPU ms per step in each convolution and "
                             "pooling kernel instead")
    args = parser.parse_args(argv)
    if args.ops:
        x, y = batch((32, 32, 3), CLASSES, args.batch)
        print(op_times_text(vgg_layers(), x, y,
                            lambda module: module.train.MomentumOptimizer(0.01, 0.9),
                            args.repeats))
        return 0
    print_tables(tables(args.batch, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
