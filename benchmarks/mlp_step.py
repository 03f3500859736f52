"""One SGD training step (forward, gradients, update) of float32 MLPs, gradflow vs peers.

Sizes 64-64-64-10 (batch 32), 784-512-512-10 (batch 128) and 1024-2048-2048-10
(batch 256), ReLU hidden layers, mean sparse softmax cross entropy. gradflow and
TensorFlow run ``sess.run(train_op)``; JAX a jitted step; PyTorch eager autograd with an
in-place SGD update. The lower bound is the time NumPy itself needs for the step's
matrix products (forward, and both backward products of every layer but the first,
which needs only its weight gradient), measured in the same rounds; beside it, the
time XLA needs for the same products (one jitted JAX function), the bound a runtime
built on XLA's matrix products would have.

    python benchmarks/mlp_step.py [--repeats 15]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import (PEER_COLUMNS, Table, load, ms, peer_cells, print_tables, ratio_text,
                    time_interleaved, verdict)
from models import batch, mlp_layers, train_steps

CASES = {"64-64-64-10": ((64, 64, 64, 10), 32),
         "784-512-512-10": ((784, 512, 512, 10), 128),
         "1024-2048-2048-10": ((1024, 2048, 2048, 10), 256)}
BOUND_FACTOR = 1.25  # target on the largest size: within this factor of the matmul bound


def matmul_shapes(sizes, batch_size: int) -> list[tuple]:
    """(rows, inner, cols, transpose_a, transpose_b) of every product in one step."""
    shapes = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        shapes.append((batch_size, fan_in, fan_out, False, False))  # h @ w
        shapes.append((fan_in, batch_size, fan_out, True, False))   # dw = h^T @ dz
        if i > 0:
            shapes.append((batch_size, fan_out, fan_in, False, True))  # dh = dz @ w^T
    return shapes


def _operands(shapes: list[tuple]) -> list[tuple]:
    """Random float32 operands of every product, each stored as the step stores it
    (a transposed operand is the transpose of a C-ordered array)."""
    rng = np.random.default_rng(2)
    operands = []
    for rows, inner, cols, ta, tb in shapes:
        a = rng.standard_normal((inner, rows) if ta else (rows, inner)).astype(np.float32)
        b = rng.standard_normal((cols, inner) if tb else (inner, cols)).astype(np.float32)
        operands.append((a, b, ta, tb))
    return operands


def numpy_matmuls(shapes: list[tuple]):
    """A callable doing the step's products in NumPy, and their total FLOPs."""
    operands = [(a.T if ta else a, b.T if tb else b) for a, b, ta, tb in _operands(shapes)]

    def run():
        for a, b in operands:
            np.matmul(a, b)
    return run, sum(2 * rows * inner * cols for rows, inner, cols, _, _ in shapes)


def xla_matmuls(shapes: list[tuple]):
    """A callable doing the step's products in one jitted JAX function, or None."""
    jax = load("jax")
    if jax is None:
        return None
    operands = _operands(shapes)
    flags = [(ta, tb) for _, _, ta, tb in operands]
    arrays = [(jax.numpy.asarray(a), jax.numpy.asarray(b)) for a, b, _, _ in operands]

    @jax.jit
    def products(pairs):
        return [(a.T if ta else a) @ (b.T if tb else b) for (a, b), (ta, tb) in zip(pairs, flags)]
    return lambda: jax.block_until_ready(products(arrays))


def measure(sizes, batch_size: int, repeats: int) -> tuple[dict, float]:
    """Median seconds per step of each library and of the NumPy bound; bound FLOPs."""
    layers = mlp_layers(sizes)
    x, y = batch((sizes[0],), sizes[-1], batch_size)
    candidates = train_steps(layers, x, y)
    shapes = matmul_shapes(sizes, batch_size)
    candidates["bound"], flops = numpy_matmuls(shapes)
    xla = xla_matmuls(shapes)
    if xla is not None:
        candidates["xla bound"] = xla
    return time_interleaved(candidates, repeats), flops


def tables(cases=CASES, repeats: int = 15) -> list[Table]:
    table = Table("mlp_step: ms per SGD step (median), float32",
                  ["model (batch)", *PEER_COLUMNS, "NumPy bound", "GFLOP/s", "gf/bound",
                   f"<={BOUND_FACTOR}x (largest)", "XLA bound"],
                  note="NumPy bound: the step's matrix products alone, timed in NumPy in "
                       "the same rounds; GFLOP/s is their rate. XLA bound: the same "
                       "products in one jitted JAX function.")
    largest = list(cases)[-1]
    for label, (sizes, batch_size) in cases.items():
        times, flops = measure(sizes, batch_size, repeats)
        gf_s, bound_s = times["gradflow"], times["bound"]
        bound_target = verdict(gf_s <= BOUND_FACTOR * bound_s) if label == largest else "-"
        table.add(f"{label} ({batch_size})", *peer_cells(times), ms(bound_s),
                  flops / bound_s / 1e9, ratio_text(gf_s, bound_s), bound_target,
                  ms(times.get("xla bound")))
    return [table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--models", nargs="+", choices=list(CASES), default=list(CASES))
    args = parser.parse_args(argv)
    print_tables(tables({m: CASES[m] for m in args.models}, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
