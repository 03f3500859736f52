"""Training steps with gradflow's XLA backend on and off, beside JAX's own ``jit``.

The MLPs of ``mlp_step`` (64-64-64-10 batch 32, 784-512-512-10 batch 128,
1024-2048-2048-10 batch 256) and the conv net of ``cnn_step`` (batch 64), one float32
SGD step each. "gf XLA" runs the TF1 program unchanged with
``ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(
global_jit_level=ON_1)))``: the whole step is one compiled cluster. "JAX jit" is the
same step written in JAX as a JAX user writes the loop (``models.jax_train_step``:
``params = step(params, x, y)``, the NumPy batch passed on every call, asynchronous
dispatch); "JAX sync" is the same with ``block_until_ready`` after every step.
TensorFlow with XLA on (``tf.compat.v1`` with the same ``global_jit_level``) joins when
installed in the same interpreter. All are timed in the same rounds: a sample is a
loop of calls followed by the candidate's wait for its last step (JAX's ``sync``;
gradflow's and TensorFlow's ``Session.run`` return finished steps), so an
asynchronous candidate is charged for all the work it started. Target on CPU: gf XLA
at or below JAX jit for the MLPs.

    python benchmarks/xla_step.py [--repeats 15] [--models 64-64-64-10 cnn]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

from cnn_step import CHANNELS, CLASSES, cnn_layers
from common import SETTLE_S, Table, load, ms, print_tables, ratio_text, verdict
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
        steps["JAX jit"] = jax_train_step(layers, x, y, blocking=False)
        steps["JAX sync"] = jax_train_step(layers, x, y)
    tf = load("tensorflow")
    if tf is not None:
        steps["TF XLA"] = graph_train_step(tf, layers, x, y, jit_config(tf))
    return steps


def time_rounds(candidates: dict, repeats: int, min_sample_s: float = 0.005) -> dict:
    """Seconds per call of every sample of each candidate, one sample of each a round.

    A sample runs the call in a loop, then the candidate's ``sync`` (if it has one),
    timed together. Before it the process idles ``SETTLE_S`` (the thread pools of the
    library timed before stop spinning) and makes one untimed, synced call."""
    loops = {}
    for name, fn in candidates.items():
        fn()
        loops[name] = max(1, int(min_sample_s / max(_sample(fn, 1), 1e-9)))
    samples: dict = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            time.sleep(SETTLE_S)
            fn()
            _sync(fn)
            samples[name].append(_sample(fn, loops[name]))
    return samples


def _sync(fn) -> None:
    sync = getattr(fn, "sync", None)
    if sync is not None:
        sync()


def _sample(fn, loops: int) -> float:
    gc.disable()  # a collection triggered by one library would be charged to another
    try:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        _sync(fn)
        return (time.perf_counter() - start) / loops
    finally:
        gc.enable()


def tables(cases: dict = CASES, repeats: int = 15) -> list[Table]:
    table = Table("xla_step: ms per SGD step (median; best round in the last two ratios), "
                  "float32, CPU",
                  ["model (batch)", "gf NumPy", "gf XLA", "JAX jit", "JAX sync", "TF XLA",
                   "XLA speed-up", "gf XLA / JAX jit", "best: gf XLA / JAX jit",
                   "best: gf XLA / JAX sync", "<= JAX jit (MLPs)"],
                  note="gf XLA: the unchanged TF1 program with global_jit_level=ON_1; "
                       "JAX jit: the same step written in JAX, params in, params out, "
                       "asynchronous dispatch; JAX sync: waiting for every step.")
    for label, (kind, sizes, batch_size) in cases.items():
        samples = time_rounds(candidates(kind, sizes, batch_size), repeats)
        times = {name: statistics.median(values) for name, values in samples.items()}
        best = {name: min(values) for name, values in samples.items()}
        xla, jax_s = times["gf XLA"], times.get("JAX jit")
        met = None if jax_s is None or kind != "mlp" else xla <= jax_s
        table.add(f"{label} ({batch_size})", ms(times["gf NumPy"]), ms(xla), ms(jax_s),
                  ms(times.get("JAX sync")), ms(times.get("TF XLA")),
                  ratio_text(times["gf NumPy"], xla), ratio_text(xla, jax_s),
                  ratio_text(best["gf XLA"], best.get("JAX jit")),
                  ratio_text(best["gf XLA"], best.get("JAX sync")),
                  verdict(met) if kind == "mlp" else "-")
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
