"""A compiled-cluster run's dispatch: the one-cluster plan's direct run, variables left on
the device between runs, and index checks of fed values made on the host."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gradflow as gf
from gradflow.runtime.clusters import DeviceValue
from xla_helpers import jit_config

pytest.importorskip("jax")


def _train_graph():
    """A softmax regression step fed (x, labels); returns the graph and its parts."""
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [4, 3], name="x")
        labels = gf.placeholder(gf.int32, [4], name="labels")
        w = gf.Variable(np.linspace(-1, 1, 15).reshape(3, 5).astype(np.float32), name="w")
        b = gf.Variable(np.zeros(5, np.float32), name="b")
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=gf.matmul(x, w) + b))
        train = gf.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, x, labels, w, b, loss, train, init


X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
LABELS = np.array([0, 4, 2, 1], np.int32)


def _steps(config, runs: int = 3):
    """The variables after ``runs`` unfetched training steps, read back three ways."""
    graph, x, labels, w, b, _, train, init = _train_graph()
    with gf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(runs):
            assert sess.run(train, {x: X, labels: LABELS}) is None
        fetched = sess.run([w, b])
        evaluated = [w.eval(session=sess), b.eval(session=sess)]
        read = sess.run([w.read_value(), b.read_value()])
    return fetched, evaluated, read


def test_variables_left_on_the_device_read_back_as_the_numpy_backend_computes_them():
    numpy_backend = _steps(None)
    compiled = _steps(jit_config())
    for want_reads, got_reads in zip(numpy_backend, compiled, strict=True):
        for want, got in zip(want_reads, got_reads, strict=True):
            assert type(got) is np.ndarray and got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_compiled_step_leaves_its_variables_on_the_device_and_fetches_copies():
    graph, x, labels, w, _, _, train, init = _train_graph()
    with gf.Session(graph=graph, config=jit_config()) as sess:
        sess.run(init)
        sess.run(train, {x: X, labels: LABELS})
        assert type(sess._variables["w"]) is DeviceValue  # not copied back to NumPy
        stored = sess.variable_store()["w"]  # the store as NumPy, for inspection
        first = sess.run(w)
        assert type(stored) is np.ndarray and np.array_equal(stored, first)
        first[0, 0] = 100.0  # a fetched value is the caller's: the variable is unchanged
        assert sess.run(w)[0, 0] != 100.0
        plan = next(p for p in sess._plans.values() if p.direct is not None)
        assert len(plan.steps) == 1


def test_a_fed_label_out_of_range_raises_the_kernels_error_and_changes_nothing():
    results = {}
    for name, config in (("numpy", None), ("xla", jit_config())):
        graph, x, labels, w, b, loss, train, init = _train_graph()
        with gf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            sess.run(train, {x: X, labels: LABELS})
            before = sess.run([w, b])
            for bad in ([0, 5, 1, 1], [0, -1, 1, 1]):
                with pytest.raises(gf.errors.InvalidArgumentError) as caught:
                    sess.run(train, {x: X, labels: np.array(bad, np.int32)})
                results.setdefault(name, []).append(caught.value.message.split("\n")[0])
                for got, want in zip(sess.run([w, b]), before, strict=True):
                    np.testing.assert_array_equal(got, want)
            # and the session goes on: the next good step updates the variables
            sess.run(train, {x: X, labels: LABELS})
            assert not np.array_equal(sess.run(w), before[0])
            assert np.isfinite(sess.run(loss, {x: X, labels: LABELS}))
    assert results["xla"] == results["numpy"]
    assert "5" in results["xla"][0] and "-1" in results["xla"][1]


@pytest.mark.parametrize("indices", [[0, 3], [-1, 0]], ids=["past_the_end", "negative"])
def test_fed_gather_indices_out_of_range_raise_in_the_run_that_reads_them(indices):
    graph = gf.Graph()
    with graph.as_default():
        ids = gf.placeholder(gf.int32, [2])
        table = gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        picked = gf.gather(table * 2.0, ids)
        bump = table.assign_add(gf.ones_like(table))
        with gf.control_dependencies([bump]):
            total = gf.reduce_sum(picked) + 0.0
    with gf.Session(graph=graph, config=jit_config()) as sess:
        sess.run(table.initializer)
        assert sess.run(total, {ids: [2, 0]}) == pytest.approx(2 * (4 + 5 + 0 + 1))
        before = sess.run(table)
        with pytest.raises(gf.errors.InvalidArgumentError, match="not in \\[0, 3\\)"):
            sess.run(total, {ids: indices})
        np.testing.assert_array_equal(sess.run(table), before)


def test_numpy_ops_and_the_saver_read_what_a_compiled_run_left(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.ones((2, 2), np.float32), name="v")
        with gf.xla.experimental.jit_scope():  # compiled: the update and its product
            step = v.assign(gf.matmul(v, v) * 0.5 + 1.0)
        on_numpy = gf.reduce_sum(v * 3.0)  # not in a scope: NumPy kernels
        saver = gf.train.Saver([v])
    with gf.Session(graph=graph) as sess:
        sess.run(v.initializer)
        sess.run(step.op)
        sess.run(step.op)
        expected = np.ones((2, 2), np.float32)
        for _ in range(2):
            expected = expected @ expected * 0.5 + 1.0
        assert sess.run(on_numpy) == pytest.approx(3.0 * expected.sum())
        path = saver.save(sess, os.path.join(tmp_path, "model"))
        v.load(np.zeros((2, 2), np.float32), sess)
        assert sess.run(on_numpy) == 0.0
        saver.restore(sess, path)
        np.testing.assert_allclose(sess.run(v), expected)


def test_a_traced_run_of_a_one_cluster_plan_still_reports_the_cluster():
    graph, x, labels, _, _, loss, train, init = _train_graph()
    with gf.Session(graph=graph, config=jit_config()) as sess:
        sess.run(init)
        metadata = gf.RunMetadata()
        options = gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE)
        value, _ = sess.run([loss, train], {x: X, labels: LABELS}, options=options,
                            run_metadata=metadata)
        assert np.isfinite(value)
        names = {node.node_name for dev in metadata.step_stats.dev_stats
                 for node in dev.node_stats}
        assert any("ApplyGradientDescent" in name for name in names)


def _scale_then_adam(compiled: bool) -> list:
    """Variables rescaled by a (compiled or NumPy) assign, then updated by Adam on NumPy."""
    graph = gf.Graph()
    with graph.as_default():
        a = gf.Variable(np.ones((3, 2), np.float32))
        b = gf.Variable(np.full(2, 0.5, np.float32))

        def rescale():
            return gf.group(a.assign(a * 1.5 + 0.25), b.assign(b * 2.0 - 0.125))

        if compiled:
            with gf.xla.experimental.jit_scope():
                scale = rescale()
        else:
            scale = rescale()
        loss = gf.reduce_sum(gf.square(gf.matmul(gf.ones((1, 3)), a) + b))
        train = gf.train.AdamOptimizer(0.1).minimize(loss)
        init = gf.global_variables_initializer()
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(scale)
            if compiled:
                assert any(type(v) is DeviceValue for v in sess._variables.values())
            sess.run(train)
        return sess.run([a, b])


def test_a_numpy_optimizer_updates_variables_a_compiled_run_left_on_the_device():
    for got, want in zip(_scale_then_adam(True), _scale_then_adam(False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
