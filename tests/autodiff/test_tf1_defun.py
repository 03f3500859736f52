"""``Defun`` as TF1's ``function.Defun`` (fixtures from TF 2.21): keyword arguments,
``definition``, ``instantiate``, ``declared_input_types``, ``captured_inputs``,
``stateful_ops``, capture by value, custom gradients."""
import importlib.util

import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import FIXTURES, load_json

_spec = importlib.util.spec_from_file_location("defun_cases", FIXTURES / "defun_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

RECORDED = load_json("control_flow_defun")
ACTUAL = cases.record(gf, gf.Defun)


@pytest.mark.parametrize("key", ["add", "capture", "stateful_types", "instantiated_declared"])
def test_observable_structure_matches_tf1(key):
    assert ACTUAL[key] == RECORDED[key]


def test_values_and_custom_gradients_match_tf1():
    np.testing.assert_allclose(ACTUAL["values"], RECORDED["values"], rtol=1e-6)


@pytest.mark.parametrize("label", ["out_names_count", "unknown_keyword"])
def test_errors_match_tf1(label):
    assert ACTUAL["errors"][label] == RECORDED["errors"][label]


def test_gradient_given_twice_is_an_error_here():
    # TF1 silently takes one of the two; gradflow refuses the ambiguity.
    assert ACTUAL["errors"]["gradient_twice"]["error"] == "ValueError"


def test_capture_by_value_refuses_a_placeholder():
    p = gf.placeholder(gf.float32, [])

    @gf.Defun(gf.float32, capture_by_value=True)
    def uses_placeholder(a):
        return a * p

    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        uses_placeholder(gf.constant(1.0))


def test_outer_control_dependency_inside_a_defun_is_refused_as_tf1():
    outer = gf.constant([10.0], name="outer")

    @gf.Defun(gf.float32)
    def foo(y):
        with gf.control_dependencies([outer]):
            return gf.identity(y)

    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="not an element of this graph."):
        foo(outer)
    assert [op.name for op in graph.get_operations()] == before


def test_defun_gradients_first_and_second_order():
    @gf.Defun(gf.float64, gf.float64)
    def poly(a, b):
        return gf.sin(a) * b + a * a * b

    x = np.array([0.3, -0.7])
    w = np.array([1.2, 0.4])
    def build(a, b):  # a Defun's outputs have unknown static shapes
        return gf.reshape(poly(a, b), [2])

    assert gradient_error(build, [x, w]) < 1e-6
    assert second_order_error(build, [x, w]) < 1e-5
