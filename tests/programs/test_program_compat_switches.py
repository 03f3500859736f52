"""TF2's switches back to TF1 that ported TF1 programs call first."""
import gradflow as gf
import gradflow.compat.v1 as tf


def test_tf2_switches_back_to_tf1_are_accepted():
    tf.disable_v2_behavior()
    tf.disable_eager_execution()
    tf.disable_resource_variables()
    assert tf.executing_eagerly() is False
    assert gf.compat.v1.disable_v2_behavior is tf.disable_v2_behavior
