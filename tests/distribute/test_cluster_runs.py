"""Cluster sessions on a local Ray instance: in-graph training equals one process,
variables are shared by name across sessions, failed runs commit nothing, a killed task
gives TF1's errors."""
import itertools
import os
import threading

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import gradflow as tf  # noqa: E402
from gradflow.framework import errors  # noqa: E402
from cluster_models import data, feed_dict, in_graph, single_process  # noqa: E402

pytestmark = pytest.mark.slow
_ports = itertools.count(30000 + os.getpid() % 1000 * 20)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _start_cluster():
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{next(_ports)}"],
                                 "worker": [f"localhost:{next(_ports)}",
                                            f"localhost:{next(_ports)}"]})
    servers = {(job, index): tf.train.Server(spec, job, index)
               for job, index, _ in spec.tasks()}
    return spec, servers


@pytest.fixture(scope="module")
def cluster():
    """1 ps + 2 workers, each a Ray actor started here, shared by the module's tests
    that stop no task (each initializes the variables it reads)."""
    spec, servers = _start_cluster()
    yield spec, servers
    for server in servers.values():
        server.stop()


@pytest.fixture
def own_cluster():
    """A 1 ps + 2 workers cluster for a test that stops tasks."""
    spec, servers = _start_cluster()
    yield spec, servers
    for server in servers.values():
        server.stop()


def _train(sess, train, feeds, batches, steps):
    for step in range(steps):
        sess.run(train, feed_dict(feeds, batches[step]))


def test_in_graph_replication_equals_one_process(cluster):
    spec, servers = cluster
    batches = data(6, 2)
    expected = single_process(6, batches)
    init, train, params, feeds = in_graph(2, "/job:ps/task:0",
                                          lambda k: f"/job:worker/task:{k}")
    with tf.Session(servers["worker", 0].target) as sess:
        sess.run(init)
        _train(sess, train, feeds, batches, 6)
        got = sess.run(params)
        assert sess.run(tf.train.get_global_step()) == 6
        assert sess.sess_str == servers["worker", 0].target
        assert len(sess.list_devices()) == 3
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_variables_are_shared_by_name_across_sessions_and_graphs(cluster):
    spec, servers = cluster
    batches = data(2, 2)
    init, train, params, feeds = in_graph(2, "/job:ps/task:0",
                                          lambda k: f"/job:worker/task:{k}")
    with tf.Session(servers["worker", 0].target) as sess:
        sess.run(init)
        _train(sess, train, feeds, batches, 2)
        trained = sess.run(params)
    other = tf.Graph()  # another client's graph: same names, no initializer run
    with other.as_default():
        with tf.device("/job:ps/task:0"):
            w1 = tf.Variable(np.zeros((5, 8), np.float32), name="w1")
        with tf.Session(servers["worker", 1].target) as sess:
            np.testing.assert_array_equal(sess.run(w1), trained[0])
            assert not sess.run(tf.report_uninitialized_variables([w1])).size


def test_a_failed_run_commits_nothing_on_any_task(cluster):
    spec, servers = cluster
    batches = data(1, 2)
    init, train, params, feeds = in_graph(2, "/job:ps/task:0",
                                          lambda k: f"/job:worker/task:{k}")
    with tf.device("/job:worker/task:1"):
        probe = tf.placeholder(tf.float32, [], name="probe")
        with tf.control_dependencies([train]):  # runs after the ps applied the update
            checked = tf.debugging.check_numerics(probe * 1.0, "probe is not finite")
    with tf.Session(servers["worker", 0].target) as sess:
        sess.run(init)
        before = sess.run(params)
        feeds_now = feed_dict(feeds, batches[0])
        feeds_now[probe] = np.nan
        with pytest.raises(errors.InvalidArgumentError, match="probe is not finite") as err:
            sess.run(checked, feeds_now)
        assert err.value.op is not None and err.value.op.graph is tf.get_default_graph()
        for b, a in zip(before, sess.run(params), strict=True):
            np.testing.assert_array_equal(a, b)
        assert sess.run(tf.train.get_global_step()) == 0
        feeds_now[probe] = 1.0
        assert sess.run(checked, feeds_now) == 1.0
        assert sess.run(tf.train.get_global_step()) == 1


