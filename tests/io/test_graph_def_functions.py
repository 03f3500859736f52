"""gradflow's own function library in a GraphDef (``function_library``): cond,
while_loop and Defun bodies, with their gradients, import and run as in the source
graph; a library TF wrote is still refused."""
import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

import gradflow as tf
from gradflow.io.graph_def import full_node_def, function_library


def _exported(graph):
    library, names = function_library(graph.get_operations())
    graph_def = graph_pb2.GraphDef(node=[full_node_def(op, names)
                                         for op in graph.get_operations()])
    graph_def.library.CopyFrom(library)
    return graph_def


def _model():
    x = tf.placeholder(tf.float32, [3], name="x")

    @tf.Defun(tf.float32)
    def cube(v):
        return v * v * v

    c = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    _, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + c),
                           [0, tf.zeros([3])])
    out = tf.identity(acc + cube(x), name="out")
    grad = tf.identity(tf.gradients(tf.reduce_sum(out), x)[0], name="grad")
    return x, out, grad


@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0], [-1.0, -2.0, 0.5]])
def test_functions_round_trip_with_their_gradients(value):
    source = tf.Graph()
    with source.as_default():
        x, out, grad = _model()
        with tf.Session() as sess:
            want = sess.run([out, grad], {x: value})
    graph_def = _exported(source)
    names = [f.signature.name for f in graph_def.library.function]
    assert len(names) == len(set(names))  # same-named functions get distinct names
    imported = tf.Graph()
    with imported.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            got = sess.run(["out:0", "grad:0"], {"x:0": value})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_library_tf_wrote_is_refused_and_the_graph_kept():
    source = tf.Graph()
    with source.as_default():
        _model()
    graph_def = _exported(source)
    del graph_def.library.function[0].attr["_gradflow_body"]
    target = tf.Graph()
    with target.as_default():
        tf.constant(1.0, name="existing")
        before = [op.name for op in target.get_operations()]
        with pytest.raises(ValueError, match="importing TF's functions is not supported"):
            tf.import_graph_def(graph_def)
        assert [op.name for op in target.get_operations()] == before
