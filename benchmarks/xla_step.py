"""Training steps with gradflow's XLA backend on and off, beside JAX's own ``jit``.

The MLPs of ``mlp_step`` (64-64-64-10 batch 32, 784-512-512-10 batch 128,
1024-2048-2048-10 batch 256) and the conv net of ``cnn_step`` (batch 64), one float32
SGD step each. "gf XLA" runs the TF1 program unchanged with
``ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(
global_jit_level=ON_1)))``: the whole step is one compiled cluster. "JAX jit" is the
same step written in JAX (``models.jax_train_step``). TensorFlow with XLA on
(``tf.compat.v1`` with the same ``global_jit_level``) joins when installed in the same
interpreter. All are timed in the same rounds. Target on CPU: gf XLA at or below JAX
jit for the MLPs.

    python benchmarks/xla_step.py [--repeats 15] [--models 64-64-64-10 cnn]
"""
from __future__ import annotations

import argparse
import sys

from cnn_step import CHANNELS, CLASSES, cnn_layers
from common import Table, load, ms, print_tables, ratio_text, time_interleaved, verdict
from mlp_step import CASES as MLP_CASES
from models import batch, graph_train_step, jax_train_step, mlp_layers

CASES = {**{label: ("mlp", sizes, size) for label, (sizes, size) in MLP_CASES.items()},
         "cnn": ("cnn", None, 64)}


def jit_config(module):
    """The TF1 ``ConfigProto`` asking ``module``'s Session to compile whole graphs."""
    options = module.OptimizerOptions(global_jit_level=module.OptimizerOptions.ON_1)
    return module.ConfigProto(graph_options=module.GraphOptions(optimizer_options=options))


def candidates(kind: str, sizes, batch_size: int) -> dict:
    if kind == "mlp":
        layers = mlp_layers(sizes)
        x, y = batch((sizes[0],), sizes[-1], batch_size)
    else:
        layers = cnn_layers()
        x, y = batch((28, 28, CHANNELS[0]), CLASSES, batch_size)
    gf = load("gradflow")
    steps = {"gf NumPy": graph_train_step(gf, layers, x, y),
             "gf XLA": graph_train_step(gf, layers, x, y, jit_config(gf))}
    if load("jax") is not None:
        steps["JAX jit"] = jax_train_step(layers, x, y)
    tf = load("tensorflow")
    if tf is not None:
        steps["TF XLA"] = graph_train_step(tf, layers, x, y, jit_config(tf))
    return steps


def tables(cases: dict = CASES, repeats: int = 15) -> list[Table]:
    table = Table("xla_step: ms per SGD step (median), float32, CPU",
                  ["model (batch)", "gf NumPy", "gf XLA", "JAX jit", "TF XLA",
                   "XLA speed-up", "gf XLA / JAX jit", "<= JAX jit (MLPs)"],
                  note="gf XLA: the unchanged TF1 program with global_jit_level=ON_1; "
                       "JAX jit: the same step written in JAX, params in, params out.")
    for label, (kind, sizes, batch_size) in cases.items():
        times = time_interleaved(candidates(kind, sizes, batch_size), repeats)
        xla, jax_s = times["gf XLA"], times.get("JAX jit")
        met = None if jax_s is None or kind != "mlp" else xla <= jax_s
        table.add(f"{label} ({batch_size})", ms(times["gf NumPy"]), ms(xla), ms(jax_s),
                  ms(times.get("TF XLA")), ratio_text(times["gf NumPy"], xla),
                  ratio_text(xla, jax_s), verdict(met) if kind == "mlp" else "-")
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
