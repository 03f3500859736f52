"""while_loop, cond and case as TF1 builds and runs them (fixtures from TF 2.21).

The programs live in ``tests/fixtures/tf/control_flow_cases.py``; the fixture generator
ran them under TensorFlow, these tests run them under gradflow and compare the built
structure (containers, dtypes, static shapes), the values, and for failures the stage
(build or run), the exception type and a key part of the message.
"""
import importlib.util
import re

import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import FIXTURES, load_json

_spec = importlib.util.spec_from_file_location("control_flow_cases",
                                               FIXTURES / "control_flow_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

RECORDED = load_json("control_flow")


def test_every_case_was_recorded():
    assert sorted(RECORDED) == sorted(cases.CASES)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_tf1(name):
    expected = RECORDED[name]
    actual = cases.record(gf, name)
    assert actual["stage"] == expected["stage"], actual
    if "structure" in expected:
        assert actual["structure"] == expected["structure"]
    if "error" in expected:
        assert actual["error"] == expected["error"], actual["message"]
        assert re.search(cases.MATCH[name], actual["message"]), actual["message"]
    else:
        assert len(actual["values"]) == len(expected["values"])
        for got, want in zip(actual["values"], expected["values"], strict=True):
            if isinstance(want, list) and want and isinstance(want[0], str):
                assert got == want
            else:
                np.testing.assert_allclose(np.asarray(got, dtype=float),
                                           np.asarray(want, dtype=float), rtol=1e-12)


def test_bad_calls_leave_the_graph_unchanged():
    graph = gf.get_default_graph()
    pred, x, vector = gf.constant(True), gf.constant([1, 2]), gf.constant([1, 2])
    bad_calls = [
        lambda: gf.while_loop(lambda i: i[0] < 10, lambda i: gf.concat([i, i], 0), [x]),
        lambda: gf.while_loop(lambda i: i[0] < 10, lambda i: i + 1, [x],
                              maximum_iterations=vector),
        lambda: gf.while_loop(lambda i, j: i[0] < 10, lambda i, j: (i + 1,), [x, x]),
        lambda: gf.while_loop(lambda i: i, lambda i: i + 1, [x]),
        lambda: gf.cond(pred, lambda: [x * 2, x], lambda: [x * 3]),
        lambda: gf.cond(pred, lambda: x * 2, lambda: gf.cast(x, gf.float32)),
        lambda: gf.cond(pred, lambda: None, lambda: x),
        lambda: gf.case([(pred, lambda: x * 2)], default=lambda: gf.cast(x, gf.float32)),
        lambda: gf.case([(pred, 1)], default=lambda: x),
    ]
    before = [op.name for op in graph.get_operations()]
    collections = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
    for call in bad_calls:
        with pytest.raises((TypeError, ValueError)):
            call()
        assert [op.name for op in graph.get_operations()] == before
        assert {key: list(graph.get_collection(key))
                for key in graph.get_all_collection_keys()} == collections


# Second order through each changed path (TF1's while_loop has none; gradflow does).
def _loop_with_outer_control(x):
    marker = gf.constant(1.0, gf.float64)

    def body(i, a):
        with gf.control_dependencies([marker]):
            return i + 1, gf.sin(a) * x
    return gf.while_loop(lambda i, a: i < 3, body, [gf.constant(0), x])[1]


def _single_bounded_loop(x):
    return gf.while_loop(lambda a: gf.reduce_sum(a) < 1e9, lambda a: a * x, [x],
                         maximum_iterations=3)


def _cond_with_ops(x):
    def true_fn():
        with gf.control_dependencies([gf.no_op()]):
            return [gf.sin(x) * x, gf.no_op()]
    return gf.cond(gf.reduce_sum(x) > 0.0, true_fn, lambda: [gf.exp(x), gf.no_op()])[0]


def _case_without_default(x):
    total = gf.reduce_sum(x)
    return gf.case([(total < 0.0, lambda: [x * x]), (total >= 0.0, lambda: [gf.tanh(x) * x])])


@pytest.mark.parametrize("build", [_loop_with_outer_control, _single_bounded_loop,
                                   _cond_with_ops, _case_without_default])
@pytest.mark.parametrize("point", [[0.3, -0.2], [-0.6, 0.1]])
def test_gradients_first_and_second_order(build, point):
    x = np.array(point)
    assert gradient_error(build, [x]) < 1e-6
    assert second_order_error(build, [x]) < 1e-5
