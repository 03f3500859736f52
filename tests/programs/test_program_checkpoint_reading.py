"""Inspecting checkpoints as TF1 programs do: list_variables, load_variable, readers."""
import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf


def _save(directory):
    with gf.Graph().as_default():
        tf.Variable([1.0, 2.0], name="v")
        with tf.variable_scope("s"):
            tf.get_variable("w", [2, 3], dtype=tf.float64,
                            initializer=tf.constant_initializer(0.5))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, str(directory / "model.ckpt"), global_step=3)


def test_list_and_load_variables_by_directory_or_prefix(tmp_path):
    prefix = _save(tmp_path)
    # TF 2.21 gives [('s/w', [2, 3]), ('v', [2])] for both forms
    assert tf.train.list_variables(str(tmp_path)) == [("s/w", [2, 3]), ("v", [2])]
    assert tf.train.list_variables(prefix) == [("s/w", [2, 3]), ("v", [2])]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "v"), [1.0, 2.0])
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "s/w:0"), np.full((2, 3), 0.5))


def test_new_checkpoint_reader_maps_and_tensors(tmp_path):
    prefix = _save(tmp_path)
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_shape_map() == {"v": [2], "s/w": [2, 3]}
    assert reader.get_variable_to_dtype_map() == {"v": tf.float32, "s/w": tf.float64}
    assert reader.has_tensor("v") and not reader.has_tensor("u")
    assert reader.get_tensor("s/w").dtype == np.float64
    assert b"s/w (float64) [2, 3]" in reader.debug_string()
    with pytest.raises(tf.errors.NotFoundError, match="Key u not found in checkpoint"):
        reader.get_tensor("u")


def test_missing_checkpoints_raise_tf_errors(tmp_path):
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        tf.train.list_variables(str(tmp_path))
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.NewCheckpointReader(str(tmp_path / "nothing"))


def _save_old_scope(directory):
    with gf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("w", [2], initializer=tf.constant_initializer(7.0))
            tf.get_variable("b", [1], initializer=tf.constant_initializer(3.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, str(directory / "m"))


def _new_variables(second="b"):
    with tf.variable_scope("new"):
        return [tf.get_variable("w", [2], initializer=tf.zeros_initializer()),
                tf.get_variable(second, [1], initializer=tf.zeros_initializer())]


@pytest.mark.parametrize("assignment, want", [
    (lambda vs: {"old/": "new/"}, [[7.0, 7.0], [3.0]]),  # TF 2.21's values
    (lambda vs: {"old/w": "new/w"}, [[7.0, 7.0], [0.0]]),
    (lambda vs: {"old/w": vs[0]}, [[7.0, 7.0], [0.0]]),
])
def test_init_from_checkpoint_warm_starts_variables(tmp_path, assignment, want):
    _save_old_scope(tmp_path)
    with gf.Graph().as_default():
        variables = _new_variables()
        tf.train.init_from_checkpoint(str(tmp_path), assignment(variables))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(v).tolist() for v in variables] == want
