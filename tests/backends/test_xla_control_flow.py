"""Functional control flow under the XLA backend: ``cond`` becomes ``lax.cond`` and
``while_loop`` ``lax.while_loop``, compiled in the cluster of the ops around them."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import clustered_op_types, jit_config

pytest.importorskip("jax")

X = np.array([0.1, 0.5, 1.0])


def _both(build, feeds: dict):
    """``build(x, p) -> fetches`` run on NumPy and under global jit; and the jit plan's
    compiled op types."""
    results = []
    for config in (None, jit_config()):
        graph = gf.Graph()
        with graph.as_default():
            x = gf.placeholder(gf.float64, [3], name="x")
            p = gf.placeholder(gf.bool, [], name="p")
            fetches = build(x, p)
            with gf.Session(graph=graph, config=config) as sess:
                results.append([sess.run(fetches, {x: X, p: v}) for v in feeds["p"]])
            types = clustered_op_types(graph, fetches, [x, p]) if config else None
    return results, types


def _assert_close(got, want):
    for g_run, w_run in zip(got, want, strict=True):
        for g, w in zip(g_run, w_run, strict=True):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_cond_and_its_gradient_compile_with_the_ops_around_them():
    def build(x, p):
        y = gf.cond(p, lambda: gf.tanh(x) * 2.0, lambda: x * x + gf.reduce_sum(x))
        return [y, gf.gradients(gf.reduce_sum(y * y), x)[0]]

    (want, got), types = _both(build, {"p": [True, False]})
    assert "If" in types and "Tanh" not in types  # the branch ops live inside the If
    _assert_close(got, want)


def test_while_loops_with_and_without_maximum_iterations():
    def build(x, p):
        _, acc = gf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 1.5 + gf.sin(a)),
                               [gf.constant(0), x * 1.0])
        capped = gf.while_loop(lambda a: gf.reduce_sum(a) < 100.0, lambda a: a * 2.0,
                               [x + 1.0], maximum_iterations=3)
        nested = gf.while_loop(
            lambda a: gf.reduce_sum(a) < 50.0,
            lambda a: gf.cond(a[0] > 1.0, lambda: a * 3.0, lambda: a + 1.0), [x * 1.0])
        return [acc, capped, nested]

    (want, got), types = _both(build, {"p": [True]})
    assert "While" in types
    _assert_close(got, want)


def test_a_loop_with_an_op_without_lowering_stays_on_numpy():
    def body(a):
        return gf.nn.top_k(a, k=3).values + 1.0

    def build(x, p):
        return [gf.while_loop(lambda a: gf.reduce_sum(a) < 20.0, body, [x * 1.0])]

    (want, got), types = _both(build, {"p": [True]})
    assert "While" not in types
    _assert_close(got, want)


def test_map_fn_without_tensor_arrays_of_known_size_still_runs():
    def build(x, p):
        return [gf.map_fn(lambda v: v * v + 1.0, x * 2.0)]

    (want, got), _ = _both(build, {"p": [True]})
    _assert_close(got, want)
