"""Cells and unrollers against TF 2.21 (fixture ``rnn``): variable names and shapes,
outputs, final states and gradients from the same constant weights."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.loops import flatten
from tf_fixtures import load_arrays, load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
from rnn_cases import CASES, input_value, weight_value  # noqa: E402

META = load_json("rnn")
ARRAYS = load_arrays("rnn")


def run_case(name: str):
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant(input_value(), name="x")
        outputs, state = CASES[name](gf, x)
        trainable = gf.trainable_variables()
        flat = flatten((outputs, state))
        loss = gf.add_n([gf.reduce_sum(t * (1.0 + 0.1 * i)) for i, t in enumerate(flat)])
        grads = gf.gradients(loss, [x] + trainable)
        with gf.Session(graph=graph) as sess:
            sess.run(gf.global_variables_initializer())
            for k, v in enumerate(trainable):
                v.load(weight_value(v.shape.as_list(), k), sess)
            values, grad_values = sess.run([flat, grads])
        names = [[v.name, v.shape.as_list()] for v in gf.global_variables()]
        shapes = [t.shape.as_list() for t in flat]
    return names, [v.name for v in trainable], shapes, values, grad_values


def test_fixture_inputs_match_the_shared_cases():
    np.testing.assert_array_equal(ARRAYS["inputs"], input_value())


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_tensorflow(name):
    recorded = META["cases"][name]
    names, trainable, shapes, values, grads = run_case(name)
    assert names == recorded["variables"]
    assert trainable == recorded["trainable"]
    assert shapes == recorded["shapes"]
    for i, value in enumerate(values):
        np.testing.assert_allclose(value, ARRAYS[f"{name}/out{i}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} output {i}")
    for i, value in enumerate(grads):
        np.testing.assert_allclose(np.asarray(value), ARRAYS[f"{name}/grad{i}"], rtol=1e-4,
                                   atol=1e-5, err_msg=f"{name} gradient {i}")
