"""ClusterSpec and Server's argument checks against TF 2.21 (no Ray needed)."""
import subprocess
import sys

import pytest

import gradflow as tf
from gradflow.framework import errors
from tf_fixtures import load_json

RECORD = load_json("distribute")
DENSE = {"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}
SPARSE = {"ps": ["ps0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}}


def _keys_to_text(spec_dict):
    return {job: ({str(k): v for k, v in tasks.items()} if isinstance(tasks, dict) else tasks)
            for job, tasks in spec_dict.items()}


def _cases():
    C = tf.train.ClusterSpec
    dense, sparse = C(DENSE), C(SPARSE)
    return {
        "dense_as_dict": lambda: _keys_to_text(dense.as_dict()),
        "sparse_as_dict": lambda: _keys_to_text(sparse.as_dict()),
        "jobs": lambda: dense.jobs,
        "dense_job_tasks": lambda: dense.job_tasks("worker"),
        "sparse_job_tasks": lambda: sparse.job_tasks("worker"),
        "num_tasks": lambda: [dense.num_tasks("worker"), sparse.num_tasks("worker")],
        "task_indices": lambda: [dense.task_indices("worker"), sparse.task_indices("worker")],
        "task_address": lambda: sparse.task_address("worker", 3),
        "roundtrip_cluster_def": lambda: _keys_to_text(C(sparse.as_cluster_def()).as_dict()),
        "repr": lambda: repr(dense),
        "empty_bool": lambda: bool(C({})),
        "equal_copy": lambda: C(dense) == dense,
        "unknown_job": lambda: dense.num_tasks("nope"),
        "unknown_task": lambda: dense.task_address("worker", 5),
        "bad_cluster": lambda: C(5),
        "bad_tasks": lambda: C({"w": 5}),
        "bad_address": lambda: C({"w": [1]}),
        "bad_job_name": lambda: C({1: ["a:1"]}),
        "server_no_job": lambda: tf.train.Server(dense, start=False),
        "server_no_task": lambda: tf.train.Server(dense, job_name="worker", start=False),
        "server_bad_job": lambda: tf.train.Server(dense, job_name="x", task_index=0,
                                                  start=False),
        "server_bad_task": lambda: tf.train.Server(dense, job_name="worker", task_index=7,
                                                   start=False),
        "server_target": lambda: tf.train.Server(
            C({"local": ["localhost:0"]}), start=False).target.split(":")[0],
    }


@pytest.mark.parametrize("case", sorted(RECORD))
def test_matches_tf(case):
    expected = RECORD[case]
    call = _cases()[case]
    if "error" in expected:
        kind = getattr(errors, expected["error"], None) or {
            "TypeError": TypeError, "ValueError": ValueError}[expected["error"]]
        with pytest.raises(kind) as caught:
            call()
        assert str(caught.value).splitlines()[0] == expected["message"]
    else:
        assert call() == expected["value"]


def test_defaults_for_a_single_task_and_server_def():
    server = tf.train.Server({"local": ["localhost:7"]}, start=False)
    assert server.target == "grpc://localhost:7"
    assert (server.server_def.job_name, server.server_def.task_index) == ("local", 0)
    assert tf.train.ClusterSpec(server.server_def.cluster).as_dict() == {
        "local": ["localhost:7"]}
    again = tf.train.Server(server.server_def, start=False)
    assert again.target == server.target


def test_protocol_other_than_grpc_is_refused():
    with pytest.raises(errors.NotFoundError, match="No server factory registered"):
        tf.train.Server(DENSE, job_name="ps", task_index=0, protocol="foo", start=False)


def test_tasks_lists_every_task_in_order():
    spec = tf.compat.v1.train.ClusterSpec(SPARSE)
    assert spec.tasks() == [("ps", 0, "ps0:2222"), ("worker", 1, "w1:2222"),
                            ("worker", 3, "w3:2222")]
    assert spec != tf.train.ClusterSpec(DENSE)


def test_session_target_without_runner_or_bad_scheme():
    with pytest.raises(errors.NotFoundError, match="No session factory registered"):
        tf.Session("foo:1234", graph=tf.Graph())
    with pytest.raises(TypeError, match="target must be a string"):
        tf.Session(5, graph=tf.Graph())


@pytest.mark.slow  # a fresh interpreter importing gradflow
def test_gradflow_imports_ray_only_for_clusters_and_says_how_to_get_it():
    script = (
        "import sys\n"
        "import gradflow as tf\n"
        "assert 'ray' not in sys.modules\n"
        "sys.modules['ray'] = None  # as if Ray were not installed\n"
        "try:\n"
        "    tf.Session('grpc://localhost:1', graph=tf.Graph())\n"
        "except ImportError as err:\n"
        "    print(err)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'pip install "gradflow[distributed]"' in done.stdout
