"""The variable store against TF 2.21's ``tf.compat.v1`` (fixtures from make_variables.py).

The programs of ``variable_programs.py`` run here on gradflow and were recorded on
TensorFlow; their notes (scope names, reuse modes, sharing, errors), op names,
collections and initialized values must agree, except where gradflow differs on
purpose (docs/variables.md), listed in ``DELIBERATE``.
"""
import re

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json
from variable_programs import PROGRAMS, run_program

FIXTURE = load_json("variables")

# What TF leaves and gradflow does not, by program:
# - TF1 calls a regularizer a second time at the root name scope, only to see whether it
#   returns None, leaving those ops unused; gradflow calls it once, under
#   <variable>/Regularizer/;
# - a failing call in gradflow leaves no ops or variables (Graph.atomic), where TF keeps
#   what it built before the error (an initializer's shape constant, a template call's
#   variable).
DELIBERATE = {
    "scope_defaults": re.compile(r"(Const|Square|Sum|L2Loss)(_\d+)?"),
    "shapes_and_values": re.compile(r"sv/ni/Initializer/random_normal/shape"),
    "templates": re.compile(r"bad_1/.*"),
}


def _variable_reprs(text):
    """Variables named the same way in both libraries' messages (reprs differ)."""
    return re.sub(r"<(?:tf|gf)\.Variable '([^']+)'[^>]*>", r"\1", text)


def _normalised(value):
    if isinstance(value, str):
        return _variable_reprs(value)
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


def _kept(names, program):
    pattern = DELIBERATE.get(program)
    return [n for n in names if pattern is None or not pattern.fullmatch(n.split(":")[0])]


@pytest.fixture(scope="module")
def results():
    return {name: run_program(gf, program) for name, program in PROGRAMS.items()}


def test_every_recorded_program_is_run():
    assert sorted(FIXTURE) == sorted(PROGRAMS)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_notes_match_tf(results, program):
    got, expected = results[program]["notes"], FIXTURE[program]["notes"]
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert _normalised(got[key]) == _normalised(value), key


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_op_names_match_tf(results, program):
    got = results[program]["ops"]
    assert got == _kept(FIXTURE[program]["ops"], program)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_collections_match_tf(results, program):
    for key, names in FIXTURE[program]["collections"].items():
        assert results[program]["collections"][key] == _kept(names, program), key


@pytest.mark.parametrize("program", sorted(p for p in PROGRAMS if "values" in FIXTURE[p]))
def test_initialized_values_match_tf(results, program):
    got, expected = results[program]["values"], FIXTURE[program]["values"]
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[key], dtype=float),
                                   np.asarray(value, dtype=float), rtol=1e-6, err_msg=key)
