"""Every optimizer's fused update, dense and sparse, compiles and gives NumPy's values."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import clustered_op_types, jit_config

pytest.importorskip("jax")

OPTIMIZERS = {
    "adadelta": (lambda: gf.train.AdadeltaOptimizer(0.5), "Adadelta"),
    "adagrad_da": (lambda gs: gf.train.AdagradDAOptimizer(0.1, gs, l1_regularization_strength=0.01,
                                                          l2_regularization_strength=0.02),
                   "AdagradDA"),
    "ftrl": (lambda: gf.train.FtrlOptimizer(0.2, l1_regularization_strength=0.01,
                                            l2_regularization_strength=0.01), "Ftrl"),
    "ftrl_v2": (lambda: gf.train.FtrlOptimizer(0.2, learning_rate_power=-0.7,
                                               l2_shrinkage_regularization_strength=0.05),
                "FtrlV2"),
    "proximal_sgd": (lambda: gf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.1),
        "ProximalGradientDescent"),
    "proximal_adagrad": (lambda: gf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.01), "ProximalAdagrad"),
    "centered_rmsprop": (lambda: gf.train.RMSPropOptimizer(0.01, momentum=0.3, centered=True),
                         "CenteredRMSProp"),
    "adam": (lambda: gf.train.AdamOptimizer(0.05), "Adam"),
    "momentum": (lambda: gf.train.MomentumOptimizer(0.1, 0.9), "Momentum"),
    "sgd": (lambda: gf.train.GradientDescentOptimizer(0.3), "GradientDescent"),
}


def _train(name: str, config):
    make, rule = OPTIMIZERS[name]
    graph = gf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(5)
        table = gf.Variable(rng.standard_normal((6, 3)), name="table")
        dense = gf.Variable(rng.standard_normal((3, 2)), name="dense")
        ids = gf.placeholder(gf.int32, [4])
        rows = gf.nn.embedding_lookup(table, ids)  # an IndexedSlices gradient: SparseApply
        loss = gf.reduce_sum(gf.tanh(gf.matmul(rows, dense)) ** 2)
        step = gf.train.get_or_create_global_step()
        optimizer = make(step) if name == "adagrad_da" else make()
        train = optimizer.minimize(loss, global_step=step)
        with gf.Session(graph=graph, config=config) as sess:
            sess.run(gf.global_variables_initializer())
            for batch in ([0, 2, 2, 5], [1, 1, 3, 0], [5, 4, 2, 2]):
                sess.run(train, {ids: batch})
            values = sess.run([table, dense])
        types = clustered_op_types(graph, [], [ids], [train]) if config else None
    return values, types, rule


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_dense_and_sparse_updates_match_numpy(name):
    want, _, _ = _train(name, None)
    got, types, rule = _train(name, jit_config())
    assert {f"Apply{rule}", f"SparseApply{rule}"} <= types
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_sparse_update_with_an_index_out_of_range_raises_and_changes_nothing():
    graph = gf.Graph()
    with graph.as_default():
        table = gf.Variable(np.ones((3, 2)), name="table")
        ids = gf.placeholder(gf.int32, [2])
        values = gf.placeholder(gf.float64, [2, 2])
        update = gf.scatter_add(table, ids, values * 2.0)
        with gf.Session(graph=graph, config=jit_config()) as sess:
            sess.run(table.initializer)
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match=r"indices\[1\] = 7 is not in \[0, 3\)"):
                sess.run(update, {ids: [0, 7], values: np.ones((2, 2))})
            np.testing.assert_array_equal(sess.run(table), np.ones((3, 2)))
            sess.run(update, {ids: [0, 0], values: np.ones((2, 2))})
            np.testing.assert_array_equal(sess.run(table)[0], [5.0, 5.0])
