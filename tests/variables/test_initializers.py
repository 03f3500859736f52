"""Initializers against TF 2.21's ``tf.compat.v1`` init_ops (make_variables_initializers.py).

Configs, errors and deterministic values must equal TF's. Random streams differ from
TF's, so random initializers are compared by the moments of large seeded samples, and
their variance-scaling fans checked against the closed forms; seeds must make values
repeat run after run and session after session.
"""
import math

import numpy as np
import pytest

import gradflow as gf
from gradflow.variables.init_ops import compute_fans
from tf_fixtures import load_json

FIXTURE = load_json("variables_initializers")
NAMESPACE = {"zeros", "ones", "constant", "random_normal", "random_uniform",
             "truncated_normal", "variance_scaling", "orthogonal", "identity",
             "glorot_uniform", "glorot_normal", "uniform_unit_scaling", "he_normal",
             "he_uniform", "lecun_normal", "lecun_uniform"}
BOUNDED = ("uniform", "truncated", "unit_scaling", "glorot", "vs_", "he_", "lecun_")


def constructor(name):
    return getattr(gf.initializers, name) if name in NAMESPACE else getattr(gf, name)


def build(name, kwargs):
    kwargs = {key: (gf.as_dtype(value) if key == "dtype" else value)
              for key, value in kwargs.items()}
    return constructor(name)(**kwargs)


@pytest.mark.parametrize("name", sorted(FIXTURE["configs"]))
def test_config_matches_tf(name):
    kwargs, expected = FIXTURE["configs"][name]
    init = build(name, kwargs)
    assert init.get_config() == expected
    rebuilt = type(init).from_config(init.get_config())
    assert type(rebuilt) is type(init) and rebuilt.get_config() == expected


@pytest.mark.parametrize("name", sorted(FIXTURE["namespace_configs"]))
def test_namespace_defaults_match_tf(name):
    class_name, expected = FIXTURE["namespace_configs"][name]
    init = getattr(gf.initializers, name)()
    assert type(init).__name__ == class_name
    assert init.get_config() == expected


def test_namespace_and_top_level_names():
    assert gf.initializers.zeros is gf.zeros_initializer
    assert gf.initializers.glorot_uniform is gf.glorot_uniform_initializer
    assert gf.initializers.global_variables is gf.global_variables_initializer
    assert gf.initializers.local_variables is gf.local_variables_initializer
    assert gf.initializers.variables is gf.variables_initializer
    assert isinstance(gf.initializers.identity(), gf.initializers.identity)


@pytest.mark.parametrize("label", sorted(FIXTURE["errors"]))
def test_errors_match_tf(label):
    case = FIXTURE["errors"][label]
    graph = gf.Graph()
    with graph.as_default():
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(Exception) as info:
            init = build(case["constructor"], case["kwargs"])
            if case["shape"] is not None:
                init(case["shape"], dtype=None if case["dtype"] is None
                     else gf.as_dtype(case["dtype"]))
        assert [op.name for op in graph.get_operations()] == before
    kind, message = case["raised"]
    assert (type(info.value).__name__, str(info.value)) == (kind, message)


@pytest.mark.parametrize("label", sorted(FIXTURE["values"]))
def test_deterministic_values_match_tf(label):
    case = FIXTURE["values"][label]
    with gf.Graph().as_default():
        init = build(case["constructor"], case["kwargs"])
        tensor = init(case["shape"], dtype=None if case["dtype"] is None
                      else gf.as_dtype(case["dtype"]))
        with gf.Session() as session:
            value = session.run(tensor)
    assert value.dtype.name == case["value_dtype"]
    np.testing.assert_array_equal(value, np.asarray(case["value"], dtype=value.dtype))


@pytest.fixture(scope="module")
def samples():
    with gf.Graph().as_default():
        gf.set_random_seed(1234)
        tensors = {label: build(case["constructor"], case["kwargs"])(case["shape"])
                   for label, case in FIXTURE["samples"].items()}
        with gf.Session() as session:
            return session.run(tensors)


@pytest.mark.parametrize("label", sorted(FIXTURE["samples"]))
def test_random_moments_match_tf(samples, label):
    expected = FIXTURE["samples"][label]
    value = samples[label]
    assert list(value.shape) == expected["shape"] and value.dtype.name == expected["dtype"]
    values = value.astype(np.float64)
    sigma = expected["std"]
    # Two independent sample means differ by sqrt(2) sigma / sqrt(n) in spread: 6 / sqrt(n)
    # sigma is over four such spreads.
    assert abs(values.mean() - expected["mean"]) < 6 * sigma / math.sqrt(values.size)
    assert values.std() == pytest.approx(sigma, rel=0.03)
    if label.startswith(BOUNDED) and "untruncated" not in label:
        # Bounded distributions: both samples reach (nearly) the same bounds.
        spread = expected["max"] - expected["min"]
        assert values.min() >= expected["min"] - 0.02 * spread
        assert values.max() <= expected["max"] + 0.02 * spread
        assert values.min() <= expected["min"] + 0.02 * spread
        assert values.max() >= expected["max"] - 0.02 * spread
    if label.startswith("orthogonal"):
        flat = values.reshape(-1, values.shape[-1])
        gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
        assert np.mean(np.diag(gram)) == pytest.approx(expected["gram_diagonal"], rel=1e-5)
        assert np.max(np.abs(gram - np.diag(np.diag(gram)))) < 1e-5


