"""``tf.device`` places XLA clusters on JAX devices; a missing one raises TF's error or,
with ``allow_soft_placement``, runs on the default device. JAX's host platform split
into two CPU devices (in a subprocess) stands in for a second accelerator."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import jit_config

pytest.importorskip("jax")


def _graph(device: str):
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [2, 2], name="x")
        with gf.device(device):
            y = gf.matmul(x, x, name="product") * 2.0 + 1.0
        z = gf.tanh(y) * 3.0
    return graph, x, z


def _config(soft: bool):
    config = jit_config()
    config.allow_soft_placement = soft
    return config


def test_a_missing_gpu_raises_tfs_error_without_soft_placement():
    graph, x, z = _graph("/gpu:7")
    with gf.Session(graph=graph, config=_config(False)) as sess:
        with pytest.raises(gf.errors.InvalidArgumentError,
                           match=r"Cannot assign a device for operation product: .* was "
                                 r"explicitly assigned to /device:GPU:7 but available devices"):
            sess.run(z, {x: np.eye(2)})


@pytest.mark.parametrize("device", ["/gpu:7", "/device:XLA_GPU:7"])
def test_soft_placement_runs_a_missing_gpus_cluster_on_the_default_device(device):
    graph, x, z = _graph(device)
    with gf.Session(graph=graph, config=_config(True)) as sess:
        value = sess.run(z, {x: np.eye(2)})
    np.testing.assert_allclose(value, np.tanh(np.eye(2) * 2 + 1) * 3)


SCRIPT = textwrap.dedent("""
    import json, numpy as np, gradflow as gf
    from gradflow.runtime.executor import compile_plan
    config = gf.ConfigProto(log_device_placement=True, graph_options=gf.GraphOptions(
        optimizer_options=gf.OptimizerOptions(global_jit_level=gf.OptimizerOptions.ON_1)))
    x = gf.placeholder(gf.float64, [2, 2], name="x")
    with gf.device("/device:XLA_CPU:1"):
        y = gf.matmul(x, x, name="product") * 2.0
    z = gf.tanh(y + 1.0, name="t") * 3.0
    plan = compile_plan(gf.get_default_graph(), [z], [x], global_jit=True)
    print("CLUSTERS", len(plan.clusters))
    print("DEVICE", plan.cluster_devices["product"], plan.cluster_devices["t"])
    with gf.Session(config=config) as sess:
        print("VALUE", json.dumps(sess.run(z, {x: np.eye(2)}).tolist()))
""")


@pytest.mark.slow  # a fresh interpreter importing JAX: ~10 s on the shared machine
def test_a_cluster_runs_on_the_cpu_device_it_asks_for():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines["CLUSTERS"] == "2"  # the ops asking for XLA_CPU:1 compile apart
    assert lines["DEVICE"] == ("/job:localhost/replica:0/task:0/device:XLA_CPU:1 "
                               "/job:localhost/replica:0/task:0/device:XLA_CPU:0")
    np.testing.assert_allclose(json.loads(lines["VALUE"]), np.tanh(np.eye(2) * 2 + 1) * 3)
    assert "product: (MatMul): /job:localhost/replica:0/task:0/device:XLA_CPU:1" in done.stderr
