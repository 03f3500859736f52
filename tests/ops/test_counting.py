"""``confusion_matrix`` and ``bincount`` against TF 2.21 (fixture ``make_counting.py``):
results, names, dtypes, static shapes and errors."""
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf
from tf_fixtures import load_json

RECORDED = load_json("counting")


def test_counting_matches_tensorflow():
    with gf.Graph().as_default():
        labels, predictions = tf.constant([1, 2, 4, 2]), tf.constant([2, 2, 4, 0])
        fed = tf.placeholder(tf.int64, [None])
        arr = tf.placeholder(tf.int32, [None])
        results = {
            "cm": tf.confusion_matrix(labels, predictions),
            "cm_weighted": tf.confusion_matrix(labels, predictions, num_classes=6,
                                               weights=tf.constant([1., 2., 3., 4.]),
                                               dtype=tf.float32),
            "cm_fed": tf.confusion_matrix(fed, fed, num_classes=3),
            "cm_fed_open": tf.math.confusion_matrix(fed, fed),
            "bc": tf.bincount(tf.constant([1, 1, 3, 0])),
            "bc_weighted": tf.bincount(tf.constant([[1, 5], [1, 0]]),
                                       weights=tf.constant([[0.5, 1.], [2., 3.]]), minlength=8,
                                       maxlength=6),
            "bc_fed": tf.bincount(arr, dtype=tf.float64, minlength=4),
            "bc_empty": tf.bincount(tf.constant([], tf.int32)),
        }
        with tf.Session() as sess:
            values = sess.run(results, {fed: [0, 2, 2], arr: [2, 2, 1]})
    for key, tensor in results.items():
        assert [values[key].tolist(), tensor.name, tensor.dtype.name,
                tensor.shape.as_list() if tensor.shape.ndims is not None else None] == \
            RECORDED["results"][key], key


def test_counting_errors_match_tensorflow():
    got = []
    with gf.Graph().as_default():
        for make in (lambda: tf.confusion_matrix([1, -1], [0, 1]),
                     lambda: tf.confusion_matrix([1, 5], [0, 1], num_classes=3),
                     lambda: tf.bincount(tf.constant([-1, 2])),
                     lambda: tf.confusion_matrix([1, 2], [1, 2, 3])):
            with pytest.raises((ValueError, gf.errors.InvalidArgumentError)) as info:
                with tf.Session() as sess:
                    sess.run(make())
            error = info.value
            text = error.message if hasattr(error, "message") else str(error)
            first = [line for line in text.splitlines() if line][0]
            if first.startswith("assertion failed: ["):
                # a run-time assertion: its message is the first bracketed item
                first = first[len("assertion failed: ["):].split("] [")[0]
            got.append([type(error).__name__, first.rstrip(" .")])
    assert got == [[kind, line.rstrip(" .")] for kind, line in RECORDED["errors"]]
