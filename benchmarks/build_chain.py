"""Graph-building speed: a long elementwise chain, forward then ``gradients()``.

The chain alternates ``y = tanh(y) * 1.01 + x`` and ``y = sin(y)``; it is the SPEC's
measure of building cost. For gradflow and TensorFlow (TF1 graph mode) it times the
forward build and the ``gradients()`` call apart; for JAX it times tracing ``grad``
(``make_jaxpr(grad(f))``, forward included); PyTorch builds no graph, so its column is
an eager forward + ``backward()`` (recording and running the tape). Also checks that a
``gradients()`` call costs the same inside a graph of 100k unrelated ops.

    python benchmarks/build_chain.py [--steps 1000 4000 16000 64000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from common import SETTLE_S, Table, load, print_tables, ratio_text, timed, verdict

import gradflow as gf

GRAD_SPEEDUP_VS_TF = 30.0  # target: gradients() at least this much faster per op


def build_chain(steps: int, module=gf):
    """The chain in gradflow or in TensorFlow's TF1 API (same function names)."""
    x = module.placeholder(module.float32, shape=[64], name="x")
    return x, module.reduce_sum(chain(x, steps, module.tanh, module.sin))


def chain(x, steps: int, tanh, sin):
    y = x
    for i in range(steps):
        y = tanh(y) * 1.01 + x if i % 2 == 0 else sin(y)
    return y


def measure(steps: int, module=gf) -> dict:
    """Forward and gradient build times and op counts in a fresh graph."""
    graph = module.Graph()
    with graph.as_default():
        forward_s, (x, loss) = timed(lambda: build_chain(steps, module))
        forward_ops = _num_ops(graph)
        gradient_s, _ = timed(lambda: module.gradients(loss, [x]))
        gradient_ops = _num_ops(graph) - forward_ops
    return {"steps": steps, "forward_ops": forward_ops, "forward_s": forward_s,
            "gradient_ops": gradient_ops, "gradient_s": gradient_s}


def _num_ops(graph) -> int:
    return graph.num_ops() if hasattr(graph, "num_ops") else len(graph.get_operations())


def measure_jax(steps: int) -> dict:
    """Tracing time of ``f`` and of ``grad(f)`` (which traces the forward pass again)."""
    jax = load("jax")
    jnp = jax.numpy

    def f(x):
        return jnp.sum(chain(x, steps, jnp.tanh, jnp.sin))

    x = jnp.ones(64, jnp.float32)
    forward_s, jaxpr = timed(lambda: jax.make_jaxpr(f)(x))
    total_s, grad_jaxpr = timed(lambda: jax.make_jaxpr(jax.grad(f))(x))
    return {"steps": steps, "forward_ops": len(jaxpr.eqns), "forward_s": forward_s,
            "gradient_ops": len(grad_jaxpr.eqns), "total_s": total_s}


def measure_torch(steps: int) -> dict:
    """Eager forward (recording the tape) plus ``backward()``: torch's way to a gradient."""
    torch = load("torch")

    def run():
        x = torch.ones(64, requires_grad=True)
        torch.sum(chain(x, steps, torch.tanh, torch.sin)).backward()

    total_s, _ = timed(run)
    return {"steps": steps, "total_s": total_s}


