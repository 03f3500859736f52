"""SPEC G14 (graph functions), G15 (control flow), G19 (compile scopes) and friends."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error


def run(fetches, feed=None):
    with gf.Session() as s:
        return s.run(fetches, feed)


def numeric_derivative(f, v, order=1, eps=1e-3):
    if order == 1:
        return (f(v + eps) - f(v - eps)) / (2 * eps)
    return (f(v + eps) - 2 * f(v) + f(v - eps)) / eps ** 2


# --------------------------------------------------------------------------- G14
def test_G14_defun_body_is_differentiated_symbolically():
    @gf.Defun(gf.float64, gf.float64)
    def poly(a, b):
        return a * a * b + gf.sin(b)

    x = gf.placeholder(gf.float64, shape=[])
    w = gf.placeholder(gf.float64, shape=[])
    y = poly(x, w)
    assert y.op.type == "PartitionedCall"
    gx, gw = gf.gradients(y, [x, w])
    np.testing.assert_allclose(run([y, gx, gw], {x: 2.0, w: 3.0}),
                               [12 + np.sin(3.0), 12.0, 4 + np.cos(3.0)])


def test_G14_python_grad_func_and_grad_func_are_used():
    @gf.Defun(gf.float64, python_grad_func=lambda op, g: g * 10.0)
    def twice(a):
        return a * 2.0

    @gf.Defun(gf.float64, gf.float64)
    def custom_grad(a, dy):
        return dy * 100.0

    @gf.Defun(gf.float64, grad_func=custom_grad)
    def thrice(a):
        return a * 3.0

    x = gf.placeholder(gf.float64, shape=[])
    np.testing.assert_allclose(run(gf.gradients([twice(x), thrice(x)], x), {x: 1.0}), [110.0])


def test_G14_gradient_defined_twice():
    @gf.Defun(gf.float32)
    def grad(a):
        return a

    with pytest.raises(ValueError, match="Gradient defined twice"):
        gf.Defun(gf.float32, grad_func=grad, python_grad_func=lambda op, g: g)


def test_G14_gradient_inside_function_wrt_captured_outer_tensor():
    x = gf.placeholder(gf.float64, shape=[], name="x")
    y = gf.square(x)  # computed outside the function

    @gf.Defun(gf.float64)
    def inner(a):
        # y is captured; d(y * a)/dx taken inside the function reaches the outer x.
        return gf.gradients(y * a, x)[0]

    np.testing.assert_allclose(run(inner(gf.constant(3.0, gf.float64)), {x: 2.0}), 12.0)


def test_G14_captures_through_two_levels_and_nested_functions():
    x = gf.placeholder(gf.float64, shape=[], name="x")

    @gf.Defun(gf.float64)
    def outer(a):
        @gf.Defun(gf.float64)
        def inner(b):
            return gf.gradients(gf.sin(x) * b, x)[0]  # x captured through two levels
        return inner(a) + a * x

    value = outer(gf.constant(2.0, gf.float64))
    np.testing.assert_allclose(run(value, {x: 0.5}), 2 * np.cos(0.5) + 1.0)
    (g,) = gf.gradients(value, x)
    np.testing.assert_allclose(run(g, {x: 0.5}), -2 * np.sin(0.5) + 2.0)


def test_G14_nested_function_gradients_second_order():
    @gf.Defun(gf.float64)
    def inner(a):
        return gf.sin(a) * a

    @gf.Defun(gf.float64)
    def outer(a):
        return inner(a) * a

    assert second_order_error(lambda x: gf.reshape(outer(x), []), [np.array(0.7)]) < 1e-6


# --------------------------------------------------------------------------- G15
def test_G15_cond_forward_and_gradient():
    x = gf.placeholder(gf.float64, shape=[])
    y = gf.cond(x > 0.0, lambda: gf.sin(x) * 2.0, lambda: x * x)
    (g,) = gf.gradients(y, x)
    np.testing.assert_allclose(run([y, g], {x: 1.0}), [2 * np.sin(1.0), 2 * np.cos(1.0)])
    np.testing.assert_allclose(run([y, g], {x: -3.0}), [9.0, -6.0])


def test_G15_cond_structures_and_errors():
    x = gf.constant(1.0)
    out = gf.cond(gf.constant(True), lambda: {"a": x, "b": [x * 2.0]},
                  lambda: {"a": x * 3.0, "b": [x]})
    assert run(out) == {"a": 1.0, "b": [2.0]}
    with pytest.raises(ValueError, match="same nested structure"):
        gf.cond(gf.constant(True), lambda: [x, x], lambda: [x])
    with pytest.raises(ValueError, match="Received float32 from 'true_fn' and int32"):
        gf.cond(gf.constant(True), lambda: x, lambda: gf.constant(1))
    with pytest.raises(TypeError, match="'true_fn' must be callable"):
        gf.cond(gf.constant(True), x, lambda: x)
    with pytest.raises(TypeError, match="Input 'pred' of 'Switch' Op has type float32"):
        gf.cond(gf.constant(1.0), lambda: x, lambda: x)


def test_G15_cond_only_runs_taken_branch():
    x = gf.placeholder(gf.float64, shape=[None])
    y = gf.cond(gf.size(x) > 0, lambda: gf.reduce_mean(x), lambda: gf.constant(0.0, gf.float64))
    assert run(y, {x: np.zeros(0)}) == 0.0
    assert run(y, {x: [1.0, 3.0]}) == 2.0


def test_G15_while_loop_forward_structures():
    i, total = gf.while_loop(lambda i, t: i < 10, lambda i, t: (i + 1, t + i),
                             [gf.constant(0), gf.constant(0)])
    assert run([i, total]) == [10, 45]
    single = gf.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, gf.constant(1.0))
    assert run(single) == 128.0
    nested = gf.while_loop(lambda s: s["n"] < 3,
                           lambda s: {"n": s["n"] + 1, "acc": [s["acc"][0] * 2]},
                           [{"n": gf.constant(0), "acc": [gf.constant(1)]}])
    assert run(nested) == [{"n": 3, "acc": [8]}]


def test_G15_while_loop_dynamic_trip_count_gradient():
    x = gf.placeholder(gf.float64, shape=[])
    n = gf.placeholder(gf.int32, shape=[])
    _, y = gf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * x),
                         [gf.constant(0), gf.constant(1.0, gf.float64)])
    (g,) = gf.gradients(y, x)
    for count in (0, 1, 4):
        np.testing.assert_allclose(run([y, g], {x: 2.0, n: count}),
                                   [2.0 ** count, count * 2.0 ** max(count - 1, 0)
                                    if count else 0.0])


def test_G15_loop_invariant_captured_tensor_gradient():
    w = gf.placeholder(gf.float64, shape=[2])
    x0 = gf.placeholder(gf.float64, shape=[2])
    _, y = gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, gf.tanh(a * w)),
                         [gf.constant(0), x0])

    def f(wv, xv):
        a = xv
        for _ in range(3):
            a = np.tanh(a * wv)
        return a.sum()

    gw, gx = gf.gradients(gf.reduce_sum(y), [w, x0])
    wv, xv = np.array([0.5, -0.3]), np.array([0.2, 0.9])
    got_w, got_x = run([gw, gx], {w: wv, x0: xv})
    eye = np.eye(2) * 1e-6
    np.testing.assert_allclose(got_w, [(f(wv + e, xv) - f(wv - e, xv)) / 2e-6 for e in eye],
                               atol=1e-6)
    np.testing.assert_allclose(got_x, [(f(wv, xv + e) - f(wv, xv - e)) / 2e-6 for e in eye],
                               atol=1e-6)


def test_G15_unused_loop_outputs_and_integer_counters():
    x = gf.placeholder(gf.float64, shape=[])
    i, used, unused = gf.while_loop(lambda i, a, b: i < 3,
                                    lambda i, a, b: (i + 1, a * x, b + x),
                                    [gf.constant(0), gf.constant(1.0, gf.float64),
                                     gf.constant(0.0, gf.float64)])
    (g,) = gf.gradients(used, x)
    np.testing.assert_allclose(run(g, {x: 2.0}), 12.0)
    assert gf.gradients(i, x) == [None]


def test_G15_nested_loops_and_cond_in_loop():
    x = gf.placeholder(gf.float64, shape=[])

    def outer_body(i, a):
        _, inner = gf.while_loop(lambda j, b: j < 2, lambda j, b: (j + 1, gf.sin(b) + x),
                                 [gf.constant(0), a])
        return i + 1, gf.cond(i > 0, lambda: inner * x, lambda: inner)

    _, y = gf.while_loop(lambda i, a: i < 2, outer_body, [gf.constant(0), x])

    def f(v):
        a = v
        for i in range(2):
            for _ in range(2):
                a = np.sin(a) + v
            a = a * v if i > 0 else a
        return a

    (g,) = gf.gradients(y, x)
    np.testing.assert_allclose(run(g, {x: 0.4}), numeric_derivative(f, 0.4), rtol=1e-5)


def test_G15_loop_inside_cond():
    x = gf.placeholder(gf.float64, shape=[])
    y = gf.cond(x > 0.0,
                lambda: gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x),
                                      [gf.constant(0), x])[1],
                lambda: -x)
    (g,) = gf.gradients(y, x)
    np.testing.assert_allclose(run(g, {x: 1.5}), 4 * 1.5 ** 3)
    np.testing.assert_allclose(run(g, {x: -1.0}), -1.0)


def test_G15_second_order_through_while_and_cond():
    x = gf.placeholder(gf.float64, shape=[])
    _, y = gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, gf.sin(a) * x),
                         [gf.constant(0), x])
    (g,) = gf.gradients(y, x)
    (h,) = gf.gradients(g, x)

    def f(v):
        a = v
        for _ in range(3):
            a = np.sin(a) * v
        return a

    np.testing.assert_allclose(run(h, {x: 0.7}), numeric_derivative(f, 0.7, 2), rtol=1e-4)
    (hess,) = gf.hessians(y, x)
    np.testing.assert_allclose(run(hess, {x: 0.7}), numeric_derivative(f, 0.7, 2), rtol=1e-4)
    z = gf.cond(x < 1.0, lambda: gf.sin(x) * x, lambda: x)
    (hz,) = gf.gradients(gf.gradients(z, x)[0], x)
    np.testing.assert_allclose(run(hz, {x: 0.5}), 2 * np.cos(0.5) - 0.5 * np.sin(0.5))


def test_G15_while_loop_numeric_gradient_vector_state():
    def build(v):
        _, out = gf.while_loop(lambda i, a: i < 2,
                               lambda i, a: (i + 1, gf.tanh(a) * gf.reduce_sum(a)),
                               [gf.constant(0), v])
        return out

    assert gradient_error(build, [np.array([0.3, -0.2, 0.5])]) < 1e-6


def test_G15_maximum_iterations_and_back_prop():
    x = gf.placeholder(gf.float64, shape=[])
    y = gf.while_loop(lambda a: a < 1e9, lambda a: a * x, x, maximum_iterations=3)
    (g,) = gf.gradients(y, x)
    np.testing.assert_allclose(run([y, g], {x: 2.0}), [16.0, 32.0])
    frozen = gf.while_loop(lambda a: a < 10.0, lambda a: a * x, x, back_prop=False)
    assert gf.gradients(frozen, x) == [None]


def test_G15_while_loop_errors():
    x = gf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="'cond' must be callable"):
        gf.while_loop(None, lambda v: v, [x])
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        gf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(ValueError, match="enters the loop with shape \\(2,\\), but has shape "
                                         "\\(4,\\) after one iteration"):
        gf.while_loop(lambda v: gf.size(v) < 8, lambda v: gf.concat([v, v], 0), [x])
    grown = gf.while_loop(lambda v: gf.size(v) < 8, lambda v: gf.concat([v, v], 0), [x],
                          shape_invariants=[gf.TensorShape([None])])
    assert run(grown).shape == (8,)
    with pytest.raises(ValueError, match="same nested structure"):
        gf.while_loop(lambda a, b: True, lambda a, b: [a], [x, x])
    with pytest.raises(TypeError, match="enters the loop with dtype float32, but body returns "
                                        "dtype int32"):
        gf.while_loop(lambda v: True, lambda v: gf.constant([1, 2]), [x])
    graph = gf.get_default_graph()
    before = graph.num_ops()
    with pytest.raises(ValueError):
        gf.while_loop(lambda a, b: True, lambda a, b: [a], [x, x])
    assert graph.num_ops() == before


# --------------------------------------------------------------------------- G17
def test_G17_hessians_shape_and_closed_form():
    a = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 1.0], [0.0, 1.0, 3.0]])
    x = gf.placeholder(gf.float64, shape=[3])
    z = gf.reshape(gf.matmul(gf.constant(a), gf.reshape(x, [3, 1])), [3])
    y = gf.reduce_sum(gf.square(gf.tanh(z)))
    (h,) = gf.hessians(y, x)
    assert h.shape.as_list() == [3, 3]
    xv = np.array([0.1, -0.2, 0.3])
    t = np.tanh(a @ xv)
    expected = a.T @ np.diag(2 * (1 - t ** 2) * (1 - 3 * t ** 2)) @ a
    np.testing.assert_allclose(run(h, {x: xv}), expected, atol=1e-10)
    (h2,) = gf.hessians_v2(y, x)
    np.testing.assert_allclose(run(h2, {x: xv}), expected, atol=1e-10)


# --------------------------------------------------------------------------- G19
def test_G19_compile_scope_attrs_inherited_by_gradients():
    x = gf.placeholder(gf.float32, shape=[2])
    with gf.jit_scope():
        y = gf.tanh(x, name="compiled")
    plain = gf.sin(x, name="plain")
    gy, gp = gf.gradients([y], [x])[0], gf.gradients(plain, x)[0]
    assert y.op.get_attr("_XlaCompile") is True
    scope = y.op.get_attr("_XlaScope")
    assert gy.op.get_attr("_XlaCompile") is True and gy.op.get_attr("_XlaScope") == scope
    with pytest.raises(ValueError):
        gp.op.get_attr("_XlaCompile")


def test_G19_separately_compiled_gradients():
    x = gf.placeholder(gf.float32, shape=[2])
    with gf.jit_scope(separate_compiled_gradients=True):
        y = gf.tanh(x)
    (g,) = gf.gradients(y, x, name="my_grads")
    assert g.op.get_attr("_XlaScope") == y.op.get_attr("_XlaScope") + "_grad_my_grads"


# ------------------------------------------------------- custom and recomputed grads
def test_custom_gradient_replaces_the_rule():
    x = gf.placeholder(gf.float64, shape=[3])

    @gf.custom_gradient
    def clipped_identity(t):
        def grad(dy):
            return gf.minimum(gf.maximum(dy, -0.1), 0.1)
        return t * 1.0, grad

    (g,) = gf.gradients(gf.reduce_sum(clipped_identity(x) * 5.0), x)
    np.testing.assert_allclose(run(g, {x: np.zeros(3)}), [0.1, 0.1, 0.1])


def test_custom_gradient_with_variables():
    v = gf.Variable(2.0, dtype=gf.float64)
    x = gf.placeholder(gf.float64, shape=[])

    @gf.custom_gradient
    def scaled(t):
        def grad(dy, variables=None):
            return dy * 7.0, [dy * 11.0]
        return t * v, grad

    gx, gv = gf.gradients(scaled(x), [x, v])
    with gf.Session() as s:
        s.run(v.initializer)
        np.testing.assert_allclose(s.run([gx, gv], {x: 1.0}), [7.0, 11.0])


def test_recompute_grad_matches_plain_gradient():
    x = gf.placeholder(gf.float64, shape=[3])

    def block(t):
        w = gf.constant([0.5, -1.0, 2.0], dtype=gf.float64)
        return gf.tanh(t * w) * gf.sin(t)

    plain = gf.gradients(gf.reduce_sum(block(x)), x)[0]
    wrapped = gf.recompute_grad(block)
    recomputed = gf.gradients(gf.reduce_sum(wrapped(x)), x)[0]
    v = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(*run([plain, recomputed], {x: v}))
    assert second_order_error(lambda t: wrapped(t), [v]) < 1e-6


def test_jvp_matches_jacobian_vector_product():
    x = gf.placeholder(gf.float64, shape=[3])
    y = gf.sin(x) * gf.reduce_sum(x)
    tangent = np.array([1.0, 0.0, 2.0])
    (product,) = gf.jvp(y, x, gf.constant(tangent))
    v = np.array([0.1, 0.2, 0.3])
    jac = np.diag(np.cos(v) * v.sum()) + np.outer(np.sin(v), np.ones(3))
    np.testing.assert_allclose(run(product, {x: v}), jac @ tangent)
    with pytest.raises(ValueError, match="one tangent per x"):
        gf.jvp(y, [x], [tangent, tangent])


def test_G15_cond_returning_tensor_arrays_and_hessian_of_a_loop_falls_back():
    x = gf.placeholder(gf.float64, shape=[])
    empty = gf.TensorArray(gf.float64, size=2)
    out = gf.cond(x > 0.0, lambda: empty.write(0, x * 2.0).write(1, x),
                  lambda: empty.write(0, x).write(1, x * x))
    stacked = out.stack()
    (g,) = gf.gradients(gf.reduce_sum(stacked), x)
    np.testing.assert_allclose(run([stacked, g], {x: 3.0})[1], 3.0)
    np.testing.assert_allclose(run([stacked, g], {x: -3.0})[1], -5.0)
    # A Hessian through a loop cannot be vectorised: rows come from a graph while_loop.
    v = gf.placeholder(gf.float64, shape=[2])
    _, y = gf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, gf.sin(a) * v),
                         [gf.constant(0), v])
    (h,) = gf.hessians(gf.reduce_sum(y), v)
    assert sum(op.type == "While" for op in gf.get_default_graph().get_operations()) >= 2

    def f(vals):
        a = vals
        for _ in range(2):
            a = np.sin(a) * vals
        return a.sum()

    point = np.array([0.3, -0.6])
    eps = 1e-4
    numeric = np.array([[(f(point + eps * (ei + ej)) - f(point + eps * (ei - ej))
                          - f(point - eps * (ei - ej)) + f(point - eps * (ei + ej)))
                         / (4 * eps ** 2)
                         for ej in np.eye(2)] for ei in np.eye(2)])
    np.testing.assert_allclose(run(h, {v: point}), numeric, atol=1e-6)


def test_G19_compiled_defun_and_its_gradient():
    @gf.Defun(gf.float32, compiled=True, separate_compiled_gradients=True)
    def square(a):
        return a * a

    x = gf.placeholder(gf.float32, shape=[])
    y = square(x)
    (g,) = gf.gradients(y, x, name="grads")
    assert y.op.get_attr("_XlaCompile") is True
    assert g.op.get_attr("_XlaScope") == "function_square_grad_grads"
    with pytest.raises(ValueError, match="Unknown keyword arguments"):
        gf.Defun(gf.float32, bogus=1)
