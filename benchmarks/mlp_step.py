"""One training step (forward, gradients, update) of float32 MLPs, gradflow vs peers.

Sizes 64-64-64-10 (batch 32), 784-512-512-10 (batch 128) and 1024-2048-2048-10
(batch 256), ReLU hidden layers, mean sparse softmax cross entropy. gradflow and
TensorFlow run ``sess.run(train_op)``; JAX a jitted step; PyTorch eager autograd with an
in-place SGD update. The lower bound is the time NumPy itself needs for the step's
matrix products (forward, and both backward products of every layer but the first,
which needs only its weight gradient), measured in the same rounds; beside it, the
time XLA needs for the same products (one jitted JAX function), the bound a runtime
built on XLA's matrix products would have; and gradflow's peak NumPy memory per step
(tracemalloc). ``--optimizer adam`` makes the step TF1's Adam (1e-3) in gradflow and
TensorFlow and the same formula in a jitted JAX step (PyTorch: SGD only).

    python benchmarks/mlp_step.py [--repeats 15] [--optimizer adam]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from common import (PEER_COLUMNS, Table, load, ms, peer_cells, print_tables, ratio_text,
                    time_interleaved, verdict)
from conv_models import graph_step, peak_bytes
from models import batch, mlp_layers, train_steps

CASES = {"64-64-64-10": ((64, 64, 64, 10), 32),
         "784-512-512-10": ((784, 512, 512, 10), 128),
         "1024-2048-2048-10": ((1024, 2048, 2048, 10), 256)}
BOUND_FACTOR = 1.25  # target on the largest size: within this factor of the matmul bound
ADAM_RATE, ADAM_BETAS, ADAM_EPSILON = 1e-3, (0.9, 0.999), 1e-8  # TF1's AdamOptimizer defaults


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


def adam_steps(layers: list, x, y) -> dict:
    """Adam step callables: gradflow and TensorFlow (TF1 graph mode), JAX jitted."""
    def adam(module):
        return module.train.AdamOptimizer(ADAM_RATE)
    steps = {"gradflow": graph_step(load("gradflow"), layers, x, y, adam)}
    if load("tensorflow") is not None:
        steps["tensorflow"] = graph_step(load("tensorflow"), layers, x, y, adam)
    if load("jax") is not None:
        steps["jax"] = jax_adam_step(layers, x, y)
    return steps


def jax_adam_step(layers: list, x_value, y_value):
    """TF1's Adam update (bias-corrected step size, epsilon outside the root) as one
    jitted ``(params, m, v, t) -> (params, m, v, t)`` function, applied in a loop."""
    jax = load("jax")
    jnp = jax.numpy
    beta1, beta2 = ADAM_BETAS

    def loss(params, x, y):
        h = x
        for layer, (w, b) in zip(layers, params):
            h = h @ w + b
            h = jax.nn.relu(h) if layer[3] else h
        log_p = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(log_p, y[:, None], axis=1))

    @jax.jit
    def step(params, m, v, t, x, y):
        grads = jax.grad(loss)(params, x, y)
        t = t + 1
        rate = ADAM_RATE * jnp.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        tree = jax.tree_util.tree_map
        m = tree(lambda m, g: m + (g - m) * (1 - beta1), m, grads)
        v = tree(lambda v, g: v + (g * g - v) * (1 - beta2), v, grads)
        params = tree(lambda p, m, v: p - rate * m / (jnp.sqrt(v) + ADAM_EPSILON), params, m, v)
        return params, m, v, t

    params = [tuple(jnp.asarray(a) for a in layer[1:3]) for layer in layers]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [(params, zeros, zeros, jnp.float32(0))]
    x, y = jnp.asarray(x_value), jnp.asarray(y_value)

    def run():
        state[0] = jax.block_until_ready(step(*state[0], x, y))
    return run


def measure(sizes, batch_size: int, repeats: int, optimizer: str = "sgd") -> tuple:
    """Median seconds per step of each library and of the NumPy bound; bound FLOPs;
    gradflow's peak bytes per step."""
    layers = mlp_layers(sizes)
    x, y = batch((sizes[0],), sizes[-1], batch_size)
    candidates = adam_steps(layers, x, y) if optimizer == "adam" else \
        train_steps(layers, x, y)
    for _ in range(3):  # past the plan's compilation and the update buffers' first use
        candidates["gradflow"]()
    peak = peak_bytes(candidates["gradflow"])
    shapes = matmul_shapes(sizes, batch_size)
    candidates["bound"], flops = numpy_matmuls(shapes)
    xla = xla_matmuls(shapes)
    if xla is not None:
        candidates["xla bound"] = xla
    return time_interleaved(candidates, repeats), flops, peak


def tables(cases=CASES, repeats: int = 15, optimizer: str = "sgd") -> list[Table]:
    name = {"sgd": "SGD", "adam": "Adam"}[optimizer]
    table = Table(f"mlp_step: ms per {name} step (median), float32",
                  ["model (batch)", *PEER_COLUMNS, "NumPy bound", "GFLOP/s", "gf/bound",
                   f"<={BOUND_FACTOR}x (largest)", "XLA bound", "gf peak MiB"],
                  note="NumPy bound: the step's matrix products alone, timed in NumPy in "
                       "the same rounds (the step's FLOP bound at the GEMM rate of this "
                       "run); GFLOP/s is their rate. XLA bound: the same products in one "
                       "jitted JAX function. Peak: gradflow's NumPy allocations during "
                       "one step (tracemalloc).")
    largest = list(cases)[-1]
    for label, (sizes, batch_size) in cases.items():
        times, flops, peak = measure(sizes, batch_size, repeats, optimizer)
        gf_s, bound_s = times["gradflow"], times["bound"]
        bound_target = verdict(gf_s <= BOUND_FACTOR * bound_s) if label == largest else "-"
        table.add(f"{label} ({batch_size})", *peer_cells(times), ms(bound_s),
                  flops / bound_s / 1e9, ratio_text(gf_s, bound_s), bound_target,
                  ms(times.get("xla bound")), peak / 2 ** 20)
    return [table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--models", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    args = parser.parse_args(argv)
    print_tables(tables({m: CASES[m] for m in args.models}, args.repeats, args.optimizer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