def _median_measurement(fn, steps: int, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        time.sleep(SETTLE_S)  # let the thread pools of the library timed before go idle
        runs.append(fn(steps))
    result = dict(runs[0])
    for key in result:
        if key.endswith("_s"):
            result[key] = statistics.median(r[key] for r in runs)
    return result


_MEASURES = {"gradflow": measure, "tensorflow": lambda s: measure(s, load("tensorflow")),
             "jax": measure_jax, "torch": measure_torch}


def total_s(result: dict) -> float:
    return result.get("total_s") or result["forward_s"] + result["gradient_s"]


def measure_all(step_counts, peer_limit_s: float) -> dict:
    """{library: {steps: result}}, every library measured at one size before the next
    size (so a change in the machine's load hits all alike). gradflow's results are
    medians of 3 runs at every size; a peer's of 3 runs up to 4k steps and of 1 run above
    (each then takes 10 s or more, itself an average over the load). A peer is skipped
    at sizes predicted to exceed the limit."""
    libraries = [library for library in _MEASURES if load(library) is not None]
    for library in libraries:
        _MEASURES[library](100)  # warm up: first-call costs are not building costs
    results: dict = {library: {} for library in libraries}
    for steps in step_counts:
        for library in libraries:
            measured = results[library]
            previous = measured[max(measured)] if measured else None
            if previous and library != "gradflow" and \
                    total_s(previous) * steps / previous["steps"] > peer_limit_s:
                continue
            repeats = 3 if steps <= 4000 or library == "gradflow" else 1
            measured[steps] = _median_measurement(_MEASURES[library], steps, repeats)
    return results


def tables(step_counts=(1000, 4000, 16000, 64000), peer_limit_s: float = 90.0) -> list[Table]:
    results = measure_all(step_counts, peer_limit_s)
    gradflow_rows = Table("build_chain: gradflow forward build and gradients()",
                          ["steps", "fwd ops", "fwd s", "fwd ops/s", "grad ops", "grad s",
                           "grad ops/s"])
    for steps, r in results["gradflow"].items():
        gradflow_rows.add(steps, r["forward_ops"], r["forward_s"],
                          round(r["forward_ops"] / r["forward_s"]), r["gradient_ops"],
                          r["gradient_s"], round(r["gradient_ops"] / r["gradient_s"]))
    comparison = Table(
        "build_chain vs peers (per forward op: gradients() time / forward ops)",
        ["steps", "gf grad us/op", "TF grad us/op", "TF/gf", f">={GRAD_SPEEDUP_VS_TF:.0f}x",
         "gf fwd+grad s", "JAX grad trace s", "gf/JAX", "<=1x", "torch eager fwd+bwd s"],
        note="TF/gf: how many times faster gradflow's gradients() is than tf.gradients per "
             "op; gf/JAX: gradflow's forward build + gradients() over JAX tracing grad(f).")
    for steps, r in results["gradflow"].items():
        comparison.add(steps, *_peer_cells(r, {lib: results.get(lib, {}).get(steps)
                                               for lib in ("tensorflow", "jax", "torch")}))
    return [gradflow_rows, comparison]


def _peer_cells(r: dict, peers: dict) -> list:
    gf_per_op = r["gradient_s"] / r["forward_ops"] * 1e6
    tf, jx, th = peers["tensorflow"], peers["jax"], peers["torch"]
    tf_per_op = tf["gradient_s"] / tf["forward_ops"] * 1e6 if tf else None
    tf_ratio = tf_per_op / gf_per_op if tf_per_op else None
    gf_total = total_s(r)
    jax_ratio = gf_total / jx["total_s"] if jx else None
    return [gf_per_op, tf_per_op, None if tf_ratio is None else f"{tf_ratio:.1f}x",
            verdict(None if tf_ratio is None else tf_ratio >= GRAD_SPEEDUP_VS_TF),
            gf_total, jx["total_s"] if jx else None,
            ratio_text(gf_total, jx["total_s"] if jx else None),
            verdict(None if jax_ratio is None else jax_ratio <= 1.0),
            th["total_s"] if th else None]


def gradients_time_in(graph: gf.Graph, steps: int) -> float:
    with graph.as_default():
        x, loss = build_chain(steps)
        seconds, _ = timed(lambda: gf.gradients(loss, [x]))
        return seconds


def unrelated_ops_overhead(steps: int = 500, unrelated: int = 100_000) -> tuple[float, float]:
    """gradients() time for a small model in an empty graph vs one with 100k other ops."""
    empty = min(gradients_time_in(gf.Graph(), steps) for _ in range(3))
    big = gf.Graph()
    with big.as_default():
        c = gf.constant(1.0)
        for _ in range(unrelated // 2):
            c = c + 1.0
    crowded = min(gradients_time_in(big, steps) for _ in range(3))
    return empty, crowded


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 4000, 16000, 64000])
    parser.add_argument("--peer-limit-s", type=float, default=90.0,
                        help="skip a peer at sizes predicted to take longer than this")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(1000)  # prove nothing recurses
    print_tables(tables(args.steps, args.peer_limit_s))
    empty, crowded = unrelated_ops_overhead()
    print(f"gradients() of a 500-step chain: empty graph {empty * 1e3:.1f} ms, "
          f"graph with 100k unrelated ops {crowded * 1e3:.1f} ms "
          f"(ratio {crowded / empty:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
