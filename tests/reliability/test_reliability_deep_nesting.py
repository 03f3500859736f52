"""Deep nesting of cond, while_loop, Defun, custom_gradient and recompute_grad (issue 20,
item 6): gradflow recurses on no program's nesting depth.

Building a nested program follows the user's own Python recursion (each level is traced
by a call from the level around it), so the building phase runs on a thread with a
large stack and a raised recursion limit. Differentiating and running then happen at
Python's default recursion limit, on the test's own stack: nested function gradients
are built innermost first, and a nested function's plan runs on a fresh stack every
few levels.
"""
import sys
import threading

import numpy as np
import pytest

import gradflow as gf

DEFAULT_LIMIT = 1000


def nest(kind: str, x, depth: int):
    """``depth`` levels of ``kind``, each adding 1 around ``1.5 v``: y = 1.5 x + depth."""
    def level(d, v):
        if d == depth:
            return v * 1.5
        return wrap(lambda u: level(d + 1, u), d, v) + 1.0

    def wrap(inner, d, v):
        if kind == "cond":
            return gf.cond(v > -1e9, lambda: inner(v), lambda: v)
        if kind == "while_loop":
            return gf.while_loop(lambda i, u: i < 1, lambda i, u: (i + 1, inner(u)),
                                 [gf.constant(0), v])[1]
        if kind == "Defun":
            return gf.Defun(gf.float64, func_name=f"level{d}")(inner)(v)
        if kind == "custom_gradient":
            @gf.custom_gradient
            def passed_on(u):
                return inner(u), lambda du: du
            return passed_on(v)

        def recomputed(u):
            return inner(u)
        return gf.recompute_grad(recomputed)(v)

    return level(0, x)


def build_deep(kind: str, depth: int):
    """Builds the nested program on a big stack (the user's recursion); returns x, y."""
    built = {}

    def build():
        try:
            with graph.as_default():
                x = gf.placeholder(gf.float64, [], name="x")
                built["xy"] = (x, nest(kind, x, depth))
        except BaseException as err:  # noqa: BLE001 - re-raised in the test's thread
            built["error"] = err

    graph = gf.Graph()
    previous_stack, previous_limit = threading.stack_size(), sys.getrecursionlimit()
    threading.stack_size(512 << 20)
    sys.setrecursionlimit(30 * depth + DEFAULT_LIMIT)
    try:
        builder = threading.Thread(target=build)
        builder.start()
        builder.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if "error" in built:
        raise built["error"]
    return graph, built["xy"]


def check_deep(kind: str, depth: int) -> None:
    graph, (x, y) = build_deep(kind, depth)
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(DEFAULT_LIMIT)
    try:
        with graph.as_default():
            dy_dx, = gf.gradients(y, [x])
            with gf.Session() as sess:
                value, gradient = sess.run([y, dy_dx], {x: 2.0})
    finally:
        sys.setrecursionlimit(previous)
    assert value == pytest.approx(1.5 * 2.0 + depth)
    expected = 1.0 if kind == "custom_gradient" else 1.5  # its gradient passes dv on
    np.testing.assert_allclose(gradient, expected)


KINDS = ["cond", "while_loop", "Defun", "custom_gradient", "recompute_grad"]
# The gradient of a loop or call recomputes the forward pass of what it contains, so
# their time grows with the square of the depth (1,000 levels: ~15-60 s): slow tests.
QUADRATIC = {"while_loop", "Defun"}


@pytest.mark.parametrize("kind", KINDS)
def test_two_hundred_nested_levels(kind):
    check_deep(kind, 200)


@pytest.mark.parametrize("kind", [k if k not in QUADRATIC else
                                  pytest.param(k, marks=pytest.mark.slow) for k in KINDS])
def test_a_thousand_nested_levels(kind):
    check_deep(kind, 1000)