def test_errors_of_a_task_name_the_client_op(cluster):
    spec, servers = cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="never_initialized")
    with tf.device("/job:worker/task:1"):
        doubled = v * 2.0
    with tf.Session(servers["worker", 0].target) as sess:
        with pytest.raises(errors.FailedPreconditionError,
                           match="uninitialized value never_initialized"):
            sess.run(doubled)
        with pytest.raises(errors.InvalidArgumentError,
                           match="Cannot assign a device for operation"):
            with tf.device("/job:worker/task:9"):
                sess.run(tf.constant(1.0) + 1.0)


def test_feeds_fetches_and_saver_on_a_cluster(cluster, tmp_path):
    spec, servers = cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [4])
        total = tf.reduce_sum(v * x)
    saver = tf.train.Saver([v])
    with tf.Session(servers["worker", 0].target) as sess:
        sess.run(v.initializer)
        value, fed = sess.run({"t": total, "x": x}, {x: np.ones(4, np.float32)}).values()
        assert value == 6.0 and fed.tolist() == [1, 1, 1, 1]
        out = sess.run(total, {x: np.full(4, 2.0, np.float32)})
        assert out == 12.0
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run(v.assign(np.zeros(4, np.float32)))
        saver.restore(sess, path)
        fetched = sess.run(v)
        fetched += 1  # a fetched array is the caller's to change
        np.testing.assert_array_equal(sess.run(v), np.arange(4))


def test_killed_task_gives_unavailable_then_aborted_and_recovers(own_cluster):
    spec, servers = own_cluster
    batches = data(3, 2)
    init, train, params, feeds = in_graph(2, "/job:ps/task:0",
                                          lambda k: f"/job:worker/task:{k}")
    sess = tf.Session(servers["worker", 0].target)
    sess.run(init)
    _train(sess, train, feeds, batches, 1)
    after_one = sess.run(params)
    servers["worker", 1].stop()  # the task's actor is killed
    with pytest.raises(errors.UnavailableError, match="/job:worker/replica:0/task:1"):
        sess.run(train, feed_dict(feeds, batches[1]))
    servers["worker", 1] = tf.train.Server(spec, "worker", 1)  # the task comes back
    with pytest.raises(errors.AbortedError, match="task:1 was restarted"):
        sess.run(train, feed_dict(feeds, batches[1]))
    sess.close()
    with tf.Session(servers["worker", 0].target) as sess:  # the ps kept the variables
        for a, b in zip(sess.run(params), after_one, strict=True):
            np.testing.assert_array_equal(a, b)
        _train(sess, train, feeds, batches[1:], 2)
        assert sess.run(tf.train.get_global_step()) == 3


def test_device_filters_and_a_task_that_never_starts(cluster, monkeypatch):
    spec, servers = cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="filtered")
    config = tf.ConfigProto(device_filters=["/job:ps"])
    with tf.Session(servers["ps", 0].target, config=config) as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 3.0
    missing = tf.train.ClusterSpec({"a": [f"localhost:{next(_ports)}"],
                                    "b": [f"localhost:{next(_ports)}"]})
    server = tf.train.Server(missing, "a", 0)
    monkeypatch.setenv("GRADFLOW_TASK_WAIT_S", "0")
    try:
        with pytest.raises(errors.UnavailableError, match="/job:b/replica:0/task:0"):
            tf.Session(server.target)
    finally:
        server.stop()


def test_operation_timeout_gives_deadline_exceeded(cluster):
    spec, servers = cluster
    with tf.device("/job:worker/task:1"):
        queue = tf.FIFOQueue(1, tf.float32, shapes=[[]])
        taken = queue.dequeue()
    config = tf.ConfigProto(operation_timeout_in_ms=300)
    with tf.Session(servers["worker", 0].target, config=config) as sess:
        with pytest.raises(errors.DeadlineExceededError, match="operation_timeout_in_ms"):
            sess.run(taken)
        sess.run(queue.enqueue(4.0))  # the queue is the task's: the blocked run took it
        assert sess.run(queue.size()) in (0, 1)


