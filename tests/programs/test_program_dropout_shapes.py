"""``tf.nn.dropout`` with a fed ``keep_prob`` (the Deep MNIST pattern) keeps x's shape."""
import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf


def test_dropout_with_a_fed_keep_prob_keeps_the_static_shape():
    with gf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 32])
        keep_prob = tf.placeholder(tf.float32)  # unknown shape, as TF1 tutorials wrote it
        dropped = tf.nn.dropout(x, keep_prob)
        assert dropped.shape.as_list() == [None, 32]
        # the next layer's static shapes follow (TF: (?, 10))
        logits = tf.matmul(dropped, tf.ones([32, 10]))
        assert logits.shape.as_list() == [None, 10]
        data = np.arange(64, dtype=np.float32).reshape(2, 32)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(dropped, {x: data, keep_prob: 1.0}), data)
            halved = sess.run(dropped, {x: data, keep_prob: 0.5})
        assert set(np.unique(halved / np.maximum(data, 1))) <= {0.0, 2.0}


def test_dropout_rate_tensor_must_be_a_scalar():
    with gf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 4])
        rate = tf.placeholder(tf.float32, [2])
        before = [op.name for op in g.get_operations()]
        with pytest.raises(ValueError, match=r"Shape \(2,\) must have rank 0"):
            tf.nn.dropout(x, rate=rate)
        assert [op.name for op in g.get_operations()] == before
