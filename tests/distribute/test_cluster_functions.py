"""A model with tf.cond, tf.while_loop and a Defun trains on a 1 ps + 1 worker Ray
cluster with the same numbers as in one process (stages carry their graph functions)."""
import itertools
import os

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import gradflow as tf  # noqa: E402
from cluster_models import FEATURES, data  # noqa: E402

pytestmark = pytest.mark.slow
_ports = itertools.count(38000 + os.getpid() % 1000 * 20)
STEPS = 4


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _model(ps_device, worker_device):
    with tf.device(ps_device):
        w = tf.Variable(np.linspace(-0.5, 0.5, FEATURES, dtype=np.float32)[:, None], name="w")
        b = tf.Variable(0.1, name="b")
        global_step = tf.train.get_or_create_global_step()
    with tf.device(worker_device):
        x = tf.placeholder(tf.float32, [None, FEATURES])
        y = tf.placeholder(tf.float32, [None, 1])

        @tf.Defun(tf.float32)
        def soft(v):
            return v / (1.0 + tf.abs(v))

        h = tf.matmul(x, w) + b
        # a cond on the data, then three refinement steps in a while_loop
        h = tf.cond(tf.reduce_mean(h) > 0, lambda: soft(h), lambda: h * 0.5)
        _, h = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v - 0.1 * (v - y)),
                             [0, h])
        loss = tf.reduce_mean(tf.square(h - y))
    with tf.device(ps_device):
        train = tf.train.GradientDescentOptimizer(0.2).minimize(loss, global_step=global_step)
    return train, [w, b], (x, y)


def _train(target, ps_device, worker_device, batches):
    graph = tf.Graph()
    with graph.as_default():
        train, params, (x, y) = _model(ps_device, worker_device)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(STEPS):
                bx, by = batches[step][0]
                sess.run(train, {x: bx, y: by})
            return sess.run(params)


def test_cond_while_loop_and_defun_train_on_a_cluster_as_in_one_process():
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{next(_ports)}"],
                                 "worker": [f"localhost:{next(_ports)}"]})
    servers = [tf.train.Server(spec, job, index) for job, index, _ in spec.tasks()]
    try:
        batches = data(STEPS, 1, seed=3)
        got = _train(servers[1].target, "/job:ps/task:0", "/job:worker/task:0", batches)
        want = _train("", None, None, batches)
    finally:
        for server in servers:
            server.stop()
    assert not np.allclose(got[0], np.linspace(-0.5, 0.5, FEATURES)[:, None])  # it trained
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
