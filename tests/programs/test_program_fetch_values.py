"""What Session.run hands back, as TF1 programs expect (found running real TF1 programs)."""
import numpy as np

import gradflow as gf
import gradflow.compat.v1 as tf


def test_fetching_a_variable_gives_its_value_after_the_run():
    # TF1: `_, step = sess.run([train_op, global_step])` returns the incremented step.
    with gf.Graph().as_default():
        step = tf.Variable(0, name="step")
        increment = tf.assign_add(step, 1)
        with tf.Session() as sess:
            sess.run(step.initializer)
            assert sess.run([increment, step]) == [1, 1]
            assert sess.run({"step": step, "inc": increment}) == {"step": 2, "inc": 2}
            # the snapshot tensor keeps its before-the-updates value
            assert sess.run([increment, step.value()])[1] == 2

def test_fetching_a_reference_tensor_gives_its_value():
    with gf.Graph().as_default():
        v = tf.Variable([1.0, 2.0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            value = sess.run(v.op.outputs[0])
            np.testing.assert_array_equal(value, [1.0, 2.0])
            value[0] = 9.0  # a copy: the variable is untouched
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])

def test_fetching_an_uninitialized_variable_still_raises():
    with gf.Graph().as_default():
        v = tf.Variable(1.0, name="never_set")
        with tf.Session() as sess:
            try:
                sess.run(v)
            except tf.errors.FailedPreconditionError as err:
                assert "never_set" in str(err)
            else:
                raise AssertionError("expected FailedPreconditionError")

def test_scalar_fetches_are_numpy_scalars_and_summaries_bytes():
    # TF1 returns np.float32 for a float scalar and bytes for a serialized summary.
    with gf.Graph().as_default():
        x = tf.constant(1.5)
        summary = tf.summary.scalar("x", x)
        with tf.Session() as sess:
            value, serialized = sess.run([x, summary])
    assert type(value) is np.float32 and value == 1.5
    assert type(serialized) is bytes
    parsed = tf.Summary()
    parsed.ParseFromString(serialized)
    assert [(v.tag, v.simple_value) for v in parsed.value] == [("x", 1.5)]


def test_report_uninitialized_variables_names_are_bytes():
    # TF1 programs decode them: [name.decode() for name in sess.run(report_...())]
    with gf.Graph().as_default():
        tf.Variable(1.0, name="ready")
        tf.Variable(2.0, name="not_yet")
        report = tf.report_uninitialized_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables()[0].initializer)
            names = sess.run(report)
    assert [name.decode() for name in names] == ["not_yet"]
    assert names.dtype == object
