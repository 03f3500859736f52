"""The blocked, in-place optimizer update rules against the plain NumPy formulas they
replaced: the same bits in float32 and float64, written into the given buffers, and no
parameter-sized temporaries; in a session, each state array alternates between two
buffers kept across runs, never one that something else still holds."""
import os
import tracemalloc

import numpy as np
import pytest

import gradflow as gf
from gradflow.train.training_ops import _UPDATE_BLOCK, UPDATE_RULES


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
    if name in _FORMULAS:
        return _FORMULAS[name](var, *slots, grad, h)
    m, v = slots
    alpha = h["learning_rate"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])
    m = m + (grad - m) * (1 - h["beta1"])
    v = v + (grad * grad - v) * (1 - h["beta2"])
    return var - m * alpha / (np.sqrt(v) + h["epsilon"]), m, v


def _shrink(value, threshold):
    return np.sign(value) * np.maximum(np.abs(value) - threshold, 0)


def _proximal(prox, step, h):
    if h["l1"] > 0:
        prox = _shrink(prox, step * h["l1"])
    return prox / (1 + step * h["l2"])


def _adadelta(var, accum, accum_update, grad, h):
    accum = accum * h["rho"] + grad * grad * (1 - h["rho"])
    update = np.sqrt(accum_update + h["epsilon"]) / np.sqrt(accum + h["epsilon"]) * grad
    accum_update = accum_update * h["rho"] + update * update * (1 - h["rho"])
    return var - update * h["lr"], accum, accum_update


def _proximal_adagrad(var, accum, grad, h):
    accum = accum + grad * grad
    step = h["learning_rate"] / np.sqrt(accum)
    return _proximal(var - grad * step, step, h), accum


def _adagrad_da(var, ga, gsa, grad, h):
    ga, gsa = ga + grad, gsa + grad * grad
    lr, step = h["learning_rate"], h["global_step"]
    denominator = h["l2"] * step * lr + np.sqrt(gsa)
    numerator = _shrink(ga, h["l1"] * step) if h["l1"] > 0 else ga
    return -lr * numerator / denominator, ga, gsa


def _ftrl(var, accum, linear, grad, h):
    lr, power = h["learning_rate"], h["learning_rate_power"]
    shrunk = grad + 2 * h.get("l2_shrinkage", 0) * var
    new_accum = accum + grad * grad
    if power == -0.5:
        sigma = (np.sqrt(new_accum) - np.sqrt(accum)) / lr
        quadratic = np.sqrt(new_accum) / lr + 2 * h["l2"]
    else:
        sigma = (new_accum ** -power - accum ** -power) / lr
        quadratic = new_accum ** -power / lr + 2 * h["l2"]
    linear = linear + shrunk - sigma * var
    var = np.where(np.abs(linear) > h["l1"], (np.sign(linear) * h["l1"] - linear) / quadratic,
                   0)
    return var, new_accum, linear


_FORMULAS = {
    "Adadelta": _adadelta, "ProximalAdagrad": _proximal_adagrad, "AdagradDA": _adagrad_da,
    "Ftrl": _ftrl, "FtrlV2": _ftrl,
    "ProximalGradientDescent": lambda var, grad, h: (
        _proximal(var - grad * h["learning_rate"], h["learning_rate"], h),)}

HYPERS = {"learning_rate": 0.05, "momentum": 0.9, "decay": 0.9, "epsilon": 1e-7,
          "beta1_power": 0.9 ** 3, "beta2_power": 0.999 ** 3, "beta1": 0.9, "beta2": 0.999,
          "lr": 0.5, "rho": 0.95, "l1": 0.01, "l2": 0.02, "global_step": 3.0,
          "l2_shrinkage": 0.03, "learning_rate_power": -0.5}
