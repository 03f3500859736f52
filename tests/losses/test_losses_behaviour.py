"""gf.losses beyond the recorded cases: unknown shapes, variables, collections, atomicity."""
import numpy as np
import pytest

import gradflow as gf

rng = np.random.default_rng(5)
LABELS = rng.uniform(0.0, 1.0, (5, 3)).astype(np.float32)
PREDS = rng.uniform(-1.0, 1.0, (5, 3)).astype(np.float32)
WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5], [3.0]], np.float32)


def reference_mse(labels, preds, weights):
    weighted = (preds - labels) ** 2 * weights
    present = np.broadcast_to(weights != 0, weighted.shape).sum()
    return weighted.sum() / present


def test_unknown_batch_size_with_weight_column():
    with gf.Graph().as_default():
        labels = gf.placeholder(gf.float32, [None, 3])
        preds = gf.placeholder(gf.float32, [None, 3])
        weights = gf.placeholder(gf.float32, [None, 1])
        loss = gf.losses.mean_squared_error(labels, preds, weights)
        assert loss.name == "mean_squared_error/value:0"
        with gf.Session() as session:
            for rows in (5, 2):
                value = session.run(loss, {labels: LABELS[:rows], preds: PREDS[:rows],
                                           weights: WEIGHTS[:rows]})
                np.testing.assert_allclose(
                    value, reference_mse(LABELS[:rows], PREDS[:rows], WEIGHTS[:rows]),
                    rtol=1e-6)


def test_variable_predictions_train_towards_labels():
    with gf.Graph().as_default():
        preds = gf.Variable(PREDS)
        loss = gf.losses.huber_loss(LABELS, preds)
        step = gf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with gf.Session() as session:
            session.run(gf.global_variables_initializer())
            first = session.run(loss)
            for _ in range(20):
                session.run(step)
            assert session.run(loss) < 0.5 * first


def test_every_reduction_against_numpy():
    weights = rng.uniform(0.0, 2.0, (5, 3)).astype(np.float32)
    weights[1, 2] = 0.0
    losses = np.abs(PREDS - LABELS) * weights
    expected = {
        "none": losses, "weighted_sum": losses.sum(),
        "weighted_mean": losses.sum() / weights.sum(),
        "weighted_sum_over_batch_size": losses.sum() / losses.size,
        "weighted_sum_by_nonzero_weights": losses.sum() / np.count_nonzero(weights)}
    with gf.Graph().as_default():
        for reduction, value in expected.items():
            loss = gf.losses.absolute_difference(LABELS, PREDS, weights, reduction=reduction)
            with gf.Session() as session:
                np.testing.assert_allclose(session.run(loss), value, rtol=1e-5)


def test_zero_weights_give_zero_not_nan():
    with gf.Graph().as_default():
        loss = gf.losses.log_loss(LABELS, np.clip(PREDS, 0.1, 0.9), weights=0.0)
        mean = gf.losses.compute_weighted_loss(PREDS, np.zeros((5, 1), np.float32),
                                               reduction=gf.losses.Reduction.MEAN)
        with gf.Session() as session:
            assert session.run([loss, mean]) == [0.0, 0.0]


def test_loss_collection_none_adds_nothing_and_custom_collection_is_used():
    with gf.Graph().as_default() as graph:
        gf.losses.mean_squared_error(LABELS, PREDS, loss_collection=None)
        assert graph.get_collection(gf.GraphKeys.LOSSES) == []
        loss = gf.losses.cosine_distance(LABELS, PREDS, axis=1, loss_collection="mine")
        assert graph.get_collection("mine") == [loss]
        pair = gf.losses.mean_pairwise_squared_error(LABELS, PREDS, loss_collection=None)
        assert graph.get_collection(gf.GraphKeys.LOSSES) == [] and pair.shape.ndims == 0


def test_total_loss_adds_losses_and_regularization():
    with gf.Graph().as_default():
        a = gf.losses.mean_squared_error(LABELS, PREDS)
        b = gf.losses.absolute_difference(LABELS, PREDS)
        gf.add_to_collection(gf.GraphKeys.REGULARIZATION_LOSSES, gf.constant(0.5))
        total = gf.losses.get_total_loss()
        with gf.Session() as session:
            a_value, b_value, total_value = session.run([a, b, total])
        np.testing.assert_allclose(total_value, a_value + b_value + 0.5, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda: gf.losses.mean_squared_error(LABELS, PREDS, weights=np.ones((5, 2), np.float32)),
    lambda: gf.losses.mean_squared_error(LABELS, PREDS, reduction="mean"),
    lambda: gf.losses.softmax_cross_entropy(LABELS[:, :2], PREDS),
    lambda: gf.losses.sparse_softmax_cross_entropy(np.zeros((5, 3), np.int32), PREDS),
    lambda: gf.losses.sigmoid_cross_entropy(LABELS, PREDS, weights=np.ones(5, np.float32)),
    lambda: gf.losses.cosine_distance(LABELS, PREDS),
    lambda: gf.losses.mean_pairwise_squared_error(LABELS, PREDS[:, :2]),
    lambda: gf.losses.compute_weighted_loss(PREDS, np.ones((2, 3), np.float32)),
])
def test_failed_call_leaves_graph_unchanged(call):
    with gf.Graph().as_default() as graph:
        gf.losses.mean_squared_error(LABELS, PREDS)
        before = [op.name for op in graph.get_operations()]
        collections = {key: list(graph.get_collection(key))
                       for key in graph.get_all_collection_keys()}
        with pytest.raises((ValueError, TypeError)):
            call()
        assert [op.name for op in graph.get_operations()] == before
        assert {key: list(graph.get_collection(key))
                for key in graph.get_all_collection_keys()} == collections
        # the name the failed call reserved is free again
        assert gf.losses.mean_squared_error(LABELS, PREDS).name == \
            "mean_squared_error_1/value:0"
