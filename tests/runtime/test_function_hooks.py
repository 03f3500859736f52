"""The hooks that keep graph functions on the ground floor (docs/floors.md): the runtime
runs a function through ``RunContext.call``, autodiff installs its gradient builder."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.framework import function as function_module


def _defun_call():
    @gf.Defun(gf.float64)
    def cube(a):
        return a * a * a

    x = gf.placeholder(gf.float64, shape=[], name="x")
    y = cube(x)
    return x, y, y.op.get_attr("f")


def test_a_function_plan_is_compiled_once_and_kept_on_the_function():
    with gf.Graph().as_default():
        x, y, f = _defun_call()
        assert f.plan is None
        with gf.Session() as sess:
            assert sess.run(y, {x: 2.0}) == 8.0
            plan = f.plan
            assert plan is not None
            assert sess.run(y, {x: 3.0}) == 27.0
            assert f.plan is plan


def test_a_function_plan_is_recompiled_after_its_graph_changes():
    with gf.Graph().as_default():
        x, y, f = _defun_call()
        with gf.Session() as sess:
            sess.run(y, {x: 2.0})
            plan = f.plan
            with f.graph.as_default():
                gf.constant(1.0, name="late")  # a new op bumps the graph's version
            assert sess.run(y, {x: 2.0}) == 8.0
            assert f.plan is not plan


def test_function_gradient_is_built_by_autodiff_once():
    with gf.Graph().as_default():
        x, y, f = _defun_call()
        (dx,) = gf.gradients(y, [x])
        (dx_again,) = gf.gradients(y, [x])
        assert f.symbolic_gradient() is f.symbolic_gradient()
        with gf.Session() as sess:
            np.testing.assert_allclose(sess.run([dx, dx_again], {x: 2.0}), [12.0, 12.0])


def test_symbolic_gradient_without_the_builder_names_the_function(monkeypatch):
    monkeypatch.setattr(function_module, "_symbolic_gradient_builder", None)
    with gf.Graph().as_default():
        _, _, f = _defun_call()
        with pytest.raises(RuntimeError, match=f"Cannot differentiate function '{f.name}'"):
            f.symbolic_gradient()
