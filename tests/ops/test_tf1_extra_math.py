"""``xlog1py``, ``cross`` and ``guarantee_const`` against TF 2.21 fixtures, with numeric
gradient checks (first and second order)."""
import re

import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_json

RECORDED = load_json("control_flow_ops")
MATCH = {"cross_last_dim": "Dimension must be 3 but is 2",
         "cross_shapes": "2.*3|3.*2",
         "cross_dtypes": "Input 'b' of 'Cross' Op has type float64 that does not match type "
                         "float32 of argument 'a'.",
         "xlog1py_int": "has DataType int32 not in list of allowed values",
         "xlog1py_shapes": "2.*3",
         "guarantee_const_gradient": "No gradient defined for operation'GuaranteeConst' "
                                     r"\(op type: GuaranteeConst\)"}


def test_values_gradients_and_names_match_tf1():
    x = gf.constant([0.0, 1.0, 2.0, 0.0], gf.float64)
    y = gf.constant([-1.0, 0.5, 3.0, 2.0], gf.float64)
    z = gf.math.xlog1py(x, y)
    gx, gy = gf.gradients(z, [x, y])
    a = gf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], gf.float64)
    b = gf.constant([[4.0, 5.0, 6.0], [1.0, 1.0, 1.0]], gf.float64)
    c = gf.linalg.cross(a, b)
    ga, gb = gf.gradients(gf.reduce_sum(c * gf.constant([1.0, 2.0, 3.0], gf.float64)), [a, b])
    g = gf.guarantee_const(a)
    assert {"xlog1py": z.name, "cross": c.name, "guarantee_const": g.name} == RECORDED["names"]
    with gf.Session() as session:
        values = session.run({"xlog1py": z, "xlog1py_dx": gx, "xlog1py_dy": gy, "cross": c,
                              "cross_da": ga, "cross_db": gb, "guarantee_const": g})
    for key, expected in RECORDED["values"].items():
        np.testing.assert_allclose(values[key], expected, rtol=1e-12, err_msg=key)


def _bad_calls():
    a = gf.constant([[1.0, 2.0, 3.0]])
    return {
        "cross_last_dim": lambda: gf.linalg.cross(gf.zeros([2, 2]), gf.zeros([2, 2])),
        "cross_shapes": lambda: gf.linalg.cross(gf.zeros([2, 3]), gf.zeros([3, 3])),
        "cross_dtypes": lambda: gf.linalg.cross(gf.zeros([3]), gf.zeros([3], gf.float64)),
        "xlog1py_int": lambda: gf.math.xlog1py(gf.constant(1), gf.constant(2)),
        "xlog1py_shapes": lambda: gf.math.xlog1py(gf.zeros([2]), gf.zeros([3])),
        "guarantee_const_gradient": lambda: gf.gradients(gf.reduce_sum(gf.guarantee_const(a)),
                                                         a),
    }


@pytest.mark.parametrize("label", sorted(MATCH))
def test_errors_match_tf1(label):
    expected = RECORDED["errors"][label]
    with pytest.raises(Exception) as raised:
        _bad_calls()[label]()
    assert type(raised.value).__name__ == expected["error"]
    assert re.search(MATCH[label], str(raised.value))


def test_gradients_first_and_second_order():
    x = np.array([0.3, -0.2, 1.5])
    y = np.array([0.7, 0.1, -0.4])
    assert gradient_error(gf.math.xlog1py, [x, y]) < 1e-6
    assert second_order_error(gf.math.xlog1py, [x, y]) < 1e-5
    a = np.array([[0.3, -1.2, 0.5], [1.0, 0.2, -0.7]])
    b = np.array([[0.4, 0.9, -0.1], [-0.3, 0.8, 0.6]])
    assert gradient_error(gf.linalg.cross, [a, b]) < 1e-6
    assert second_order_error(lambda p, q: gf.linalg.cross(p * p, q), [a, b]) < 1e-5
