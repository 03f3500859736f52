"""Every deterministic dataset transformation against TF 2.21 (element sequences, types,
shapes, end of data, op types)."""
from __future__ import annotations

import pytest
from data_helpers import CASES, jsonable
from tf_fixtures import load_json

import gradflow as gf

FIXTURE = load_json("data")
# Op types that differ on purpose: TF builds from_generator from a FlatMap over a
# TensorDataset and runs a py_func; unbatch normalizes its input with a MapDataset.
OP_TYPE_DEVIATIONS = {"generator": {"GeneratorDataset"}, "unbatch": set()}


def _shapes(structure):
    if isinstance(structure, dict):
        return {k: _shapes(v) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        return [_shapes(s) for s in structure]
    return structure.as_list() if structure.ndims is not None else None


def _types(structure):
    if isinstance(structure, dict):
        return {k: _types(v) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        return [_types(s) for s in structure]
    return structure.name


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_tf(name):
    expected = FIXTURE["cases"][name]
    graph = gf.Graph()
    with graph.as_default():
        dataset = CASES[name](gf)
        iterator = gf.data.make_initializable_iterator(dataset)
        element = iterator.get_next()
        assert _types(dataset.output_types) == expected["types"]
        assert _shapes(dataset.output_shapes) == expected["shapes"]
        ops = {op.type for op in graph.get_operations() if "Dataset" in op.type}
        if name in OP_TYPE_DEVIATIONS:
            assert ops - set(expected["ops"]) == OP_TYPE_DEVIATIONS[name]
        else:
            assert ops == set(expected["ops"])
        with gf.Session() as sess:
            sess.run(iterator.initializer)
            got = []
            with pytest.raises(gf.errors.OutOfRangeError) as end:
                while True:
                    got.append(jsonable(sess.run(element)))
            assert got == expected["elements"]
            assert end.value.message.startswith(expected["end"][1])
            with pytest.raises(gf.errors.OutOfRangeError):  # stays at the end
                sess.run(element)
            # re-initializing starts again from the first element
            sess.run(iterator.initializer)
            if expected["elements"]:
                assert jsonable(sess.run(element)) == expected["elements"][0]


def test_errors_as_tf():
    errors = FIXTURE["errors"]
    with gf.Graph().as_default():
        iterator = gf.data.make_initializable_iterator(gf.data.Dataset.range(3))
        element = iterator.get_next()
        with gf.Session() as sess:
            with pytest.raises(gf.errors.FailedPreconditionError) as err:
                sess.run(element)
            assert err.value.message.startswith(errors["uninitialized"][1])
        one_shot = gf.data.make_one_shot_iterator(gf.data.Dataset.range(3))
        with pytest.raises(ValueError) as err:
            one_shot.initializer  # noqa: B018 - the property raises
        assert str(err.value) == errors["one_shot_initializer"]
        structure = gf.data.Iterator.from_structure(gf.int64, gf.TensorShape([]))
        with pytest.raises(TypeError) as err:
            structure.make_initializer(gf.data.Dataset.from_tensors(1.0))
        assert str(err.value) == errors["wrong_type"]
        bad = gf.data.make_initializable_iterator(
            gf.data.Dataset.range(1, 3).map(lambda x: gf.fill([x], x)).batch(2))
        with gf.Session() as sess:
            sess.run(bad.initializer)
            with pytest.raises(gf.errors.InvalidArgumentError) as err:
                sess.run(bad.get_next())
            assert err.value.message.startswith(errors["batch_shapes"][1])
