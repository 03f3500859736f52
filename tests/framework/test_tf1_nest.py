"""``gf.nest`` against ``tf.nest`` (fixtures recorded from TF 2.21): values, exception
types and the exact messages."""
import importlib.util
import json

import pytest

import gradflow as gf
from gradflow.framework import nest
from tf_fixtures import FIXTURES, load_json

_spec = importlib.util.spec_from_file_location("nest_cases", FIXTURES / "nest_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

RECORDED = load_json("control_flow_nest")


def _as_json(record: dict) -> dict:
    return json.loads(json.dumps(record))


def test_every_case_was_recorded():
    assert sorted(RECORDED) == sorted([*cases.CASES, *cases.UP_TO_CASES])


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_nest_matches_tf(name):
    assert _as_json(cases.outcome(lambda: cases.CASES[name](gf.nest))) == RECORDED[name]


@pytest.mark.parametrize("name", sorted(cases.UP_TO_CASES))
def test_flatten_up_to_matches_tf(name):
    assert _as_json(cases.outcome(lambda: cases.UP_TO_CASES[name](nest.flatten_up_to))) \
        == RECORDED[name]


def test_is_sequence_is_tf1_name_of_is_nested():
    assert gf.nest.is_sequence([1]) and not gf.nest.is_sequence("ab")


def test_pack_round_trips_a_flattened_structure():
    structure = {"z": [1, (2, {"k": 3})], "a": cases.Point(4, [5])}
    flat = gf.nest.flatten(structure)
    assert gf.nest.pack_sequence_as(structure, flat) == structure
    assert flat == [4, 5, 1, 2, 3]


def test_expand_composites_opens_indexed_slices():
    values, indices = gf.constant([1.0, 2.0]), gf.constant([0, 3])
    shape = gf.constant([4])
    structure = [gf.IndexedSlices(values, indices, shape), gf.IndexedSlices(values, indices)]
    flat = gf.nest.flatten(structure, expand_composites=True)
    assert flat == [values, indices, shape, values, indices]
    assert gf.nest.flatten(structure) == structure
    packed = gf.nest.pack_sequence_as(structure, flat, expand_composites=True)
    assert packed[0].dense_shape is shape and packed[1].dense_shape is None
    with pytest.raises(ValueError, match="number of elements"):
        gf.nest.assert_same_structure(structure[0], structure[1], expand_composites=True)