def test_variables_on_two_ps_tasks_train_as_one_process():
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{next(_ports)}", f"localhost:{next(_ports)}"],
                                 "worker": [f"localhost:{next(_ports)}"]})
    servers = [tf.train.Server(spec, job, index) for job, index, _ in spec.tasks()]
    try:
        batches = data(4, 2)
        expected = single_process(4, batches)
        # round robin over the ps tasks by variable, as replica_device_setter does
        placed = iter(range(100))

        def ps_device(op):
            if op.type == "VariableV2":
                return f"/job:ps/task:{next(placed) % 2}"
            return "/job:worker/task:0"

        init, train, params, feeds = in_graph(2, ps_device, lambda k: "/job:worker/task:0")
        assert {p.op.device for p in params} == {"/job:ps/task:0", "/job:ps/task:1"}
        with tf.Session(servers[2].target) as sess:
            sess.run(init)
            _train(sess, train, feeds, batches, 4)
            got = sess.run(params)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    finally:
        for server in servers:
            server.stop()


def test_concurrent_clients_lose_no_update(cluster):
    spec, servers = cluster
    graphs = []
    for k in range(2):  # two clients, each with its own graph, meeting at the ps
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                counter = tf.Variable(0.0, name="counter")
            with tf.device(f"/job:worker/task:{k}"):
                step = tf.constant(1.0) * 1.0
            graphs.append((graph, counter, counter.assign_add(step)))
    with tf.Session(servers["worker", 0].target, graph=graphs[0][0]) as sess:
        sess.run(graphs[0][1].initializer)

    def client(k):
        graph, _, bump = graphs[k]
        with tf.Session(servers["worker", k].target, graph=graph) as sess:
            for _ in range(25):
                sess.run(bump)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with tf.Session(servers["ps", 0].target, graph=graphs[1][0]) as sess:
        assert sess.run(graphs[1][1]) == 50.0


def test_a_lost_ps_is_recovered_from_the_last_checkpoint(own_cluster, tmp_path):
    spec, servers = own_cluster
    batches = data(4, 2)
    expected = single_process(4, batches)
    init, train, params, feeds = in_graph(2, "/job:ps/task:0",
                                          lambda k: f"/job:worker/task:{k}")
    saver = tf.train.Saver()
    sess = tf.Session(servers["worker", 0].target)
    sess.run(init)
    _train(sess, train, feeds, batches, 2)
    checkpoint = saver.save(sess, str(tmp_path / "model"), global_step=2)
    servers["ps", 0].stop()  # the variables are gone with their task
    with pytest.raises(errors.UnavailableError, match="/job:ps/replica:0/task:0"):
        sess.run(train, feed_dict(feeds, batches[2]))
    servers["ps", 0] = tf.train.Server(spec, "ps", 0)
    with pytest.raises(errors.AbortedError):
        sess.run(train, feed_dict(feeds, batches[2]))
    sess.close()
    with tf.Session(servers["worker", 0].target) as sess:  # what MonitoredSession does
        assert sess.run(tf.report_uninitialized_variables()).size == len(params) + 1
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        assert checkpoint.endswith("model-2")
        _train(sess, train, feeds, batches[2:], 2)
        for g, e in zip(sess.run(params), expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_gradflow_attrs_and_seeded_random_ops_run_as_in_process(cluster):
    spec, servers = cluster
    with tf.device("/job:worker/task:1"):
        x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        fetches = [tf.nn.softmax(x, axis=0), tf.random_normal([3], seed=5),
                   tf.nn.dropout(tf.ones([8]), keep_prob=0.5, seed=3)]
    results = []
    for target in ("", servers["worker", 0].target):
        with tf.Session(target) as sess:
            results.append([sess.run(fetches), sess.run(fetches)])
    for local, remote in zip(results[0], results[1], strict=True):
        for a, b in zip(local, remote, strict=True):
            np.testing.assert_array_equal(a, b)


def test_local_server_runs_a_whole_program():
    server = tf.train.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        assert server.server_def.job_name == "localhost"
        v = tf.Variable([1.0, 2.0], name="local_v")
        doubled = v * 2.0
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(v.assign_add([1.0, 1.0]))
            np.testing.assert_array_equal(sess.run(doubled), [4.0, 6.0])
            assert sess.list_devices() == ["/job:localhost/replica:0/task:0/device:CPU:0"]
        with pytest.raises(errors.UnknownError, match="already running"):
            tf.train.Server(server.server_def)  # the address is taken
    finally:
        server.stop()
