"""A loop's gradient reads the forward iterations' recorded values (no recomputation)."""
import numpy as np

import gradflow as gf


def test_backward_sees_the_forward_random_values():
    x0 = gf.constant(1.0, dtype=gf.float64)

    def body(i, x):
        return i + 1, x * gf.random_uniform([], 0.5, 1.5, dtype=gf.float64)

    _, final = gf.while_loop(lambda i, x: i < 6, body, [gf.constant(0), x0])
    (grad,) = gf.gradients(final, [x0])
    with gf.Session() as s:
        value, derivative = s.run([final, grad])
    # d(x0 * r_0 * ... * r_5)/dx0 is the product of the very same random draws (taken
    # in the other order: equal up to rounding; fresh draws would differ by ~10%)
    np.testing.assert_allclose(derivative, value, rtol=1e-12)


def test_assignments_in_the_body_run_once_per_forward_iteration():
    counter = gf.Variable(0, dtype=gf.int32)
    x0 = gf.constant(2.0, dtype=gf.float64)

    def body(i, x):
        with gf.control_dependencies([gf.assign_add(counter, 1)]):
            return i + 1, gf.sin(x) * 1.5

    _, final = gf.while_loop(lambda i, x: i < 4, body, [gf.constant(0), x0])
    (grad,) = gf.gradients(final, [x0])
    with gf.Session() as s:
        s.run(counter.initializer)
        s.run(grad)
        assert s.run(counter) == 4


def test_the_body_forward_ops_do_not_run_in_the_backward_loop():
    x0 = gf.constant([0.3, -0.2], dtype=gf.float64)
    _, final = gf.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, gf.tanh(x) * 2.0),
                             [gf.constant(0), x0])
    (grad,) = gf.gradients(gf.reduce_sum(final), [x0])
    while_op = next(op for op in gf.get_default_graph().get_operations()
                    if op.type == "While" and op.name.startswith("while/"))
    saving = while_op.get_attr("saving")
    assert len(saving.outputs) > 2  # the body's outputs, then the recorded values
    with gf.Session() as s:
        got = s.run(grad)
    x, want = np.array([0.3, -0.2]), np.ones(2)
    for _ in range(5):
        x = np.tanh(x) * 2.0
    xs = [np.array([0.3, -0.2])]
    for _ in range(5):
        xs.append(np.tanh(xs[-1]) * 2.0)
    for value in reversed(xs[:-1]):
        want = want * 2.0 * (1 - np.tanh(value) ** 2)
    np.testing.assert_allclose(got, want)


def test_second_derivative_through_recorded_values():
    x0 = gf.constant(0.7, dtype=gf.float64)
    _, final = gf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, gf.sin(x) * x),
                             [gf.constant(0), x0])
    (g,) = gf.gradients(final, [x0])
    (h,) = gf.gradients(g, [x0])

    def f(v):
        for _ in range(3):
            v = np.sin(v) * v
        return v

    eps = 1e-4
    with gf.Session() as s:
        got_g, got_h = s.run([g, h])
    np.testing.assert_allclose(got_g, (f(0.7 + eps) - f(0.7 - eps)) / (2 * eps), rtol=1e-6)
    np.testing.assert_allclose(got_h, (f(0.7 + eps) - 2 * f(0.7) + f(0.7 - eps)) / eps ** 2,
                               rtol=1e-4)
