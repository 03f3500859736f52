"""gf.losses against TF 2.21's tf.compat.v1.losses (fixtures from make_losses.py)."""
import inspect

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("losses")
CASES = FIXTURE["cases"]
ERRORS = FIXTURE["errors"]


def build(case):
    tensors = {key: gf.constant(np.asarray(value, dtype=dtype), dtype=dtype)
               for key, (value, dtype) in case["inputs"].items()}
    return getattr(gf.losses, case["fn"])(**tensors, **case["kwargs"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_tf(name):
    case = CASES[name]
    graph = gf.Graph()
    with graph.as_default():
        loss = build(case)
        assert loss.name == case["name"]
        assert loss.dtype.name == case["dtype"]
        assert loss.shape.as_list() == case["shape"]
        for key, names in case["collections"].items():
            assert [t.name for t in graph.get_collection(key)] == names
        with gf.Session() as session:
            value = session.run(loss)
    np.testing.assert_allclose(value, case["value"], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_key_ops_named_as_tf(name):
    """Ops that gradflow builds as TF does carry TF's names (TF's extra assertion and
    shape-plumbing ops aside)."""
    case = CASES[name]
    graph = gf.Graph()
    with graph.as_default():
        build(case)
        ours = {op.name for op in graph.get_operations()}
    key_ops = [n for n in case["ops"] if n.rsplit("/", 1)[-1] in (
        "value", "value_1", "value_2", "Sum", "Mul", "num_present", "SquaredDifference",
        "Abs", "Relu", "Minimum", "Log", "Log_1", "xentropy", "labels_stop_gradient")]
    assert key_ops and set(key_ops) <= ours, sorted(set(key_ops) - ours)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_call_raises_as_tf_and_changes_nothing(name):
    case = ERRORS[name]
    graph = gf.Graph()
    with graph.as_default():
        tensors = {key: gf.constant(np.asarray(value, dtype=dtype), dtype=dtype)
                   for key, (value, dtype) in case["inputs"].items()}
        before = [op.name for op in graph.get_operations()]
        keys = graph.get_all_collection_keys()
        with pytest.raises({"ValueError": ValueError, "TypeError": TypeError}[case["type"]]) \
                as info:
            getattr(gf.losses, case["fn"])(**tensors, **case["kwargs"])
        assert [op.name for op in graph.get_operations()] == before
        assert graph.get_all_collection_keys() == keys
        assert graph.get_collection(gf.GraphKeys.LOSSES) == []
    expected = case["message"].split(" Received")[0]
    assert str(info.value).startswith(expected), (str(info.value), expected)


def test_reduction_keys_as_tf():
    reduction = FIXTURE["reduction"]
    assert list(gf.losses.Reduction.all()) == reduction["all"]
    for key, value in reduction["keys"].items():
        assert getattr(gf.losses.Reduction, key) == value
    with pytest.raises(ValueError) as info:
        gf.losses.Reduction.validate("bogus")
    assert str(info.value) == reduction["validate_error"]
    for key in reduction["all"]:
        gf.losses.Reduction.validate(key)


def test_collection_helpers_as_tf():
    helpers = FIXTURE["helpers"]
    graph = gf.Graph()
    with graph.as_default():
        assert gf.losses.get_regularization_loss().name == helpers["empty_regularization"]
        assert gf.losses.get_regularization_losses() == []
        gf.losses.mean_squared_error(gf.constant([1.0, 2.0]), gf.constant([2.0, 4.0]))
        with gf.name_scope("tower"):
            gf.losses.absolute_difference(gf.constant([1.0, 2.0]), gf.constant([2.0, 5.0]))
        gf.losses.add_loss(gf.constant(0.25, name="extra"))
        gf.losses.add_loss(gf.constant(7.0, name="elsewhere"), loss_collection="other")
        gf.add_to_collection(gf.GraphKeys.REGULARIZATION_LOSSES,
                             gf.constant(0.5, name="reg_a"))
        with gf.name_scope("tower"):
            gf.add_to_collection(gf.GraphKeys.REGULARIZATION_LOSSES,
                                 gf.constant(0.125, name="reg_b"))
        totals = [gf.losses.get_total_loss(),
                  gf.losses.get_total_loss(add_regularization_losses=False, name="plain"),
                  gf.losses.get_total_loss(scope="tower"),
                  gf.losses.get_regularization_loss(),
                  gf.losses.get_regularization_loss(scope="tower", name="tower_reg")]
        assert [t.name for t in totals] == helpers["names"]
        with gf.Session() as session:
            np.testing.assert_allclose(session.run(totals), helpers["values"], rtol=1e-6)
        assert names(gf.losses.get_losses()) == helpers["get_losses"]
        assert names(gf.losses.get_losses(scope="tower")) == helpers["get_losses_tower"]
        assert names(gf.losses.get_losses(loss_collection="other")) == \
            helpers["get_losses_other"]
        assert names(gf.losses.get_regularization_losses()) == \
            helpers["regularization_losses"]
        assert names(gf.losses.get_regularization_losses(scope="tower")) == \
            helpers["regularization_losses_tower"]


def names(tensors):
    return [t.name for t in tensors]


def test_total_loss_of_nothing_raises_as_tf():
    kind, message = FIXTURE["helpers"]["total_loss_empty_error"]
    with gf.Graph().as_default(), pytest.raises(ValueError, match="at least one Tensor"):
        gf.losses.get_total_loss()
    assert kind == "ValueError" and "at least one Tensor" in message


@pytest.mark.parametrize("name", sorted(FIXTURE["signatures"]))
def test_signature_as_tf(name):
    """Every tf.compat.v1.losses function exists with TF's parameters and defaults."""
    params = inspect.signature(getattr(gf.losses, name)).parameters.values()
    ours = [[p.name, None if p.default is inspect.Parameter.empty else p.default]
            for p in params]
    assert ours == FIXTURE["signatures"][name]
