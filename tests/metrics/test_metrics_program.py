"""A TF1-style program with losses and metrics: softmax regression on the bundled digits."""
from importlib import resources

import numpy as np

import gradflow as tf


def load_digits():
    with resources.files("gradflow").joinpath("data/digits.npz").open("rb") as f, \
            np.load(f) as data:
        return data["images"].reshape(-1, 64).astype(np.float32) / 16.0, data["labels"]


def test_training_with_losses_and_streaming_metrics():
    images, labels = load_digits()
    train_x, train_y, test_x, test_y = images[:1400], labels[:1400], images[1400:], labels[1400:]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 64])
        y = tf.placeholder(tf.int64, [None])
        w = tf.Variable(np.zeros((64, 10), np.float32), name="w")
        b = tf.Variable(np.zeros(10, np.float32), name="b")
        logits = tf.matmul(x, w) + b
        tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, 1e-4 * tf.nn.l2_loss(w))
        tf.losses.sparse_softmax_cross_entropy(y, logits)
        total = tf.losses.get_total_loss()
        step = tf.train.GradientDescentOptimizer(0.5).minimize(total)
        predictions = tf.argmax(logits, 1)
        accuracy, accuracy_update = tf.metrics.accuracy(y, predictions)
        per_class, per_class_update = tf.metrics.mean_per_class_accuracy(y, predictions, 10)
        top3, top3_update = tf.metrics.recall_at_k(y, logits, k=3)
        updates = tf.group(accuracy_update, per_class_update, top3_update)
        # the metrics' state is local: savers and global initializers leave it out
        assert [v.op.name for v in tf.global_variables()] == ["w", "b"]
        assert len(tf.local_variables()) == 6
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            first = session.run(total, {x: train_x, y: train_y})
            for start in range(0, 1400 * 8, 200):
                rows = slice(start % 1400, start % 1400 + 200)
                session.run(step, {x: train_x[rows], y: train_y[rows]})
            assert session.run(total, {x: train_x, y: train_y}) < 0.3 * first
            session.run(tf.local_variables_initializer())
            for start in range(0, len(test_x), 100):
                session.run(updates, {x: test_x[start:start + 100],
                                      y: test_y[start:start + 100]})
            streamed = session.run([accuracy, per_class, top3])
            predicted = session.run(predictions, {x: test_x})
    expected_accuracy = np.mean(predicted == test_y)
    expected_per_class = np.mean([np.mean(predicted[test_y == c] == c) for c in range(10)])
    assert streamed[0] == np.float32(expected_accuracy) and expected_accuracy > 0.85
    np.testing.assert_allclose(streamed[1], expected_per_class, rtol=1e-6)
    assert expected_accuracy <= streamed[2] <= 1.0
