"""SyncReplicasOptimizer between-graph on a local Ray cluster (1 ps + 2 workers): after
N synchronous steps the variables equal one process applying the mean of both workers'
gradients N times."""
import itertools
import os
import threading

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import gradflow as tf  # noqa: E402
from cluster_models import FEATURES, data, loss_of, parameters, single_process  # noqa: E402

pytestmark = pytest.mark.slow
_ports = itertools.count(36000 + os.getpid() % 1000 * 20)
STEPS, WORKERS = 4, 2


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def cluster():
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{next(_ports)}"],
                                 "worker": [f"localhost:{next(_ports)}"
                                            for _ in range(WORKERS)]})
    servers = [tf.train.Server(spec, job, index) for job, index, _ in spec.tasks()]
    yield spec, servers
    for server in servers:
        server.stop()


def _worker(spec, index: int, batches, barrier: threading.Barrier, results: dict) -> None:
    """One between-graph client: its own graph, replica_device_setter, the optimizer's
    hook and a MonitoredTrainingSession on its task."""
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=spec)
        with tf.device(setter):
            params = parameters()
            global_step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [None, FEATURES])
            y = tf.placeholder(tf.float32, [None, 1])
            optimizer = tf.train.SyncReplicasOptimizer(
                tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=WORKERS,
                total_num_replicas=WORKERS)
            train = optimizer.minimize(loss_of(params, x, y), global_step=global_step)
        # no initial tokens: every step waits for both replicas' gradients
        hook = optimizer.make_session_run_hook(index == 0, num_tokens=0)
        target = f"grpc://{spec.task_address('worker', index)}"
        # the chief's queue runner waits in take_grad at the end: closing cancels it
        with tf.train.MonitoredTrainingSession(master=target, is_chief=index == 0,
                                               hooks=[hook],
                                               stop_grace_period_secs=1) as sess:
            for step in range(STEPS):
                bx, by = batches[step][index]
                sess.run(train, {x: bx, y: by})
                barrier.wait(timeout=120)  # both replicas released before the next step
            results[index] = (sess.run(params), sess.run(global_step))


def test_sync_replicas_between_graph_equals_one_process(cluster):
    spec, _ = cluster
    batches = data(STEPS, WORKERS)
    barrier = threading.Barrier(WORKERS)
    results, failures = {}, []

    def run(index):
        try:
            _worker(spec, index, batches, barrier, results)
        except BaseException as err:  # reported by the test thread
            failures.append(err)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not failures, failures
    assert sorted(results) == list(range(WORKERS))
    expected = single_process(STEPS, batches)
    for index in range(WORKERS):
        got, step = results[index]
        assert step == STEPS
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
