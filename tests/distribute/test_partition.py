"""How a cluster session splits a run into stages (no Ray needed)."""
import numpy as np
import pytest

import gradflow as tf
from gradflow.distribute.partition import partition
from gradflow.framework import errors

TASKS = {("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1)}


def _stages(part):
    return [(s.task, s.level, sorted(op.name for op in s.ops)) for s in part.stages]


def test_reads_compute_and_update_form_three_stages_in_order():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((2, 2), np.float32), name="w")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        loss = tf.reduce_sum(tf.matmul(x, w))
        grad, = tf.gradients(loss, [w])
    train = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(grad, w)])
    part = partition(tf.get_default_graph(), [loss], [train], [x], ("worker", 0), TASKS)
    # the learning rate (a constant) and the group (a NoOp) join the update's stage
    tasks = [(s.task, s.level) for s in part.stages]
    assert tasks == [(("ps", 0), 0), (("worker", 1), 1), (("ps", 0), 2)]
    read, compute, update = part.stages
    assert [op.type for op in read.ops] == ["ReadVariableOp"]
    assert update.after == [0, 1] and compute.after == [0]
    # the update runs on the variable's task although created outside any device scope
    assert any(op.type == "ApplyGradientDescent" for op in update.ops)
    assert part.writes == {("ps", 0): ("w",)}
    assert part.sink == 2 and part.first_on[("ps", 0)] == 0
    # the loss goes to the client, the gradient to the update: two bundles
    assert sorted(compute.bundles) == [1, 1]
    assert part.fetch_sources[0][:2] == ("stage", 1)
    assert compute.input_sources[0] == ("feed", 0)


def test_constants_join_the_stage_using_them():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="v")
    with tf.device("/job:worker/task:0"):
        out = v * tf.constant(2.0) + tf.constant(1.0)
    part = partition(tf.get_default_graph(), [out], [], [], ("worker", 0), TASKS)
    assert len(part.stages) == 2
    assert all(s.task == ("worker", 0) for s in part.stages[1:])


def test_fetched_variables_are_read_after_the_run_and_feeds_answered_by_the_client():
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(1.0, name="v")
    x = tf.placeholder(tf.float32, [])
    part = partition(tf.get_default_graph(), [v.op.outputs[0], x], [], [x], ("worker", 0),
                     TASKS)
    assert part.fetch_sources == [("variable", ("ps", 1), "v"), ("feed", 0)]
    assert part.stages == []


def test_resource_consumers_run_on_the_resource_task():
    with tf.device("/job:ps/task:1"):
        queue = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    size = queue.size()
    part = partition(tf.get_default_graph(), [size], [], [], ("worker", 0), TASKS)
    assert [s.task for s in part.stages] == [("ps", 1)]


def test_job_without_task_is_the_sessions_task_of_that_job():
    with tf.device("/job:worker"):
        a = tf.constant(1.0) + 1.0
    with tf.device("/job:ps"):
        b = a * 2.0
    part = partition(tf.get_default_graph(), [b], [], [], ("worker", 1), TASKS)
    assert [s.task for s in part.stages] == [("worker", 1), ("ps", 0)]


def test_unknown_task_is_refused():
    with tf.device("/job:worker/task:7"):
        bad = tf.constant(1.0) * 2.0
    with pytest.raises(errors.InvalidArgumentError,
                       match="Cannot assign a device for operation Const: Const was explicitly "
                       "assigned to /job:worker/task:7"):
        partition(tf.get_default_graph(), [bad], [], [], ("worker", 0), TASKS)


def test_stages_carry_their_graph_functions():
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
        _, z = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + y), [0, 0.0])
        dz = tf.gradients(z, x)[0]
    part = partition(tf.get_default_graph(), [z, dz], [], [x], ("worker", 0), TASKS)
    (stage,) = part.stages
    inputs, outputs, _ = stage.names
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(stage.graph_def, name="")
        with tf.Session() as sess:
            for value in (2.0, -2.0):
                got = sess.run(outputs, {inputs[0]: value})
                with tf.Session(graph=x.graph) as local:
                    want = local.run(stage.outputs, {x: value})
                np.testing.assert_allclose(got, want)


def test_stage_graphs_import_and_run_like_the_client_graph():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        y = tf.reduce_sum(tf.matmul(x, w))
    part = partition(tf.get_default_graph(), [y], [], [x], ("worker", 0), TASKS)
    compute = part.stages[-1]
    inputs, outputs, _ = compute.names
    values = {"gradflow_recv/x_0:0": np.ones((2, 2), np.float32),
              "gradflow_recv/w/read_0:0": np.arange(4, dtype=np.float32).reshape(2, 2)}
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(compute.graph_def, name="")
        with tf.Session() as sess:
            got = sess.run(graph.get_tensor_by_name(outputs[0]),
                           {graph.get_tensor_by_name(n): values[n] for n in inputs})
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert got == sess.run(y, {x: np.ones((2, 2), np.float32)})


def test_tensor_arrays_are_refused_before_anything_is_sent():
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [3, 2], name="x")
        y = tf.map_fn(lambda row: row * 2.0, x)
    ops_before = [op.name for op in tf.get_default_graph().get_operations()]
    with pytest.raises(ValueError, match=r"\(TensorArray\w*\) uses a TensorArray"):
        partition(tf.get_default_graph(), [y], [], [x], ("worker", 0), TASKS)
    assert [op.name for op in tf.get_default_graph().get_operations()] == ops_before
