"""replica_device_setter, ps strategies and nested device scopes against TF 2.21."""
import pytest

import gradflow as gf
from gradflow.framework.device_spec import DeviceSpec
from gradflow.train.device_setter import (STANDARD_PS_OPS, GreedyLoadBalancingStrategy,
                                          RoundRobinStrategy, byte_size_load_fn,
                                          replica_device_setter)
from tf_fixtures import load_json

tf1 = gf.compat.v1
FIXTURE = load_json("distributed_api")

# The device functions of the fixture script, by the names it records.
FUNCTIONS = {
    "ps3": lambda op: "/job:ps/task:3",
    "gpu2": lambda op: "/device:GPU:2",
    "short_gpu": lambda op: "/gpu:1",
    "spec": lambda op: gf.DeviceSpec(job="x", task=1),
    "empty": lambda op: "",
    "echo": lambda op: op.device,
}

CLUSTER = {"ps": ["ps0:2222", "ps1:2222", "ps2:2222"], "worker": ["w0:2222", "w1:2222"]}
MODELS = {
    "ps2_sgd": ({"ps_tasks": 2, "worker_device": "/job:worker/task:1"}, "sgd"),
    "ps3_adam": ({"ps_tasks": 3, "worker_device": "/job:worker/task:0/cpu:0"}, "adam"),
    "cluster3_sgd": ({"cluster": CLUSTER}, "sgd"),
    "no_merge_ps2": ({"ps_tasks": 2, "merge_devices": False}, "sgd"),
    "ps_device_replica": ({"ps_tasks": 2, "ps_device": "/job:ps/replica:0",
                           "worker_device": "/job:worker/replica:0/task:1"}, "sgd"),
    "ps_ops_custom": ({"ps_tasks": 2, "ps_ops": ["VariableV2", "Mul"]}, "sgd"),
}


def _scope(spec):
    if isinstance(spec, str) and spec.startswith("fn:"):
        return FUNCTIONS[spec[3:]]
    return spec


@pytest.mark.parametrize("case", FIXTURE["device_merging"],
                         ids=lambda c: f"{c['outer']}|{c['inner']}")
def test_nested_device_scopes_merge_as_tf1(case):
    with gf.device(_scope(case["outer"])):
        with gf.device(_scope(case["inner"])):
            const = gf.constant(1.0)
    assert const.op.device == case["device"]


def test_function_scope_sees_the_inner_device_and_none_stops_it():
    seen = []

    def record(op):
        seen.append(op.device)
        return op.device

    with gf.device(record), gf.device("/job:a/task:2"):
        with gf.device(None):
            unplaced = gf.constant(1.0)
        placed = gf.constant(2.0)
    assert (unplaced.op.device, placed.op.device) == ("", "/job:a/task:2")
    assert seen == ["/job:a/task:2"]


def _small_model(setter_kwargs, optimizer):
    """The fixture script's model, built with gradflow: op name -> device."""
    graph = gf.Graph()
    with graph.as_default():
        with gf.device(replica_device_setter(**setter_kwargs)):
            x = tf1.placeholder(gf.float32, [None, 3], name="x")
            w = tf1.get_variable("w", [3, 2], initializer=tf1.constant_initializer(0.5))
            b = gf.Variable(gf.zeros([2]), name="b")
            y = gf.matmul(x, w) + b
            with gf.device("/job:ps/task:1"):
                c = gf.Variable(1.0, name="c")
            with gf.device("/device:GPU:0"):
                d = gf.Variable(2.0, name="d")
                y = y * d
            with gf.device("/job:worker/task:0"):
                e = gf.Variable(3.0, name="e")
                y = y * e
            with gf.device("/job:other"):
                f = gf.Variable(4.0, name="f")
            loss = gf.reduce_sum(y * c * f, name="loss")
            step = gf.train.get_or_create_global_step()
            opt = {"sgd": gf.train.GradientDescentOptimizer(0.1),
                   "adam": gf.train.AdamOptimizer(0.1)}[optimizer]
            opt.minimize(loss, global_step=step)
    return graph, {op.name: op.device for op in graph.get_operations()}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_small_model_placement_matches_tf(model):
    expected = FIXTURE["placement"]["models"][model]
    graph, devices = _small_model(*MODELS[model])
    variables = [op.name for op in graph.get_operations() if op.type == "VariableV2"]
    assert len(variables) >= 6
    for name in variables:
        assert devices[name] == expected[name], name
    # Op names of gradient internals differ from TF's in places; every shared name
    # (variables, their assigns and reads, slots, forward ops, updates) must agree.
    common = sorted(set(devices) & set(expected))
    assert len(common) > len(expected) // 2
    assert {n: devices[n] for n in common} == {n: expected[n] for n in common}


