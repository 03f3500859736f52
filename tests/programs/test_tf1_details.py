"""TF1's details as TF 2.21 compat.v1 shows them: op names, reprs and error messages.

The cases (tests/fixtures/tf/details_cases.py) are the very code
tests/fixtures/tf/make_details.py ran under TensorFlow, run here with gradflow as the
``tf`` module.
"""
import re
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
    assert sorted(RECORDED["errors"]) == sorted(details_cases.ERRORS)


def _forward(ops: list) -> list:
    # gradient graphs are built by different (equally valid) rules: only the ops
    # outside ``gradients/`` are compared one to one (see test_gradient_op_names)
    return [op for op in ops if not op.startswith("gradients")]


# ops known to differ (docs/tf1_programs.md, "Details matched to TF"): TF's ``batch``
# converts an unused ``keep_input`` (batch/Const); TF's Assert converts its data twice
# (Assert/Const, Assert/Assert/data_0)
DIFFERENT = {"queue_input_pipelines": {
    "batch/Const", "input_producer_1/Assert/Const",
    "input_producer_1/Assert/Assert/data_0", "input_producer_1/Assert/data_0"}}


@pytest.mark.parametrize("program", sorted(details_cases.OP_NAMES))
def test_op_names_and_types_equal_tensorflow(program):
    graph = gf.Graph()
    with graph.as_default():
        details_cases.OP_NAMES[program](gf)
    made = [_op_text(op) for op in graph.get_operations()]
    different = DIFFERENT.get(program, set())

    def compared(ops: list) -> list:
        return [op for op in _forward(ops) if op.split(" ")[0] not in different]
    assert compared(made) == compared(RECORDED["op_names"][program])


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


# cases that start a Python process (importing gradflow takes seconds)
SLOW_REPRS = {"logging_lines"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_REPRS
                                  else c for c in sorted(details_cases.REPRS)])
def test_repr_equals_tensorflow(case):
    with gf.Graph().as_default():
        assert details_cases.REPRS[case](gf) == RECORDED["reprs"][case]


# errors whose TF text goes on about eager mode and tf.function: gradflow keeps its
# first sentence, then says what to do in a graph
LEADING_SENTENCE_ONLY = {"tensor_as_bool", "tensor_iterated"}


def _same_classes(message: str) -> str:
    """A message with a graph's class named alike (TF's module path is not gradflow's)."""
    return re.sub(r"<[\w.]+\.Graph object", "<Graph object", message)


def _core(message: str) -> str:
    """A message without the failing node's suffix (``\n\t [[{{node x}}]]``) and
    the final period."""
    return message.split("\n\t [[")[0].rstrip(".")


@pytest.mark.parametrize("case", sorted(details_cases.ERRORS))
def test_error_equals_tensorflow(case):
    kind, message = RECORDED["errors"][case]
    message = _same_classes(message)
    with gf.Graph().as_default(), pytest.raises(Exception) as raised:  # noqa: PT011
        details_cases.ERRORS[case](gf)
    assert type(raised.value).__name__ == kind
    made = _same_classes(re.sub(r"0x[0-9a-f]+", "0x...", str(raised.value)))
    # gradflow's text starts with TF's (up to TF's note on partial shapes, which gradflow
    # does not add; for a few, where TF's advice is about eager mode, its first sentence)
    # and may go on with gradflow's own words: the tensors' names
    expected = _core(message.split(" and with input tensors computed as partial")[0])
    first_sentence = expected.split(". ")[0]
    assert made.startswith(expected if case not in LEADING_SENTENCE_ONLY else first_sentence)
    if "[[{{node " in message:
        assert made.endswith(message[message.rindex("[[{{node "):].split("\n")[0])

