"""Grouped optimizer updates (runtime/optimizer.py): the small updates of one rule run as
one pass over flat buffers, with the same bits as the ops one by one, never
overwriting a value someone holds, and reporting a failing member by its own name."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.framework import errors
from gradflow.runtime import executor

OPTIMIZERS = {
    "sgd": lambda: gf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: gf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: gf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "adam": lambda: gf.train.AdamOptimizer(0.01),
    "adadelta": lambda: gf.train.AdadeltaOptimizer(1.0),
    "ftrl": lambda: gf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
    "proximal_adagrad": lambda: gf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.01),
}


def _model(optimizer, dtype=np.float32, sizes=(5, 4, 3)):
    rng = np.random.default_rng(0)
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(dtype, [6, sizes[0]])
        h, params = x, []
        for fan_in, fan_out in zip(sizes, sizes[1:]):
            w = gf.Variable(rng.standard_normal((fan_in, fan_out)).astype(dtype))
            b = gf.Variable(np.full(fan_out, 0.1, dtype))
            h = gf.tanh(gf.matmul(h, w) + b)
            params += [w, b]
        loss = gf.reduce_sum(gf.square(h))
        train = optimizer().minimize(loss)
        init = gf.global_variables_initializer()
    feed = {x: rng.standard_normal((6, sizes[0])).astype(dtype)}
    return graph, init, train, params, feed


def _trained(optimizer, dtype, optimize: bool, steps: int = 4):
    was = executor.optimizations_enabled()
    executor.set_optimizations(optimize)
    try:
        graph, init, train, params, feed = _model(optimizer, dtype)
        with gf.Session(graph=graph) as sess:
            sess.run(init)
            for _ in range(steps):
                sess.run(train, feed)
            plan = list(sess._plans.values())[-1]
            return sess.run(params), plan
    finally:
        executor.set_optimizations(was)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_grouped_updates_match_the_ops_one_by_one_bitwise(name, dtype):
    grouped, plan = _trained(OPTIMIZERS[name], dtype, True)
    alone, _ = _trained(OPTIMIZERS[name], dtype, False)
    fused = [s for s in plan.steps if isinstance(s, executor.ClusterStep) and s.fused]
    assert len(fused) == 1 and len(fused[0].cluster_ops) == 4
    assert plan.clusters == ()  # not a compiled cluster
    for a, b in zip(grouped, alone, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_grouped_update_never_overwrites_a_value_someone_holds():
    graph, init, train, params, feed = _model(OPTIMIZERS["adam"])
    with graph.as_default():
        reads = [p.value() for p in params]
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        held = []
        for _ in range(5):
            sess.run(train, feed)
            held.append(sess.run(reads))
        copies = [[a.copy() for a in step] for step in held]
        for _ in range(3):
            sess.run(train, feed)
        for step, copy in zip(held, copies, strict=True):
            for a, b in zip(step, copy, strict=True):
                np.testing.assert_array_equal(a, b)


def test_value_assigned_between_steps_is_used():
    graph, init, train, params, feed = _model(OPTIMIZERS["sgd"])
    with graph.as_default():
        reset = params[0].assign(np.zeros((5, 4), np.float32))
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, feed)
        sess.run(reset)
        before = sess.run(params)
        assert not before[0].any()
        sess.run(train, feed)
        after = sess.run(params)
    executor.set_optimizations(False)
    try:
        graph2, init2, train2, params2, feed2 = _model(OPTIMIZERS["sgd"])
        with gf.Session(graph=graph2) as sess:
            sess.run(init2)
            for p, v in zip(params2, before, strict=True):
                p.load(v, sess)
            sess.run(train2, {next(iter(feed2)): next(iter(feed.values()))})
            want = sess.run(params2)
    finally:
        executor.set_optimizations(True)
    for a, b in zip(after, want, strict=True):
        assert a.tobytes() == b.tobytes()


def test_failing_member_is_named_and_nothing_changes():
    graph, init, train, params, feed = _model(OPTIMIZERS["adam"])
    with graph.as_default():
        slots = [v for v in gf.global_variables() if v not in params]
        partial = gf.variables_initializer(params + [s for s in slots if "Variable_2" not in
                                                     s.op.name])
    with gf.Session(graph=graph) as sess:
        sess.run(partial)
        before = sess.run(params)
        with pytest.raises(errors.FailedPreconditionError) as raised:
            sess.run(train, feed)
        assert "Variable_2/Adam" in str(raised.value)
        assert "update_Variable_2/ApplyAdam" in raised.value.op.name
        for a, b in zip(sess.run(params), before, strict=True):
            np.testing.assert_array_equal(a, b)


def test_grouped_variables_alternate_between_two_banks():
    graph, init, train, params, feed = _model(OPTIMIZERS["adam"])
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        bases = []
        for _ in range(6):
            sess.run(train, feed)
            store = sess.variable_store()
            bases.append({id(store[p.op.name].base) for p in params})
        assert all(len(b) == 1 for b in bases)  # every variable a view of one buffer
        assert bases[2] == bases[4] != bases[3] == bases[5]