def test_no_ps_task_gives_none():
    none = FIXTURE["placement"]["none"]
    assert (replica_device_setter() is None) == none["ps_tasks_0"]
    assert (replica_device_setter(cluster={"worker": ["w0:1"]}) is None) == \
        none["cluster_without_ps"]


def test_standard_ps_ops_are_tfs():
    assert list(STANDARD_PS_OPS) == FIXTURE["placement"]["standard_ps_ops"]


def test_cluster_object_with_as_dict():
    class Spec:
        def as_dict(self):
            return {"ps": ["a:1", "b:1"], "worker": ["c:1"]}

    with gf.device(replica_device_setter(cluster=Spec())):
        v = [gf.Variable(float(i), name=f"v{i}") for i in range(3)]
        s = v[0] + v[1]
    assert [x.op.device for x in v] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert s.op.device == "/job:worker"


def test_round_robin_strategy_cycles():
    strategy = RoundRobinStrategy(3)
    assert [strategy(None) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_greedy_strategy_balances_bytes():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with gf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = gf.Variable(gf.zeros([100]), name="big")          # 400 bytes -> task 0
        small = gf.Variable(gf.zeros([10]), name="small")       # 40 -> task 1
        medium = gf.Variable(gf.zeros([50]), name="medium")     # task 1 (40 < 400)
        double = gf.Variable(gf.zeros([30], gf.float64), name="double")  # task 1 (240<400)
        last = gf.Variable(gf.zeros([1]), name="last")          # task 0 (400 < 480)
    assert [v.op.device[-1] for v in (big, small, medium, double, last)] == \
        ["0", "1", "1", "1", "0"]


def test_byte_size_load_fn():
    v = gf.Variable(gf.zeros([3, 4], gf.float64), name="v")
    assert byte_size_load_fn(v.op) == 96
    p = tf1.placeholder(gf.float32, [None, 2])
    with pytest.raises(ValueError, match="fully defined shape"):
        byte_size_load_fn(p.op)


def test_merge_devices_false_keeps_an_inner_device_whole():
    with gf.device(replica_device_setter(ps_tasks=2, merge_devices=False)):
        with gf.device("/device:GPU:1"):
            v = gf.Variable(1.0, name="v")
        w = gf.Variable(1.0, name="w")
    assert v.op.device == "/device:GPU:1"
    assert w.op.device == "/job:ps/task:0"


@pytest.mark.parametrize("kwargs, error, message", [
    ({"ps_tasks": 1, "ps_strategy": 3}, TypeError, "ps_strategy must be callable"),
    ({"ps_tasks": -1}, ValueError, "ps_tasks"),
    ({"ps_tasks": 1, "ps_device": "/job:ps/bogus:1"}, ValueError, "bogus"),
    ({"ps_tasks": 1, "worker_device": 7}, TypeError, "worker_device"),
    ({"cluster": ["ps"]}, TypeError, "cluster"),
    ({"ps_tasks": 1, "ps_ops": "VariableV2"}, TypeError, "ps_ops"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        replica_device_setter(**kwargs)


def test_strategy_arguments_are_checked():
    with pytest.raises(ValueError, match="num_tasks"):
        GreedyLoadBalancingStrategy(0, byte_size_load_fn)
    with pytest.raises(TypeError, match="load_fn"):
        GreedyLoadBalancingStrategy(2, None)


def test_device_spec_scopes_and_function_results():
    with gf.device(DeviceSpec(job="w", task=1)):
        with gf.device(lambda op: DeviceSpec(device_type="GPU", device_index=0)):
            c = gf.constant(1.0)
    assert c.op.device == "/job:w/task:1/device:GPU:0"
