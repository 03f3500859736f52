"""explain_gradient: every reason a gradient is None or zero, and agreement with gradients."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.tools.diagnostics import GradientExplanation


def explain_and_check(y, x, **kwargs) -> GradientExplanation:
    """Explains, and checks the verdict against what gf.gradients actually returns."""
    explanation = gf.explain_gradient(y, x, **kwargs)
    blockers = {b.kind for b in explanation.blockers}
    if blockers & {"no_gradient_defined", "prevent_gradient"}:
        with pytest.raises(LookupError):
            gf.gradients(y, x, **kwargs)
    else:
        (grad,) = gf.gradients(y, x, **kwargs)
        assert (grad is None) == explanation.gradient_is_none, str(explanation)
    return explanation


def test_connected_shows_the_path():
    w = gf.Variable(np.ones((3, 2), np.float32), name="w")
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    loss = gf.reduce_mean(gf.tanh(gf.matmul(x, w)), name="loss")
    explanation = explain_and_check(loss, w)
    assert explanation.status == "connected" and not explanation.gradient_is_none
    assert [t.name for t in explanation.path] == ["w:0", "w/read:0", "MatMul:0", "Tanh:0",
                                                  "loss:0"]
    assert str(explanation) == (
        "gf.gradients(loss:0, w:0) flows along this path:\n"
        "    w:0 -> [ReadVariableOp] w/read:0 -> [MatMul] MatMul:0 -> [Tanh] Tanh:0 -> "
        "[Mean] loss:0")
    assert explain_and_check(loss, loss).path == (loss,)


def test_no_path_and_control_only_dependencies():
    a = gf.placeholder(gf.float32, name="a")
    b = gf.placeholder(gf.float32, name="b")
    y = a * 2.0
    explanation = explain_and_check(y, b)
    assert explanation.status == "no_path" and not explanation.control_only
    assert "mul:0 is not computed from b:0" in str(explanation)
    assert "unconnected_gradients='zero'" in str(explanation)
    with gf.control_dependencies([gf.identity(b, name="side")]):
        z = gf.identity(a, name="z")
    assert explain_and_check(z, b).control_only
    assert "only through control dependencies" in explain_and_check(z, b).summary()


def test_integer_cast_names_the_cast():
    x = gf.placeholder(gf.float32, [3], name="x")
    y = gf.reduce_sum(gf.cast(gf.cast(x, gf.int32, name="to_int"), gf.float32))
    explanation = explain_and_check(y, x)
    assert explanation.status == "blocked"
    (blocker,) = explanation.blockers
    assert (blocker.kind, blocker.op.name, blocker.tensor.name) == ("integer", "to_int",
                                                                    "to_int:0")
    assert "outputs to_int:0 of type int32" in blocker.reason
    assert "to_int:0 (cut here)" in str(explanation)


def test_integer_x_itself():
    i = gf.placeholder(gf.int32, name="i")
    explanation = explain_and_check(gf.cast(i, gf.float32) * 2.0, i)
    assert [b.kind for b in explanation.blockers] == ["integer"]
    assert explanation.blockers[0].tensor is i


def test_stop_gradient_and_not_differentiable_ops():
    x = gf.placeholder(gf.float32, [2], name="x")
    # zeros_like is one ZerosLike op, as in TF (ones_like is Shape, Const and Fill there)
    y = gf.reduce_sum(gf.stop_gradient(x, name="frozen")) + gf.reduce_sum(
        gf.zeros_like(x, name="zeros") * 3.0)
    explanation = explain_and_check(y, x)
    kinds = {(b.kind, b.op.name) for b in explanation.blockers}
    assert kinds == {("stop_gradient", "frozen"), ("not_differentiable", "zeros")}
    assert "op 'zeros' (type ZerosLike) is registered as NotDifferentiable" in str(explanation)


def test_missing_gradient_and_prevent_gradient_explain_the_lookup_error():
    x = gf.placeholder(gf.float32, [2], name="x")
    with gf.get_default_graph().gradient_override_map({"Identity": "NoSuchGradient"}):
        odd = gf.identity(x, name="odd")
    explanation = explain_and_check(odd * 2.0, x)
    assert [b.kind for b in explanation.blockers] == ["no_gradient_defined"]
    guarded = gf.prevent_gradient(x, message="not twice", name="guard")
    explanation = explain_and_check(guarded * 2.0, x)
    assert [b.kind for b in explanation.blockers] == ["prevent_gradient"]
    assert "'not twice'" in str(explanation)


def test_stop_gradients_argument():
    x = gf.placeholder(gf.float32, [2], name="x")
    h = gf.tanh(x, name="h")
    y = gf.reduce_sum(h * 2.0)
    explanation = explain_and_check(y, x, stop_gradients=[h])
    (blocker,) = explanation.blockers
    assert (blocker.kind, blocker.tensor) == ("stop_gradients", h)
    assert "h:0 is listed in stop_gradients" in blocker.reason
    assert explain_and_check(y, x, stop_gradients=h).status == "blocked"
    assert explain_and_check(y + gf.reduce_sum(x), x, stop_gradients=[h]).status == "connected"


def test_one_open_path_is_enough():
    x = gf.placeholder(gf.float32, [2], name="x")
    y = gf.reduce_sum(gf.stop_gradient(x)) + gf.reduce_sum(gf.square(x))
    assert explain_and_check(y, x).status == "connected"


def test_piecewise_constant_path_gives_zero():
    x = gf.placeholder(gf.float32, [2], name="x")
    explanation = explain_and_check(gf.sign(x) * 2.0, x)
    assert explanation.status == "zero" and not explanation.gradient_is_none
    assert explanation.blockers[0].op.type == "Sign"
    assert "is zero" in str(explanation)


def test_tensors_of_different_graphs():
    x = gf.placeholder(gf.float32, name="x")
    with gf.Graph().as_default():
        y = gf.constant(1.0) * 2.0
    assert "different graphs" in gf.explain_gradient(y, x).summary()


def test_long_paths_are_walked_iteratively_and_shortened_in_text():
    x = gf.placeholder(gf.float32, [2], name="x")
    t = x
    for _ in range(3000):
        t = gf.tanh(t)
    y = gf.reduce_sum(gf.cast(gf.cast(t, gf.int32, name="last"), gf.float32))
    explanation = gf.explain_gradient(y, x)
    assert len(explanation.blockers[0].path) == 3004
    text = str(explanation)
    assert "(2997 more)" in text and "last:0 (cut here)" in text


def test_walk_never_looks_at_consumers_outside_y_ancestry(monkeypatch):
    x = gf.placeholder(gf.float32, [2], name="x")
    for _ in range(200):
        gf.exp(x)  # consumers of x that y does not depend on
    y = gf.reduce_sum(gf.square(x))

    def forbidden(self):
        raise AssertionError("explain_gradient must not scan consumers")
    monkeypatch.setattr(gf.Tensor, "consumers", forbidden)
    assert gf.explain_gradient(y, x).status == "connected"


def test_repr_is_short():
    x = gf.placeholder(gf.float32, name="x")
    assert repr(gf.explain_gradient(x * 2.0, x)) == (
        "<GradientExplanation connected: y=mul:0, x=x:0, 2 tensors on path, 0 blockers>")
