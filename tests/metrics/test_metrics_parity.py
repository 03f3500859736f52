"""gf.metrics against TF 2.21's tf.compat.v1.metrics (fixtures from make_metrics.py):
names, variables and collections, and values over recorded multi-batch streams."""
import inspect

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("metrics")
CASES = FIXTURE["cases"]
ERRORS = FIXTURE["errors"]
KEYS = ["local_variables", "metric_variables", "variables", "trainable_variables"]


def placeholders(inputs):
    return {key: gf.placeholder(dtype, shape, name=key) for key, (dtype, shape) in inputs.items()}


def build(case):
    feeds = placeholders(case["inputs"])
    return feeds, getattr(gf.metrics, case["fn"])(**feeds, **case["kwargs"])


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64),
                               np.asarray(expected, dtype=np.float64), rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_names_variables_and_collections_as_tf(name):
    case = CASES[name]
    graph = gf.Graph()
    with graph.as_default():
        _, (value, update) = build(case)
        assert (value.name, update.name) == (case["value_name"], case["update_name"])
        assert (value.dtype.name, update.dtype.name) == (case["value_dtype"],
                                                         case["update_dtype"])
        assert value.shape.as_list() == case["value_shape"]
        assert update.shape.as_list() == case["update_shape"]
        variables = [{"name": v.name, "dtype": v.dtype.name, "shape": v.shape.as_list(),
                      "collections": [k for k in KEYS
                                      if any(x is v for x in graph.get_collection(k))]}
                     for v in graph.get_collection(gf.GraphKeys.LOCAL_VARIABLES)]
        assert variables == case["variables"]
        assert [v.name for v in gf.global_variables()] == case["global_variables"]
        for key, names in case["collections"].items():
            assert [t.name for t in graph.get_collection(key)] == names
        state_ops = [[op.name, op.type] for op in graph.get_operations()
                     if op.type in ("VariableV2", "Assign", "AssignAdd", "ScatterAdd")]
        assert state_ops == case["state_ops"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_stream_values_and_reset_as_tf(name):
    case = CASES[name]
    graph = gf.Graph()
    with graph.as_default():
        feeds, (value, update) = build(case)
        init = gf.local_variables_initializer()
        with gf.Session() as session:
            session.run(init)
            close(session.run(value), case["initial"])
            for batch, expected_update, expected_value in zip(
                    case["batches"], case["updates"], case["values"], strict=True):
                feed = {feeds[k]: np.asarray(v, dtype=feeds[k].dtype.as_numpy_dtype)
                        for k, v in batch.items()}
                close(session.run(update, feed), expected_update)
                close(session.run(value), expected_value)
            session.run(init)
            close(session.run(value), case["after_reset"])


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_call_raises_as_tf_and_changes_nothing(name):
    case = ERRORS[name]
    graph = gf.Graph()
    with graph.as_default():
        feeds = placeholders(case["inputs"])
        before = [op.name for op in graph.get_operations()]
        keys = graph.get_all_collection_keys()
        with pytest.raises({"ValueError": ValueError, "TypeError": TypeError}[case["type"]]) \
                as info:
            getattr(gf.metrics, case["fn"])(**feeds, **case["kwargs"])
        assert [op.name for op in graph.get_operations()] == before
        assert graph.get_all_collection_keys() == keys
        assert gf.local_variables() == []
    expected = case["message"].split(" Received")[0]
    assert str(info.value).startswith(expected), (str(info.value), expected)


def test_repeated_and_scoped_metrics_numbered_as_tf():
    twice = FIXTURE["twice"]
    with gf.Graph().as_default():
        labels = gf.placeholder(gf.int64, [None])
        tensors = [gf.metrics.accuracy(labels, labels), gf.metrics.accuracy(labels, labels)]
        with gf.name_scope("eval"):
            tensors.append(gf.metrics.accuracy(labels, labels))
            tensors.append(gf.metrics.auc(labels, gf.cast(labels, gf.float32), num_thresholds=3))
        tensors.append(gf.metrics.mean(gf.cast(labels, gf.float32), name="m"))
        tensors.append(gf.metrics.mean(gf.cast(labels, gf.float32), name="m"))
        assert [t.name for pair in tensors for t in pair] == twice["tensors"]
        assert [v.name for v in gf.local_variables()] == twice["variables"]


@pytest.mark.parametrize("name", sorted(FIXTURE["signatures"]))
def test_signature_as_tf(name):
    """Every tf.compat.v1.metrics function exists with TF's parameters and defaults."""
    params = inspect.signature(getattr(gf.metrics, name)).parameters.values()
    ours = [[p.name, None if p.default is inspect.Parameter.empty else p.default]
            for p in params]
    assert ours == FIXTURE["signatures"][name]
