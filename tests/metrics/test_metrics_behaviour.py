"""gf.metrics beyond the recorded streams: streaming semantics, state of failed runs,
variables and collections, atomic failure of bad calls."""
import numpy as np
import pytest

import gradflow as gf

rng = np.random.default_rng(23)


def test_value_reads_state_and_update_returns_the_new_value():
    with gf.Graph().as_default():
        values = gf.placeholder(gf.float32, [None])
        mean, update = gf.metrics.mean(values)
        with gf.Session() as session:
            session.run(gf.local_variables_initializer())
            seen = []
            for batch in ([1.0, 2.0], [6.0], [0.0, 0.0, 3.0]):
                seen.extend(batch)
                assert session.run(update, {values: batch}) == pytest.approx(np.mean(seen))
                # reading twice changes nothing
                assert session.run(mean) == session.run(mean) == pytest.approx(np.mean(seen))


def test_sessions_keep_separate_state_and_initializer_resets():
    with gf.Graph().as_default():
        labels = gf.placeholder(gf.int32, [None])
        predictions = gf.placeholder(gf.int32, [None])
        accuracy, update = gf.metrics.accuracy(labels, predictions)
        init = gf.local_variables_initializer()
        first, second = gf.Session(), gf.Session()
        for session in (first, second):
            session.run(init)
        first.run(update, {labels: [1, 2, 3], predictions: [1, 2, 0]})
        second.run(update, {labels: [1, 2], predictions: [0, 0]})
        assert first.run(accuracy) == pytest.approx(2 / 3)
        assert second.run(accuracy) == 0.0
        first.run(init)
        assert first.run(accuracy) == 0.0
        first.run(update, {labels: [5], predictions: [5]})
        assert first.run(accuracy) == 1.0


def test_metric_variables_are_local_and_not_trainable():
    with gf.Graph().as_default() as graph:
        scores = gf.placeholder(gf.float32, [None])
        labels = gf.placeholder(gf.bool, [None])
        gf.metrics.auc(labels, scores, num_thresholds=5)
        gf.metrics.precision_at_k(gf.placeholder(gf.int64, [None]),
                                  gf.placeholder(gf.float32, [None, 4]), k=2)
        local = graph.get_collection(gf.GraphKeys.LOCAL_VARIABLES)
        assert local and local == graph.get_collection(gf.GraphKeys.METRIC_VARIABLES)
        assert gf.global_variables() == [] and gf.trainable_variables() == []
        assert all(not v.trainable for v in local)
        assert [v.shape.as_list() for v in local] == [[5]] * 4 + [[], []]


def test_failed_update_run_leaves_the_state_unchanged():
    """A class id outside [0, num_classes) fails the run, as in TF, and the confusion
    matrix keeps what earlier batches added."""
    with gf.Graph().as_default():
        labels = gf.placeholder(gf.int64, [None])
        predictions = gf.placeholder(gf.int64, [None])
        miou, update = gf.metrics.mean_iou(labels, predictions, num_classes=3)
        with gf.Session() as session:
            session.run(gf.local_variables_initializer())
            session.run(update, {labels: [0, 1, 2], predictions: [0, 1, 1]})
            before = session.run(miou)
            with pytest.raises(gf.errors.InvalidArgumentError):
                session.run(update, {labels: [0, 3], predictions: [0, 0]})
            assert session.run(miou) == before
            # (1/1 + 1/2 + 0/1) / 3 classes
            assert before == pytest.approx(0.5)


def test_update_runs_beside_a_training_step():
    with gf.Graph().as_default():
        x = gf.constant(rng.standard_normal((8, 3)), dtype=gf.float32)
        y = gf.constant(rng.standard_normal((8, 1)), dtype=gf.float32)
        w = gf.Variable(np.zeros((3, 1), np.float32))
        prediction = gf.matmul(x, w)
        loss = gf.losses.mean_squared_error(y, prediction)
        rmse, rmse_update = gf.metrics.root_mean_squared_error(y, prediction)
        step = gf.group(gf.train.GradientDescentOptimizer(0.1).minimize(loss), rmse_update)
        with gf.Session() as session:
            session.run([gf.global_variables_initializer(),
                         gf.local_variables_initializer()])
            first_loss = session.run(loss)
            session.run(step)
            assert session.run(rmse) == pytest.approx(np.sqrt(first_loss), rel=1e-5)


def test_precision_at_k_counts_sets_per_example():
    """Top-2 of [0.1, 0.5, 0.4] is {1, 2}; labels {1, 1} form the set {1}."""
    with gf.Graph().as_default():
        scores = gf.constant([[0.1, 0.5, 0.4], [0.9, 0.05, 0.05]])
        labels = gf.constant([[1, 1], [2, 0]], dtype=gf.int64)
        precision, p_update = gf.metrics.precision_at_k(labels, scores, k=2)
        recall, r_update = gf.metrics.recall_at_k(labels, scores, k=2)
        with gf.Session() as session:
            session.run(gf.local_variables_initializer())
            assert np.isnan(session.run(precision))
            # tp = 1 + 1, fp = 1 + 1, fn = 0 + 1
            assert session.run([p_update, r_update]) == pytest.approx([0.5, 2 / 3])


# Each entry makes its inputs, then returns the metric and its arguments.
BAD_CALLS = {
    "auc_curve": lambda f, b: (gf.metrics.auc, dict(labels=b, predictions=f, curve="XY")),
    "auc_summation": lambda f, b: (gf.metrics.auc, dict(labels=b, predictions=f,
                                                        summation_method="left")),
    "weights_shape": lambda f, b: (gf.metrics.mean, dict(values=f, weights=gf.ones([2, 3]))),
    "accuracy_shape": lambda f, b: (gf.metrics.accuracy,
                                    dict(labels=b, predictions=gf.ones([3], dtype=gf.bool))),
    "count_weights_rank": lambda f, b: (gf.metrics.true_positives,
                                        dict(labels=b, predictions=b,
                                             weights=gf.ones([4, 1, 1]))),
    "mean_tensor_unknown": lambda f, b: (gf.metrics.mean_tensor,
                                         dict(values=gf.placeholder(gf.float32, [None]))),
    "specificity": lambda f, b: (gf.metrics.sensitivity_at_specificity,
                                 dict(labels=b, predictions=f, specificity=2.0)),
    "precision_at_k_weights": lambda f, b: (gf.metrics.precision_at_k,
                                            dict(labels=gf.ones([4], dtype=gf.int64),
                                                 predictions=gf.ones([4, 5]), k=2,
                                                 weights=gf.ones([3]))),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_failed_call_leaves_graph_unchanged(name):
    with gf.Graph().as_default() as graph:
        scores = gf.constant(rng.uniform(size=4), dtype=gf.float32)
        flags = gf.constant([True, False, True, True])
        gf.metrics.accuracy(flags, flags)
        metric, arguments = BAD_CALLS[name](scores, flags)
        before = [op.name for op in graph.get_operations()]
        collections = {key: list(graph.get_collection(key))
                       for key in graph.get_all_collection_keys()}
        with pytest.raises(ValueError):
            metric(**arguments)
        assert [op.name for op in graph.get_operations()] == before
        assert {key: list(graph.get_collection(key))
                for key in graph.get_all_collection_keys()} == collections
        assert gf.metrics.accuracy(flags, flags)[0].name == "accuracy_1/value:0"
