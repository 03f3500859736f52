"""The blocked, in-place optimizer update rules against the plain NumPy formulas they
replaced: the same bits in float32 and float64, and no parameter-sized temporaries."""
import tracemalloc

import numpy as np
import pytest

from gradflow.train.training_ops import UPDATE_RULES


# The previous kernels: TF1's formulas as whole-array NumPy expressions.
def _reference(name, state, grad, hypers):
    var, *slots = state
    h = hypers
    if name == "GradientDescent":
        return (var - grad * h["learning_rate"],)
    if name == "Momentum":
        accum = slots[0] * h["momentum"] + grad
        if h.get("use_nesterov"):
            return (var - (grad * h["learning_rate"] + accum * h["momentum"] * h["learning_rate"]),
                    accum)
        return var - h["learning_rate"] * accum, accum
    if name == "Adagrad":
        accum = slots[0] + grad * grad
        return var - grad * h["learning_rate"] * (1 / np.sqrt(accum)), accum
    if name == "RMSProp":
        ms, mom = slots
        ms = ms + (grad * grad - ms) * (1 - h["decay"])
        mom = mom * h["momentum"] + grad * h["learning_rate"] / np.sqrt(ms + h["epsilon"])
        return var - mom, ms, mom
    if name == "CenteredRMSProp":
        ms, mg, mom = slots
        ms = ms + (grad * grad - ms) * (1 - h["decay"])
        mg = mg + (grad - mg) * (1 - h["decay"])
        mom = mom * h["momentum"] + grad * h["learning_rate"] / np.sqrt((ms - mg * mg)
                                                                         + h["epsilon"])
        return var - mom, ms, mg, mom
    m, v = slots
    alpha = h["learning_rate"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])
    m = m + (grad - m) * (1 - h["beta1"])
    v = v + (grad * grad - v) * (1 - h["beta2"])
    return var - m * alpha / (np.sqrt(v) + h["epsilon"]), m, v


HYPERS = {"learning_rate": 0.05, "momentum": 0.9, "decay": 0.9, "epsilon": 1e-7,
          "beta1_power": 0.9 ** 3, "beta2_power": 0.999 ** 3, "beta1": 0.9, "beta2": 0.999}
CASES = [("GradientDescent", {}), ("Momentum", {}), ("Momentum", {"use_nesterov": True}),
         ("Adagrad", {}), ("RMSProp", {}), ("CenteredRMSProp", {}), ("Adam", {})]


def _inputs(name, dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    rule = UPDATE_RULES[name]
    state = [rng.standard_normal(shape).astype(dtype)]
    for slot in rule.slots:  # accumulators that take square roots stay positive
        value = rng.standard_normal(shape)
        if slot in ("accumulator", "rms") or (name == "Adam" and slot == "v"):
            value = np.abs(value) + 0.5
        elif slot == "mg":  # centered RMSProp: ms - mg * mg stays positive
            value = value * 0.1
        state.append(value.astype(dtype))
    hypers = {k: np.asarray(HYPERS[k], dtype) for k in rule.hypers}
    return rule, state, rng.standard_normal(shape).astype(dtype), hypers


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (300, 301)])  # one block, several blocks
@pytest.mark.parametrize("name,attrs", CASES)
def test_dense_rule_matches_formula_bitwise(name, attrs, shape, dtype):
    rule, state, grad, hypers = _inputs(name, dtype, shape)
    before = [a.copy() for a in state]
    got = rule.dense(*state, grad, **hypers, **attrs)
    want = _reference(name, state, grad, {**hypers, **attrs})
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.dtype(dtype) and g.shape == shape
        np.testing.assert_array_equal(g, w)
    for a, b in zip(state, before, strict=True):  # inputs untouched
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,attrs", CASES)
def test_sparse_rule_matches_formula_on_touched_rows(name, attrs):
    rule, state, _, hypers = _inputs(name, np.float32, (6, 5))
    rows = np.array([1, 4])
    values = np.random.default_rng(1).standard_normal((2, 5)).astype(np.float32)
    want = [a.copy() for a in state]
    if name == "Adam":  # TF1's sparse Adam decays m and v everywhere
        h = hypers
        alpha = h["learning_rate"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])
        m, v = state[1] * h["beta1"], state[2] * h["beta2"]
        m[rows] += values * (1 - h["beta1"])
        v[rows] += (values * values) * (1 - h["beta2"])
        want = [state[0] - alpha * m / (np.sqrt(v) + h["epsilon"]), m, v]
    else:
        for array, new in zip(want, _reference(name, [a[rows] for a in state], values,
                                               {**hypers, **attrs}), strict=True):
            array[rows] = new
    got = rule.sparse(*[a.copy() for a in state], values, rows, **hypers, **attrs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_adam_allocates_only_its_results():
    rule, state, grad, hypers = _inputs("Adam", np.float32, (1000, 1000))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = rule.dense(*state, grad, **hypers)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    results = sum(a.nbytes for a in result)
    assert peak < results + grad.nbytes // 4  # the three results and block-sized scratch
