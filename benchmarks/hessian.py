"""Hessian of f(x) = sum(tanh(A x)^2): graph building and execution, timed apart.

Runs gradflow and, when importable in the same interpreter, TensorFlow 2.x in TF1
graph mode (``tf.compat.v1.hessians``), JAX (``jit(hessian(f))``; building is tracing
and compiling) and PyTorch (``torch.func.hessian``, eager: nothing to build) on the
same problem, float64, and prints medians, the ratio to TensorFlow and to the best
peer, and each result's error against the closed form. With ``--xla`` gradflow and
TensorFlow also run the same graph compiled by XLA (``ConfigProto``'s
``global_jit_level=ON_1``; gradflow's XLA backend needs JAX).

    python benchmarks/hessian.py [--sizes 100 400] [--repeats 20] [--xla]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np

from common import Table, best_peer, load, print_tables, ratio_text, verdict


def problem(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)


def closed_form(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(a @ x)
    return a.T @ np.diag(2 * (1 - t ** 2) * (1 - 3 * t ** 2)) @ a


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up: compile plans, fill caches
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def jit_config(module):
    """The TF1 ``ConfigProto`` asking ``module``'s Session to compile whole graphs."""
    options = module.OptimizerOptions(global_jit_level=module.OptimizerOptions.ON_1)
    return module.ConfigProto(graph_options=module.GraphOptions(optimizer_options=options))


def _time_graph_library(module, a, x0, repeats, xla: bool = False):
    """gradflow and TF1 graph mode share the code: their APIs agree here."""
    graph = module.Graph()
    with graph.as_default():
        start = time.perf_counter()
        x = module.placeholder(module.float64, shape=[len(x0)], name="x")
        z = module.reshape(module.matmul(module.constant(a), module.reshape(x, [-1, 1])), [-1])
        (h,) = module.hessians(module.reduce_sum(module.square(module.tanh(z))), x)
        build = time.perf_counter() - start
        with module.Session(graph=graph, config=jit_config(module) if xla else None) as sess:
            result = sess.run(h, {x: x0})
            run = median_time(lambda: sess.run(h, {x: x0}), repeats)
    return build, run, result


def time_gradflow(a, x0, repeats):
    return _time_graph_library(load("gradflow"), a, x0, repeats)


def time_tensorflow(a, x0, repeats):
    tf = load("tensorflow")
    return None if tf is None else _time_graph_library(tf, a, x0, repeats)


def time_gradflow_xla(a, x0, repeats):
    if load("jax") is None:
        return None
    return _time_graph_library(load("gradflow"), a, x0, repeats, xla=True)


def time_tensorflow_xla(a, x0, repeats):
    tf = load("tensorflow")
    return None if tf is None else _time_graph_library(tf, a, x0, repeats, xla=True)


def time_jax(a, x0, repeats):
    jax = load("jax")
    if jax is None:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    a_j, x_j = jnp.asarray(a), jnp.asarray(x0)
    start = time.perf_counter()
    compiled = jax.jit(jax.hessian(lambda x: jnp.sum(jnp.tanh(a_j @ x) ** 2))) \
        .lower(x_j).compile()
    build = time.perf_counter() - start
    run = median_time(lambda: compiled(x_j).block_until_ready(), repeats)
    result = np.asarray(compiled(x_j))
    jax.config.update("jax_enable_x64", False)
    return build, run, result


def time_torch(a, x0, repeats):
    torch = load("torch")
    if torch is None:
        return None
    a_t, x_t = torch.tensor(a), torch.tensor(x0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.func warns about torch.jit internals
        hessian = torch.func.hessian(lambda x: torch.sum(torch.tanh(a_t @ x) ** 2))
        hessian(x_t)
    run = median_time(lambda: hessian(x_t), repeats)
    return None, run, hessian(x_t).numpy()


_TIMERS = {"gradflow": time_gradflow, "tensorflow": time_tensorflow, "jax": time_jax,
           "torch": time_torch}
_XLA_TIMERS = {"gradflow XLA": time_gradflow_xla, "tensorflow XLA": time_tensorflow_xla}


def tables(sizes=(100, 400), repeats: int = 20, xla: bool = False) -> list[Table]:
    table = Table("hessian: sum(tanh(A x)^2), float64 (build ms once, run ms median)",
                  ["n", "library", "build ms", "run ms", "run vs TF", "gf/best peer", "<=1x",
                   "max error"],
                  note="run vs TF: TensorFlow's run time over this library's (higher is "
                       "faster); gf/best peer: gradflow's run time over the fastest peer's.")
    for n in sizes:
        a, x0 = problem(n)
        expected = closed_form(a, x0)
        timers = {**_TIMERS, **(_XLA_TIMERS if xla else {})}
        measured = {name: timer(a, x0, repeats) for name, timer in timers.items()}
        runs = {name: m[1] for name, m in measured.items()
                if m is not None and not name.startswith("gradflow")}
        _, peer_run = best_peer(runs)
        tf_run = runs.get("tensorflow")
        for library, m in measured.items():
            if m is None:
                table.add(n, library, "not installed", None, None, None, None, None)
                continue
            build, run, result = m
            is_gf = library.startswith("gradflow")
            table.add(n, library, None if build is None else build * 1e3, run * 1e3,
                      f"{tf_run / run:.2f}x" if tf_run else None,
                      ratio_text(run, peer_run) if is_gf else None,
                      verdict(run <= peer_run) if is_gf and peer_run else None,
                      f"{float(np.max(np.abs(result - expected))):.1e}")
    return [table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--xla", action="store_true",
                        help="also time gradflow and TensorFlow with XLA on")
    args = parser.parse_args(argv)
    print_tables(tables(args.sizes, args.repeats, args.xla))
    return 0


if __name__ == "__main__":
    sys.exit(main())
