"""A loop-invariant weight's gradient ``sum_t a_t^T b_t`` is one product after the
backward loop, of the rows the loop collects (functional.py's ``_deferred_sums``)."""
import numpy as np
import pytest

from gradcheck import gradient_error, second_order_error

import gradflow as gf

STEPS, BATCH, WIDTH = 4, 3, 5


def _rnn(x, w, steps=STEPS):
    """h <- tanh(h w + x_t) over ``steps`` iterations, h0 = x_0."""
    def body(i, h):
        return i + 1, gf.tanh(gf.matmul(h, w) + x[i])

    _, h = gf.while_loop(lambda i, h: i < steps, body, [gf.constant(0), x[0]])
    return h


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((STEPS, BATCH, WIDTH)), rng.standard_normal((WIDTH, WIDTH)) * 0.5


def _reference(x, w, steps=STEPS):
    """d sum(h_T) / dw by backpropagation through time in NumPy."""
    hs = [x[0]]
    for t in range(steps):
        hs.append(np.tanh(hs[-1] @ w + x[t]))
    grad_h, grad_w = np.ones_like(hs[-1]), np.zeros_like(w)
    for t in reversed(range(steps)):
        pre = grad_h * (1 - hs[t + 1] ** 2)
        grad_w += hs[t].T @ pre
        grad_h = pre @ w.T
    return grad_w


def test_weight_gradient_is_one_product_of_collected_rows():
    x_value, w_value = _inputs()
    x = gf.constant(x_value)
    w = gf.constant(w_value)
    (grad,) = gf.gradients(gf.reduce_sum(_rnn(x, w)), [w])
    graph = gf.get_default_graph()
    # the backward loop collects rows in two TensorArrays and sums no weight-sized term
    assert len([op for op in graph.get_operations()
                if op.type == "TensorArrayV3" and op.name.split("/")[-1].startswith("rows")]) == 2
    assert grad.op.type == "MatMul" and grad.op.get_attr("transpose_a")
    backward = next(op for op in graph.get_operations()
                    if op.type == "While" and "while_grad" in op.name)
    body = backward.get_attr("body")
    assert not [op for op in body.graph.get_operations()
                if op.type == "AddN" and op.outputs[0].shape.as_list() == [WIDTH, WIDTH]]
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), _reference(x_value, w_value), rtol=1e-12)


def test_weight_gradient_of_an_empty_loop_is_zero():
    x_value, w_value = _inputs()
    x = gf.placeholder(gf.float64, [STEPS, None, WIDTH])
    w = gf.constant(w_value)
    (grad,) = gf.gradients(gf.reduce_sum(_rnn(x, w, steps=0)), [w])
    with gf.Session() as sess:
        value = sess.run(grad, {x: x_value})
    assert value.shape == (WIDTH, WIDTH) and not value.any()


def test_weight_gradient_with_an_unknown_batch_and_a_variable():
    x_value, w_value = _inputs(1)
    x = gf.placeholder(gf.float64, [STEPS, None, WIDTH])
    w = gf.Variable(w_value)
    (grad,) = gf.gradients(gf.reduce_sum(_rnn(x, w)), [w])
    with gf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(grad, {x: x_value}), _reference(x_value, w_value),
                                   rtol=1e-12)


@pytest.mark.parametrize("order", [1, 2])
def test_weight_gradient_numerically(order):
    x_value, w_value = _inputs(2)

    def build(w, x):
        return _rnn(x, w)

    check = gradient_error if order == 1 else second_order_error
    assert check(build, [w_value, x_value]) < 1e-6


def _biased_rnn(x, w, bias):
    def body(i, h):
        return i + 1, gf.tanh(gf.nn.bias_add(gf.matmul(h, w), bias) + x[i])

    _, h = gf.while_loop(lambda i, h: i < STEPS, body, [gf.constant(0), x[0]])
    return h


def test_bias_gradient_shares_the_product_rows():
    x_value, w_value = _inputs(3)
    bias_value = np.linspace(-0.5, 0.5, WIDTH)
    x, w, bias = gf.constant(x_value), gf.constant(w_value), gf.constant(bias_value)
    grad_w, grad_bias = gf.gradients(gf.reduce_sum(_biased_rnn(x, w, bias)), [w, bias])
    graph = gf.get_default_graph()
    # rows of h and of the pre-activation gradient, the latter read by both sums
    assert len([op for op in graph.get_operations()
                if op.type == "TensorArrayV3" and op.name.split("/")[-1].startswith("rows")]) == 2
    assert grad_bias.op.type == "Reshape" and grad_bias.op.inputs[0].op.type == "MatMul"
    hs = [x_value[0]]
    for t in range(STEPS):
        hs.append(np.tanh(hs[-1] @ w_value + bias_value + x_value[t]))
    grad_h, want_bias = np.ones_like(hs[-1]), np.zeros(WIDTH)
    for t in reversed(range(STEPS)):
        pre = grad_h * (1 - hs[t + 1] ** 2)
        want_bias += pre.sum(axis=0)
        grad_h = pre @ w_value.T
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad_bias), want_bias, rtol=1e-12)
    assert gradient_error(lambda b, w, x: _biased_rnn(x, w, b),
                          [bias_value, w_value, x_value]) < 1e-6


def test_rows_may_change_in_number_between_iterations():
    x_value, w_value = _inputs(4)
    x = gf.constant(x_value[0])
    w = gf.constant(w_value)

    def body(i, total):  # iteration i multiplies the first i + 1 rows of x
        return i + 1, total + gf.reduce_sum(gf.tanh(gf.matmul(x[:i + 1], w)))

    _, total = gf.while_loop(lambda i, t: i < BATCH, body,
                             [gf.constant(0), gf.constant(0.0, dtype=gf.float64)])
    (grad,) = gf.gradients(total, [w])
    assert grad.op.type == "MatMul"  # deferred
    want = sum(x_value[0][:i + 1].T @ (1 - np.tanh(x_value[0][:i + 1] @ w_value) ** 2)
               for i in range(BATCH))
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), want, rtol=1e-12)
