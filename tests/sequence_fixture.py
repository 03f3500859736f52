"""Replays the recorded cases of ``tests/fixtures/tf/make_sequence_ops.py`` in gradflow."""
from __future__ import annotations

from typing import Callable

import numpy as np
from tf_fixtures import load_arrays, load_json

import gradflow as gf

DATA = load_json("sequence_ops")
ARRAYS = load_arrays("sequence_ops")


def inputs_of(name: str) -> list[np.ndarray]:
    """The recorded inputs of case ``name``, in order."""
    count = sum(1 for key in ARRAYS if key.startswith(f"{name}/in"))
    return [ARRAYS[f"{name}/in{i}"] for i in range(count)]


def replay(name: str, build: Callable) -> tuple:
    """``build(*constants)`` on the recorded inputs in a fresh graph: the output's value
    (values of a SparseTensor), gradients of ``sum(out * w)`` and the graph."""
    graph = gf.Graph()
    with graph.as_default():
        xs = [gf.constant(v) for v in inputs_of(name)]
        out = build(*xs)
        dense = out.values if isinstance(out, gf.SparseTensor) else out
        grads = [gf.zeros([]) if g is None else gf.convert_to_tensor(g)
                 for g in gf.gradients(gf.reduce_sum(dense * ARRAYS[f"{name}/w"]), xs)]
        with gf.Session() as sess:
            out_value, grad_values = sess.run([out, grads])
    return out, out_value, grad_values, graph


def check(name: str, build: Callable, rtol: float = 1e-9, atol: float = 1e-10) -> tuple:
    """Replays ``name`` and compares output and gradients with TF's."""
    out, value, grads, graph = replay(name, build)
    if isinstance(value, gf.SparseTensorValue):
        np.testing.assert_array_equal(value.indices, ARRAYS[f"{name}/out_indices"])
        value = value.values
    np.testing.assert_allclose(value, ARRAYS[f"{name}/out"], rtol=rtol, atol=atol)
    for i, grad in enumerate(grads):
        np.testing.assert_allclose(grad, ARRAYS[f"{name}/grad{i}"], rtol=rtol, atol=atol,
                                   err_msg=f"gradient {i} of {name}")
    return out, graph
