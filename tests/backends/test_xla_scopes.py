"""jit_scope and compile mark what compiles; clusters keep runs atomic and logged."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.runtime.executor import compile_plan
from xla_helpers import jit_config

pytest.importorskip("jax")


def _clusters(graph, fetches, feeds, targets=(), global_jit=False):
    plan = compile_plan(graph, fetches, feeds, list(targets), global_jit=global_jit)
    return [set(cluster) for cluster in plan.clusters]


def test_jit_scope_compiles_only_the_scoped_ops():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [3])
        with gf.xla.experimental.jit_scope():
            a = gf.tanh(x, name="a")
            b = gf.multiply(a, 2.0, name="b")
        c = gf.sin(b, name="c") + 1.0
        assert _clusters(graph, [c], [x]) == [{"a", "b"}]
        with gf.Session(graph=graph) as sess:
            np.testing.assert_allclose(sess.run(c, {x: [0.0, 0.5, 1.0]}),
                                       np.sin(2 * np.tanh([0.0, 0.5, 1.0])) + 1, rtol=1e-12)


def test_contrib_alias_is_the_same_scope():
    assert gf.contrib.compiler.jit.experimental_jit_scope is gf.xla.experimental.jit_scope


def test_gradients_join_the_scope_or_compile_apart():
    for separate in (False, True):
        graph = gf.Graph()
        with graph.as_default():
            x = gf.placeholder(gf.float64, [3])
            with gf.xla.experimental.jit_scope(separate_compiled_gradients=separate):
                y = gf.reduce_sum(gf.tanh(x) * gf.exp(x))
            (g,) = gf.gradients(y, x)
            clusters = _clusters(graph, [y, g], [x])
            forward = {op.name for op in graph.get_operations() if op.name.startswith(
                ("Tanh", "Exp", "mul", "Sum"))}
            if separate:
                assert len(clusters) == 2
                assert any(c <= forward for c in clusters)
                assert any(c.isdisjoint(forward) and any("gradients" in n for n in c)
                           for c in clusters)
            else:
                assert len(clusters) == 1 and any("gradients" in n for n in clusters[0])
            with gf.Session(graph=graph) as sess:
                value = np.array([0.1, -0.4, 0.8])
                np.testing.assert_allclose(
                    sess.run(g, {x: value}),
                    (1 - np.tanh(value) ** 2) * np.exp(value) + np.tanh(value) * np.exp(value),
                    rtol=1e-12)


def test_compile_returns_tf1_structures_and_compiles_the_computation():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [2])
        (out,) = gf.xla.experimental.compile(lambda a: gf.tanh(a) * 3.0, [x])
        pair = gf.xla.experimental.compile(lambda a: (a * 2.0, a + 1.0), [x])
        keyed = gf.xla.experimental.compile(lambda a: {"k": gf.exp(a)}, [x])
        nothing = gf.xla.experimental.compile(lambda: None)
        assert out.op.name == "output_0" and isinstance(pair, list) and len(pair) == 2
        assert set(keyed) == {"k"} and nothing.type == "NoOp"
        # the output identities are aliases in a plan: the computation's ops compile
        assert _clusters(graph, [out], [x]) == [{"Tanh", "mul"}]
        with gf.Session(graph=graph) as sess:
            got = sess.run([out, pair, keyed], {x: [0.5, 1.0]})
        np.testing.assert_allclose(got[0], np.tanh([0.5, 1.0]) * 3)
        np.testing.assert_allclose(got[1][1], [1.5, 2.0])
        np.testing.assert_allclose(got[2]["k"], np.exp([0.5, 1.0]))


def test_compile_rejects_bad_inputs_and_leaves_the_graph_as_it_was():
    graph = gf.Graph()
    with graph.as_default():
        gf.placeholder(gf.float64, [2])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(TypeError, match="inputs must be a list"):
            gf.xla.experimental.compile(lambda a: a, 3)

        def half_built():
            gf.constant(1.0) * 2.0
            raise ValueError("computation failed")
        with pytest.raises(ValueError, match="computation failed"):
            gf.xla.experimental.compile(half_built)
        assert [op.name for op in graph.get_operations()] == before


def test_log_device_placement_names_the_xla_device(capfd):
    config = jit_config()
    config.log_device_placement = True
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [2])
        y = gf.tanh(x, name="t") * 2.0
        with gf.Session(graph=graph, config=config) as sess:
            sess.run(y, {x: [1.0, 2.0]})
    err = capfd.readouterr().err
    assert "t: (Tanh): /job:localhost/replica:0/task:0/device:XLA_CPU:0" in err
    assert "(Const): /job:localhost/replica:0/task:0/device:CPU:0" in err  # folded: NumPy


def test_a_failed_run_changes_no_variable_written_by_a_cluster():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.zeros(2), name="v")
        x = gf.placeholder(gf.float64, [2])
        update = gf.assign_add(v, gf.tanh(x) + 1.0)
        with gf.control_dependencies([update]):
            checked = gf.debugging.check_numerics(x * 2.0, "bad x")
        with gf.Session(graph=graph, config=jit_config()) as sess:
            sess.run(v.initializer)
            with pytest.raises(gf.errors.InvalidArgumentError, match="bad x"):
                sess.run(checked, {x: [np.nan, 0.0]})
            np.testing.assert_array_equal(sess.run(v), [0.0, 0.0])
            sess.run(checked, {x: [0.0, 0.0]})
            np.testing.assert_array_equal(sess.run(v), [1.0, 1.0])


def test_reading_an_uninitialized_variable_in_a_cluster_names_it():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.ones(2), name="never_set")
        y = gf.tanh(v.read_value()) * 2.0
        with gf.Session(graph=graph, config=jit_config()) as sess:
            with pytest.raises(gf.errors.FailedPreconditionError, match="never_set"):
                sess.run(y)


def test_random_ops_in_clusters_follow_their_seeds():
    def draws(seed):
        graph = gf.Graph()
        with graph.as_default():
            u = gf.random_uniform([4000], seed=seed, dtype=gf.float64) * 2.0
            with gf.Session(graph=graph, config=jit_config()) as sess:
                assert _clusters(graph, [u], [], global_jit=True)
                return sess.run(u), sess.run(u)
    first, second = draws(5)
    again, _ = draws(5)
    np.testing.assert_array_equal(first, again)   # same seed, same stream
    assert not np.array_equal(first, second)      # each run draws anew
    assert 0.0 <= first.min() and first.max() < 2.0
    assert abs(first.mean() - 1.0) < 0.05 and abs(first.std() - 2 / np.sqrt(12)) < 0.05


def test_ops_without_lowering_stay_on_numpy():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [3, 3])
        y = gf.nn.top_k(gf.tanh(x) * 2.0 + 3.0, k=2).values
        names = set().union(*_clusters(graph, [y], [x], global_jit=True))
        assert names and all(graph.get_operation_by_name(n).type != "TopKV2" for n in names)
        value = np.arange(9.0).reshape(3, 3) / 10
        with gf.Session(graph=graph, config=jit_config()) as sess:
            np.testing.assert_allclose(sess.run(y, {x: value}),
                                       np.sort(np.tanh(value) * 2 + 3)[:, ::-1][:, :2])


def test_kernel_checks_still_raise_inside_clusters():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.zeros(3), name="v")
        logits = gf.placeholder(gf.float64, [2, 3])
        labels = gf.placeholder(gf.int32, [2])
        loss = gf.reduce_sum(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=gf.tanh(logits), name="xent"))
        update = gf.assign_add(v, gf.fill([3], loss))
        picked = gf.gather(gf.exp(logits), labels, name="picked")
        with gf.Session(graph=graph, config=jit_config()) as sess:
            sess.run(v.initializer)
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match=r"label value of 7 .*\n.*node xent"):
                sess.run(update, {logits: np.ones((2, 3)), labels: [0, 7]})
            np.testing.assert_array_equal(sess.run(v), np.zeros(3))
            with pytest.raises(gf.errors.InvalidArgumentError, match=r"indices\[1\] = -1"):
                sess.run(picked, {logits: np.ones((2, 3)), labels: [0, -1]})
            sess.run(update, {logits: np.ones((2, 3)), labels: [0, 2]})
            assert sess.run(v)[0] > 0


def test_scalar_results_are_numpy_scalars_as_on_numpy():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [3])
        total = gf.reduce_sum(gf.tanh(x) * 2.0)
        with gf.Session(graph=graph, config=jit_config()) as sess:
            value = sess.run(total, {x: [1.0, 2.0, 3.0]})
    assert isinstance(value, np.float32)


def test_a_traced_run_reports_every_op_of_a_cluster():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [3])
        y = gf.tanh(x, name="t") * 2.0
        metadata = gf.RunMetadata()
        with gf.Session(graph=graph, config=jit_config()) as sess:
            sess.run(y, {x: [1.0, 2.0, 3.0]}, run_metadata=metadata,
                     options=gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE))
    names = {n.node_name for n in metadata.step_stats.dev_stats[0].node_stats}
    assert {"t", "mul"} <= names