@pytest.mark.parametrize("shape, fans", [
    ([], (1, 1)), ([7], (7, 7)), ([5, 3], (5, 3)), ([3, 3, 16, 32], (144, 288)),
    ([2, 4, 4, 8, 2], (256, 64)), ([1, 1, 0, 4], (0, 4)),
])
def test_compute_fans(shape, fans):
    assert compute_fans(shape) == fans


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
@pytest.mark.parametrize("distribution",
                         ["truncated_normal", "untruncated_normal", "uniform", "normal"])
def test_variance_scaling_of_conv_kernel_has_closed_form_spread(samples, mode, distribution):
    """Var = scale / fan, fans of a [3, 3, 16, 320] kernel counting the 3x3 field."""
    values = samples[f"vs_{mode}_{distribution}"].astype(np.float64)
    fan_in, fan_out = 3 * 3 * 16, 3 * 3 * 320
    fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    variance = 2.0 / fan
    assert values.std() == pytest.approx(math.sqrt(variance), rel=0.02)
    if distribution == "uniform":
        limit = math.sqrt(3 * variance)
        assert -limit <= values.min() and values.max() <= limit
        assert values.max() > 0.99 * limit
    elif distribution in ("truncated_normal", "normal"):
        bound = 2 * math.sqrt(variance) / 0.87962566103423978
        assert np.abs(values).max() <= bound * (1 + 1e-6)


def _seeded_values(graph_seed, op_seed, sessions=1):
    with gf.Graph().as_default():
        if graph_seed is not None:
            gf.set_random_seed(graph_seed)
        v = gf.get_variable("v", [4, 5], initializer=gf.glorot_uniform_initializer(op_seed))
        t = gf.random_normal_initializer(seed=op_seed)([3])
        out = []
        for _ in range(sessions):
            with gf.Session() as session:
                session.run(v.initializer)
                out.append(np.concatenate([session.run(v).ravel(), session.run(t)]))
        return out


@pytest.mark.parametrize("graph_seed, op_seed", [(5, None), (5, 9), (None, 9)])
def test_seeds_repeat_values_across_programs_and_sessions(graph_seed, op_seed):
    first = _seeded_values(graph_seed, op_seed, sessions=2)
    second = _seeded_values(graph_seed, op_seed)
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], second[0])


def test_different_seeds_differ_and_no_seed_is_fresh():
    assert not np.array_equal(_seeded_values(5, 1)[0], _seeded_values(5, 2)[0])
    assert not np.array_equal(_seeded_values(5, None)[0], _seeded_values(6, None)[0])
    fresh = _seeded_values(None, None, sessions=2)
    assert not np.array_equal(fresh[0], fresh[1])


@pytest.mark.parametrize("init", [
    gf.random_normal_initializer(), gf.truncated_normal_initializer(),
    gf.random_uniform_initializer(), gf.glorot_uniform_initializer(),
    gf.variance_scaling_initializer(), gf.orthogonal_initializer(),
    gf.initializers.identity(), gf.zeros_initializer(), gf.ones_initializer(),
    gf.constant_initializer(2.0), gf.uniform_unit_scaling_initializer()],
    ids=lambda init: type(init).__name__)
def test_call_dtype_overrides_constructor_dtype(init):
    with gf.Graph().as_default():
        assert init([3, 3]).dtype == gf.float32
        assert init([3, 3], dtype=gf.float64).dtype == gf.float64
        assert init([3, 3], gf.float64, None).dtype == gf.float64


def test_default_initializer_of_get_variable():
    with gf.Graph().as_default():
        gf.set_random_seed(3)
        w = gf.get_variable("w", [200, 300])
        n = gf.get_variable("n", [3], dtype=gf.int64)
        flag = gf.get_variable("flag", [2], dtype=gf.bool)
        assert "w/Initializer/random_uniform/RandomUniform" in [
            op.name for op in gf.get_default_graph().get_operations()]
        with gf.Session() as session:
            session.run(gf.global_variables_initializer())
            w_value, n_value, flag_value = session.run([w, n, flag])
    limit = math.sqrt(6.0 / 500)
    assert np.abs(w_value).max() <= limit and w_value.std() == pytest.approx(
        limit / math.sqrt(3), rel=0.03)
    assert n_value.tolist() == [0, 0, 0] and flag_value.tolist() == [False, False]
