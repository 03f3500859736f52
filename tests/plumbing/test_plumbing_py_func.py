"""py_func / numpy_function: stateful and stateless ops, several outputs, gradients."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error


def test_py_func_runs_python_on_arrays():
    x = gf.placeholder(gf.float32, [3])
    y = gf.py_func(lambda a: np.sort(a)[::-1].copy(), [x], gf.float32)
    assert y.op.type == "PyFunc" and y.shape.ndims is None
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [2.0, 3.0, 1.0]}), [3.0, 2.0, 1.0])


def test_several_outputs_are_cast_to_tout():
    x = gf.constant([1.5, 2.5])
    lo, hi = gf.numpy_function(lambda a: (np.floor(a), np.ceil(a)), [x], [gf.int32, gf.int64],
                               stateful=False)
    assert lo.op.type == "PyFuncStateless" and lo.dtype == gf.int32 and hi.dtype == gf.int64
    with gf.Session() as sess:
        got_lo, got_hi = sess.run([lo, hi])
    assert got_lo.dtype == np.int32 and got_hi.dtype == np.int64
    np.testing.assert_array_equal(got_lo, [1, 2])
    np.testing.assert_array_equal(got_hi, [2, 3])


def test_stateful_py_func_runs_every_time():
    calls = []

    def count():
        calls.append(1)
        return np.int64(len(calls))

    y = gf.py_func(count, [], gf.int64)
    with gf.Session() as sess:
        assert [int(sess.run(y)) for _ in range(3)] == [1, 2, 3]


def test_py_func_is_not_differentiable_but_override_gives_a_gradient():
    x = gf.placeholder(gf.float64, [3])
    y = gf.py_func(np.square, [x], gf.float64)
    assert gf.gradients(gf.reduce_sum(y), [x]) == [None]

    @gf.RegisterGradient("GradflowTestSquareGrad")
    def _square_grad(op, grad):
        return [grad * 2.0 * op.inputs[0]]

    def build(a):
        with gf.get_default_graph().gradient_override_map({"PyFunc": "GradflowTestSquareGrad"}):
            out = gf.py_func(np.square, [a], gf.float64)
        out.set_shape(a.shape)
        return out

    assert gradient_error(build, [np.array([0.5, -1.0, 2.0])]) < 1e-6


def test_errors_of_the_function_fail_the_run_naming_the_op():
    y = gf.py_func(lambda: 1 / 0, [], gf.float32, name="boom")
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError, match="boom"):
        sess.run(y)


def test_bad_calls_raise_and_leave_the_graph_alone():
    graph = gf.get_default_graph()
    x = gf.constant(1.0)
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(TypeError, match="func must be callable"):
        gf.py_func(3, [x], gf.float32)
    with pytest.raises(TypeError):
        gf.py_func(np.square, [x], "not a dtype")
    assert [op.name for op in graph.get_operations()] == before
