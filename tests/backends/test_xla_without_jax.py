"""Without JAX: gradflow imports, and asking for XLA raises a clear ImportError."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.xla import runtime
from gradflow.runtime import clusters
from gradflow.runtime.clusters import XlaUnavailableError
from xla_helpers import jit_config


@pytest.fixture
def no_jax(monkeypatch):
    """``import jax`` fails, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.setattr(runtime, "_loaded", {})


def test_gradflow_imports_without_jax():
    code = "import sys; sys.modules['jax'] = None; import gradflow; print(gradflow.xla)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_jit_scope_and_compile_say_how_to_install(no_jax):
    for ask in (gf.xla.experimental.jit_scope, gf.contrib.compiler.jit.experimental_jit_scope):
        with pytest.raises(XlaUnavailableError, match=r'pip install "gradflow\[xla\]"'):
            with ask():
                pass
    with pytest.raises(ImportError, match="JAX is not installed"):
        gf.xla.experimental.compile(lambda: gf.constant(1.0))


def test_global_jit_session_says_how_to_install(no_jax):
    graph = gf.Graph()
    with graph.as_default():
        y = gf.constant(2.0) * gf.placeholder(gf.float32, [])
        with gf.Session(graph=graph, config=jit_config()) as sess:
            with pytest.raises(XlaUnavailableError, match="gradflow\\[xla\\]"):
                sess.run(y, {y.op.inputs[1]: 3.0})


def test_graphs_only_marked_by_compile_attrs_still_run_on_numpy(no_jax):
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [2])
        with gf.jit_scope():  # records attrs only (imported graphs carry them too)
            y = gf.tanh(x) * 2.0
        with gf.Session(graph=graph) as sess:
            np.testing.assert_allclose(sess.run(y, {x: [0.0, 1.0]}), 2 * np.tanh([0.0, 1.0]))


def test_without_a_registered_backend_only_global_jit_fails(monkeypatch):
    monkeypatch.setattr(clusters, "_compiler", [])
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [2])
        with gf.jit_scope():
            y = gf.tanh(x) * 2.0
        with gf.Session(graph=graph) as sess:
            np.testing.assert_allclose(sess.run(y, {x: [0.0, 1.0]}), 2 * np.tanh([0.0, 1.0]))
        with gf.Session(graph=graph, config=jit_config()) as sess:
            with pytest.raises(XlaUnavailableError, match="no XLA backend is loaded"):
                sess.run(y, {x: [0.0, 1.0]})