CASES = [("GradientDescent", {}), ("Momentum", {}), ("Momentum", {"use_nesterov": True}),
         ("Adagrad", {}), ("RMSProp", {}), ("CenteredRMSProp", {}), ("Adam", {}),
         ("Adadelta", {}), ("ProximalAdagrad", {}), ("AdagradDA", {}), ("Ftrl", {}),
         ("FtrlV2", {}), ("ProximalGradientDescent", {})]
POSITIVE_SLOTS = ("accumulator", "rms", "accum", "accum_update", "gradient_squared_accumulator")


def _inputs(name, dtype, shape, seed=0, overrides=None):
    rng = np.random.default_rng(seed)
    rule = UPDATE_RULES[name]
    state = [rng.standard_normal(shape).astype(dtype)]
    for slot in rule.slots:  # accumulators that take square roots stay positive
        value = rng.standard_normal(shape)
        if slot in POSITIVE_SLOTS or (name == "Adam" and slot == "v"):
            value = np.abs(value) + 0.5
        elif slot == "mg":  # centered RMSProp: ms - mg * mg stays positive
            value = value * 0.1
        state.append(value.astype(dtype))
    hypers = {k: np.asarray({**HYPERS, **(overrides or {})}[k], dtype) for k in rule.hypers}
    return rule, state, rng.standard_normal(shape).astype(dtype), hypers


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (300, 301)])  # one block, several blocks
@pytest.mark.parametrize("name,attrs", CASES)
def test_dense_rule_matches_formula_bitwise(name, attrs, shape, dtype):
    rule, state, grad, hypers = _inputs(name, dtype, shape)
    before = [a.copy() for a in state]
    want = _reference(name, state, grad, {**hypers, **attrs})
    for out in (None, [np.full(shape, np.nan, dtype) for _ in state]):  # fresh or given
        got = rule.dense(*state, grad, out=out, **hypers, **attrs)
        if out is not None:
            assert all(g is o for g, o in zip(got, out, strict=True))
        for g, w in zip(got, want, strict=True):
            assert g.dtype == np.dtype(dtype) and g.shape == shape
            _same_bits(g, np.asarray(w, dtype))
    for a, b in zip(state, before, strict=True):  # inputs untouched
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("overrides", [{"l1": 0.0}, {"learning_rate_power": -0.7}])
@pytest.mark.parametrize("name", ["ProximalAdagrad", "AdagradDA", "Ftrl", "FtrlV2",
                                  "ProximalGradientDescent"])
