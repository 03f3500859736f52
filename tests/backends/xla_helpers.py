"""Shared helpers of the XLA backend tests: sessions with and without global jit."""
from __future__ import annotations

import numpy as np

import gradflow as gf
from gradflow.runtime.executor import compile_plan


def jit_config() -> gf.ConfigProto:
    """TF1's way of asking for whole-graph compilation."""
    return gf.ConfigProto(graph_options=gf.GraphOptions(optimizer_options=gf.OptimizerOptions(
        global_jit_level=gf.OptimizerOptions.ON_1)))


def clustered_op_types(graph: gf.Graph, fetches: list, feeds: list, targets: list = (),
                       global_jit: bool = True) -> set:
    """The op types a plan of ``fetches`` compiles, and the plan's cluster count."""
    plan = compile_plan(graph, fetches, feeds, list(targets), global_jit=global_jit)
    names = {name for cluster in plan.clusters for name in cluster}
    return {graph.get_operation_by_name(n).type for n in names}


def run_both(build, inputs: list) -> tuple:
    """Values and gradients (of sum(y * w)) on NumPy and under global jit, and the op
    types the jit plan compiled."""
    results = []
    for config in (None, jit_config()):
        graph = gf.Graph()
        with graph.as_default():
            xs = [gf.placeholder(gf.float64, v.shape) for v in inputs]
            # an op before the one under test: under global jit a lone op stays on NumPy
            y = build(*[x + 0.25 for x in xs])
            weights = gf.constant(np.linspace(-1, 1, y.shape.num_elements())
                                  .reshape(y.shape.as_list()))
            grads = gf.gradients(gf.reduce_sum(y * weights), xs)
            fetches = [y] + grads
            with gf.Session(graph=graph, config=config) as sess:
                results.append(sess.run(fetches, dict(zip(xs, inputs))))
            types = clustered_op_types(graph, fetches, xs) if config is not None else None
    return results, types


def assert_lowered_like_numpy(build, inputs: list, lowered: set, tolerance: float) -> None:
    """``build``'s values and gradients compile (``lowered`` among the clustered op
    types) and equal the NumPy backend's in dtype, shape and value within
    ``tolerance`` (relative and absolute)."""
    (numpy_values, xla_values), types = run_both(build, inputs)
    assert lowered <= types, f"not compiled: {lowered - types}"
    for got, want in zip(xla_values, numpy_values, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
