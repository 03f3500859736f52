"""TF1's details as TF 2.21 compat.v1 shows them: op names, reprs and error messages.

The cases (tests/fixtures/tf/details_cases.py) are the very code
tests/fixtures/tf/make_details.py ran under TensorFlow, run here with gradflow as the
``tf`` module.
"""
import sys

import pytest
from tf_fixtures import FIXTURES, load_json

import gradflow as gf

sys.path.insert(0, str(FIXTURES))
import details_cases  # noqa: E402

RECORDED = load_json("details")


def _op_text(op) -> str:
    # the one type difference by design: a variable's ``read`` reads its current value
    kind = "Identity" if op.type == "ReadVariableOp" and op.name.endswith("/read") else op.type
    return f"{op.name} {kind}"


def test_every_case_was_recorded():
    assert sorted(RECORDED["op_names"]) == sorted(details_cases.OP_NAMES)
    assert sorted(RECORDED["reprs"]) == sorted(details_cases.REPRS)


def _forward(ops: list) -> list:
    # gradient graphs are built by different (equally valid) rules: only the ops
    # outside ``gradients/`` are compared one to one (see test_gradient_op_names)
    return [op for op in ops if not op.startswith("gradients")]


@pytest.mark.parametrize("program", sorted(details_cases.OP_NAMES))
def test_op_names_and_types_equal_tensorflow(program):
    graph = gf.Graph()
    with graph.as_default():
        details_cases.OP_NAMES[program](gf)
    made = [_op_text(op) for op in graph.get_operations()]
    assert _forward(made) == _forward(RECORDED["op_names"][program])


# gradient ops users meet by name (printing ``compute_gradients``, fetching a gradient)
NAMED_GRADIENT_OPS = ["gradients/Shape Const", "gradients/grad_ys_0/Const Const",
                      "gradients/grad_ys_0 Fill", "gradients/MatMul_grad/MatMul_1 MatMul",
                      "gradients/add_grad/Sum Sum", "gradients/add_grad/Reshape Reshape",
                      "gradients/add_grad/tuple/group_deps NoOp",
                      "gradients/add_grad/tuple/control_dependency Identity",
                      "gradients/add_grad/tuple/control_dependency_1 Identity",
                      "GradientDescent/update_w/ApplyGradientDescent ApplyGradientDescent"]


def test_gradient_op_names():
    recorded = RECORDED["op_names"]["mlp_gradient_descent"]
    graph = gf.Graph()
    with graph.as_default():
        details_cases.OP_NAMES["mlp_gradient_descent"](gf)
    made = [_op_text(op) for op in graph.get_operations()]
    assert [n for n in NAMED_GRADIENT_OPS if n in recorded] == NAMED_GRADIENT_OPS
    assert [n for n in NAMED_GRADIENT_OPS if n in made] == NAMED_GRADIENT_OPS


@pytest.mark.parametrize("case", sorted(details_cases.REPRS))
def test_repr_equals_tensorflow(case):
    with gf.Graph().as_default():
        assert details_cases.REPRS[case](gf) == RECORDED["reprs"][case]

