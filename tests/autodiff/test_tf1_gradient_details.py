"""Gradient details as TF1 has them (fixtures from TF 2.21): where AddN goes, hessians
of functions linear in x, and compute_gradient's random evaluation point."""
import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_arrays, load_json

RECORDED = load_json("control_flow_gradients")
ARRAYS = load_arrays("control_flow_gradients")


def _aggregation(colocate: bool, tasks: bool) -> dict:
    with gf.Graph().as_default() as g:
        with g.device("/device:GPU:1"):
            w = gf.constant(1.0, shape=[1, 1], name="w")
        x = gf.constant(1.0, shape=[1, 2], name="x")
        y = gf.constant(1.0, shape=[1, 2], name="y")
        with g.device("/task:1" if tasks else ""):
            wx = gf.matmul(w, x, name="wx")
        with g.device("/task:2" if tasks else ""):
            wy = gf.matmul(w, y, name="wy")
        with g.device("/device:GPU:0"):
            z = gf.add(wx, wy, name="z")
        (gw,) = gf.gradients(z, [w], colocate_gradients_with_ops=colocate)
        return {"type": gw.op.type, "name": gw.op.name, "device": gw.op.device,
                "groups": [c.decode() for c in gw.op.colocation_groups()],
                "inputs": [t.op.name for t in gw.op.inputs]}


@pytest.mark.parametrize("colocate", [True, False])
@pytest.mark.parametrize("tasks", [True, False])
def test_aggregated_gradient_is_placed_as_tf1(colocate, tasks):
    key = "aggregation_" + ("devices_" if tasks else "") + \
        ("colocated" if colocate else "plain")
    expected = RECORDED[key]
    actual = _aggregation(colocate, tasks)
    assert actual["type"] == expected["type"] and actual["groups"] == expected["groups"]
    assert actual["device"] == expected["device"]
    assert len(actual["inputs"]) == len(expected["inputs"])


@pytest.mark.parametrize("label, shape", [("matrix", [10, 10]), ("unknown", None),
                                          ("vector", [3])])
def test_hessians_of_a_linear_function_raise_as_tf1(label, shape):
    expected = RECORDED["hessians"][label]
    graph = gf.get_default_graph()
    x = gf.placeholder(gf.float32, shape)
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match=expected["message"]):
        gf.hessians(x, x)
    assert [op.name for op in graph.get_operations()] == before
    assert str(gf.hessians(x * x, x)[0].shape) == expected["quadratic_shape"]


def test_hessians_of_a_quadratic_have_tf1_values():
    x = gf.placeholder(gf.float64, [3])
    (h,) = gf.hessians(gf.reduce_sum(x * x * x), x)
    with gf.Session() as session:
        np.testing.assert_allclose(session.run(h, {x: [1.0, 2.0, 3.0]}),
                                   np.diag([6.0, 12.0, 18.0]))


def test_compute_gradient_draws_its_point_from_numpy_as_tf1():
    a = gf.placeholder(gf.float64, [3])
    with gf.Session():
        np.random.seed(7)
        theoretical, numeric = gf.test.compute_gradient(a, [3], a * a, [3])
    np.testing.assert_allclose(theoretical, ARRAYS["single_theoretical"], rtol=1e-12)
    np.testing.assert_allclose(numeric, ARRAYS["single_numeric"], rtol=1e-6)


def test_compute_gradient_error_with_seed_agrees_with_tf1():
    b = gf.placeholder(gf.float64, [2, 2])
    with gf.Session():
        np.random.seed(3)
        error = gf.test.compute_gradient_error(b, [2, 2], gf.sin(b) * b, [2, 2])
    assert error == pytest.approx(RECORDED["error_seed3"], rel=0.5, abs=1e-8)
