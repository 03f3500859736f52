"""Op-name parity with TensorFlow: the forward ops (names AND types) that small TF1
programs create, as recorded by tests/fixtures/tf/make_op_names.py under TF 2.21.

The programs (tests/fixtures/tf/op_name_programs.py) are the very code TF ran, with
gradflow as the ``tf`` module. One type differs by design and is mapped here: a
variable's ``<name>/read`` is a ``ReadVariableOp`` in gradflow (it reads the variable's
current value) where TF1's reference variables use an ``Identity``.
"""
import sys

import pytest
from tf_fixtures import FIXTURES, load_json

import gradflow as gf

sys.path.insert(0, str(FIXTURES))
import op_name_programs  # noqa: E402

RECORDED = load_json("op_names")


def _as_tf_type(op) -> str:
    if op.type == "ReadVariableOp" and op.name.endswith("/read"):
        return "Identity"  # the one documented type difference (see the module docstring)
    return op.type


def test_every_program_was_recorded():
    assert sorted(RECORDED) == sorted(op_name_programs.PROGRAMS)


@pytest.mark.parametrize("program", sorted(op_name_programs.PROGRAMS))
def test_forward_op_names_and_types_equal_tensorflow(program):
    graph = gf.Graph()
    with graph.as_default():
        op_name_programs.PROGRAMS[program](gf)
    made = [[op.name, _as_tf_type(op)] for op in graph.get_operations()]
    assert made == RECORDED[program]