def test_formula_rules_other_branches_bitwise(name, overrides):
    rule, state, grad, hypers = _inputs(name, np.float32, (300, 301), overrides=overrides)
    if not set(overrides) <= set(rule.hypers):
        pytest.skip(f"{name} has no {list(overrides)}")
    got = rule.dense(*state, grad, **hypers)
    for g, w in zip(got, _reference(name, state, grad, hypers), strict=True):
        _same_bits(g, np.asarray(w, np.float32))


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
    before = [a.copy() for a in state]
    got = rule.sparse(*state, values, rows, out=[np.empty_like(a) for a in state], **hypers,
                      **attrs)
    for g, w in zip(got, want, strict=True):
        _same_bits(g, np.asarray(w, np.float32))
    for a, b in zip(state, before, strict=True):  # inputs untouched
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["Adam", "Ftrl", "Adadelta"])
def test_rule_into_buffers_allocates_no_parameter_sized_temporary(name):
    rule, state, grad, hypers = _inputs(name, np.float32, (2000, 2000))
    out = [np.empty_like(a) for a in state]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        rule.dense(*state, grad, out=out, **hypers)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a few block-sized temporaries at most (the formula rules' expressions), a small
    # fraction of one parameter-sized array
    assert peak <= 12 * _UPDATE_BLOCK * grad.itemsize < grad.nbytes // 4


def _adam_session(shape=(300, 40)):
    graph = gf.Graph()
    with graph.as_default():
        w = gf.Variable(np.linspace(-1, 1, np.prod(shape), dtype=np.float32).reshape(shape))
        x = gf.placeholder(gf.float32, [None, shape[0]])
        loss = gf.reduce_sum(gf.square(gf.matmul(x, w)))
        train = gf.train.AdamOptimizer(0.01).minimize(loss)
        init = gf.global_variables_initializer()
    session = gf.Session(graph=graph)
    session.run(init)
    feed = {x: np.random.default_rng(0).standard_normal((5, shape[0])).astype(np.float32)}
    return session, w, train, feed


def _state_arrays(session):
    return {key: value for key, value in session.variable_store().items()
            if isinstance(value, np.ndarray) and value.ndim == 2}


@pytest.mark.skipif(os.environ.get("GRADFLOW_XLA") == "1",
                    reason="compiled updates write JAX's buffers, not the NumPy kernels' spares")
def test_session_updates_alternate_between_two_buffers():
    session, _, train, feed = _adam_session()
    seen = []
    for _ in range(5):
        session.run(train, feed)
        seen.append({key: id(a) for key, a in _state_arrays(session).items()})
    for key in seen[0]:  # from the third step on, the buffers of two steps ago come back
        assert seen[2][key] == seen[4][key] != seen[3][key]


def test_session_update_never_overwrites_a_value_someone_holds():
    session, w, train, feed = _adam_session()
    snapshot = w.value()
    held = [session.run(snapshot)]
    for _ in range(4):
        session.run(train, feed)
        held.append(session.run(snapshot))
    copies = [a.copy() for a in held]
    for _ in range(3):  # without the holds, these steps would reuse the held buffers
        session.run(train, feed)
    for a, b in zip(held, copies, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len({id(a) for a in held}) == len(held)


def test_session_update_matches_unbuffered_steps():
    session, w, train, feed = _adam_session()
    gf_values = []
    for _ in range(4):
        session.run(train, feed)
        gf_values.append(session.run(w))
    # the same steps by the rule on fresh arrays
    x = feed[next(iter(feed))]
    var = np.linspace(-1, 1, 300 * 40, dtype=np.float32).reshape(300, 40)
    m, v = np.zeros_like(var), np.zeros_like(var)
    rule = UPDATE_RULES["Adam"]
    for step in range(1, 5):
        grad = (2 * x.T @ (x @ var)).astype(np.float32)
        var, m, v = rule.dense(var, m, v, grad, beta1_power=np.float32(0.9) ** step,
                               beta2_power=np.float32(0.999) ** step,
                               learning_rate=np.float32(0.01), beta1=np.float32(0.9),
                               beta2=np.float32(0.999), epsilon=np.float32(1e-8))
        np.testing.assert_allclose(gf_values[step - 1], var, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rule_name", ["Adam", "Momentum", "Ftrl"])
def test_attrs_of_imported_graphs_leave_the_arithmetic_alone(rule_name):
    from gradflow.train.training_ops import apply_update
    graph = gf.Graph()
    with graph.as_default():
        var = gf.Variable(np.ones(3, np.float32))
        rule = UPDATE_RULES[rule_name]
        slots = [gf.Variable(np.full(3, 0.5, np.float32)) for _ in rule.slots]
        hypers = [gf.constant(np.float32(HYPERS[h])) for h in rule.hypers]
        grad = gf.constant(np.float32([0.1, -0.2, 0.3]))
        plain = apply_update(rule_name, var.ref(), [s.ref() for s in slots], hypers, grad)
        tagged = apply_update(rule_name, var.ref(), [s.ref() for s in slots], hypers, grad,
                              use_locking=True, T=gf.float32)
        init = gf.global_variables_initializer()
    with gf.Session(graph=graph) as sess:
        results = []
        for op in (plain, tagged):
            sess.run(init)
            sess.run(op)
            results.append(sess.run([var] + slots))
    for a, b in zip(*results, strict=True):
        assert a.tobytes() == b.tobytes()
