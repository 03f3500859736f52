"""``tf.roll`` against TF 2.21: values, gradients, names, shapes and messages.

The fixture comes from ``tests/fixtures/tf/make_roll.py``.
"""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_json

RECORDED = load_json("roll")
VALUE = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("key", sorted(RECORDED["cases"]))
def test_roll_matches_tensorflow(key):
    case = RECORDED["cases"][key]
    with gf.Graph().as_default() as g:
        x = gf.constant(VALUE, name="x")
        if key == "empty":
            shift, axis = gf.constant([], gf.int32), gf.constant([], gf.int32)
        elif case["int64"]:
            shift, axis = np.int64(case["shift"]), np.int64(case["axis"])
        else:
            shift, axis = case["shift"], case["axis"]
        y = gf.roll(x, shift, axis)
        weights = np.cos(np.arange(24)).reshape(2, 3, 4).astype(np.float32)
        grad = gf.gradients(gf.reduce_sum(y * weights), x)[0]
        with gf.Session() as sess:
            values, grads = sess.run([y, grad])
        names = [op.name for op in g.get_operations()]
    np.testing.assert_array_equal(values.ravel(), case["values"])
    np.testing.assert_allclose(grads.ravel(), case["grad"], rtol=1e-6)
    assert (y.name, grad.name, y.shape.as_list()) == (case["name"], case["grad_name"],
                                                      case["shape"])
    assert [n for n in names if "Roll" in n] == [n for n in case["ops"] if "Roll" in n]


def test_roll_gradients_numerically():
    value = np.sin(np.arange(12.0)).reshape(3, 4)
    assert gradient_error(lambda x: gf.roll(x, [1, -3], [0, 1]), [value]) < 1e-8
    assert second_order_error(lambda x: gf.roll(x * x, 2, 1), [value]) < 1e-6


def test_roll_fed_shift_and_axis():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [2, 3, 4])
        shift = gf.placeholder(gf.int64, [None])
        axis = gf.placeholder(gf.int64, [None])
        y = gf.roll(x, shift, axis)
        assert y.shape.as_list() == [2, 3, 4]
        with gf.Session() as sess:
            got = sess.run(y, {x: VALUE, shift: [1, 2], axis: [2, 0]})
    np.testing.assert_array_equal(got, np.roll(VALUE, (1, 2), (2, 0)))


def test_roll_errors_match_tensorflow_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, [3, 4], name="x")
        scalar = gf.placeholder_with_default(np.float32(1.0), [])
        unknown = gf.roll(gf.placeholder(gf.int32), 1, 0, name="unknown")
        assert unknown.shape.ndims == RECORDED["unknown_shape"]
        assert gf.roll(x, [2, 3], [1, 1], name="r").name == RECORDED["named"]
        before = [op.name for op in g.get_operations()]
        got = []
        for value, shift, axis in ((x, [1, 2], [0]), (x, 1.5, 0), (x, [[1]], [[0]]),
                                   (scalar, 1, 0)):
            with pytest.raises((TypeError, ValueError)) as info:
                gf.roll(value, shift, axis)
            got.append([type(info.value).__name__, str(info.value).split(" for ")[0]])
        assert got == RECORDED["build_errors"]
        assert [op.name for op in g.get_operations()] == before
        with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError) as info:
            sess.run(gf.roll(x, 1, 2), {x: np.zeros((3, 4))})
        assert RECORDED["run_error"] in info.value.message
