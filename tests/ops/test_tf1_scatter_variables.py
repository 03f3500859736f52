"""In-place scatters on variables (``scatter_update`` ... ``scatter_nd_update``) against
fixtures recorded from TF 2.21: results, variable contents, errors and messages."""
import importlib.util
import re

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import FIXTURES, load_json

_spec = importlib.util.spec_from_file_location("scatter_cases", FIXTURES / "scatter_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

RECORDED = load_json("control_flow_scatter")


def test_every_case_was_recorded():
    assert sorted(RECORDED) == sorted(cases.CASES)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_scatter_matches_tf1(name):
    expected, actual = RECORDED[name], cases.record(gf, name)
    assert actual["stage"] == expected["stage"], actual
    if "error" in expected:
        assert actual["error"] == expected["error"], actual["message"]
        assert re.search(cases.MATCH[name], actual["message"]), actual["message"]
        return
    np.testing.assert_array_equal(np.asarray(actual["value"], dtype=object),
                                  np.asarray(expected["value"], dtype=object))
    if "variable" in expected:
        np.testing.assert_array_equal(actual["variable"], expected["variable"])


def test_bad_scatter_leaves_the_graph_unchanged():
    v = gf.Variable(cases.FLOAT_INIT, name="v")
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="updates"):
        gf.scatter_update(v, [0], [[1.0, 1.0, 1.0]])
    with pytest.raises(TypeError, match="indices"):
        gf.scatter_add(v, [0.5], [[1.0, 1.0]])
    assert [op.name for op in graph.get_operations()] == before


def test_scatters_compose_in_a_training_step():
    v = gf.Variable(cases.FLOAT_INIT, name="v")
    rows = gf.placeholder(gf.int32, [None])
    step = gf.scatter_mul(v, rows, gf.fill(gf.stack([gf.size(rows), 2]), 0.5))
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        session.run(step, {rows: [0, 2, 0]})
        np.testing.assert_allclose(session.run(v), [[0.25, 0.5], [3, 4], [2.5, 3]])
