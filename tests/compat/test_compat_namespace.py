"""gradflow.compat.v1 is TF1's namespace: every top-level name, submodules reachable."""
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf
from gradflow.compat import v1


def test_v1_hands_on_every_public_name():
    public = {n for n in dir(gf) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(tf, n)}
    assert not missing
    assert tf is v1 and tf.compat.v1 is tf
    for name in ("Session", "placeholder", "Variable", "gradients", "global_variables_initializer"):
        assert getattr(tf, name) is getattr(gf, name)


def test_submodules_are_reachable():
    assert tf.train.GradientDescentOptimizer is gf.train.GradientDescentOptimizer
    assert tf.layers is gf.layers and tf.nn is gf.nn and tf.losses is gf.losses
    assert tf.summary.FileWriter is gf.summary.FileWriter
    assert tf.app.run is gf.app.run and tf.flags.FLAGS is gf.app.flags.FLAGS
    assert tf.logging.INFO == 20 and tf.gfile.Exists is gf.gfile.Exists
    assert tf.io.gfile.exists is gf.gfile.Exists
    assert tf.ConfigProto().__class__.__name__ == "ConfigProto"


def test_a_tf1_program_runs_through_v1():
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable([[1.0], [2.0]])
    y = tf.matmul(x, w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {x: [[1.0, 1.0]]}).tolist() == [[3.0]]


def test_names_added_to_the_package_later_are_handed_on():
    assert tf.client is gf.client
    assert "client" in dir(tf)
    with pytest.raises(AttributeError, match="gradflow.compat.v1"):
        tf.__getattr__("no_such_name_anywhere")
