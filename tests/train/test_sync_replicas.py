"""SyncReplicasOptimizer: TF1's graph, one replica as the plain optimizer, and two
in-graph towers averaged as TF 2.21 averages them."""
import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.train.sync_replicas_optimizer import SyncReplicasOptimizer
from tf_fixtures import load_json

tf1 = gf.compat.v1
FIXTURE = load_json("distributed_api")
X0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 1.0]], np.float32)
X1 = np.array([[2.0, 1.0], [-0.5, 0.25], [1.5, -1.0]], np.float32)
W0 = np.array([[0.1, -0.2], [0.3, 0.4]], np.float32)
EMB0 = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
STEPS = 4
# Ops of other areas whose names or types differ from TF's (gradients, the ready op's
# boolean_mask, GradientDescent's step constant, the read of a ref variable).
FOREIGN = ("gradients/", "report_uninitialized_variables", "GradientDescent",
           "sync_rep_local_step/read")


def sync_model(x, w, emb, name):
    y = gf.matmul(x, w)
    rows = gf.gather(emb, [0, 2, 0])
    return gf.add(gf.reduce_sum(gf.square(y)), gf.reduce_sum(rows * rows), name=name)


def _variables():
    return gf.Variable(W0, name="w"), gf.Variable(EMB0, name="emb")


def test_graph_is_tfs():
    recorded = FIXTURE["sync_graph"]
    graph = gf.get_default_graph()
    x = tf1.placeholder(gf.float32, [None, 2], name="x")
    w, emb = _variables()
    loss = sync_model(x, w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1),
                                replicas_to_aggregate=2, total_num_replicas=3)
    grads = opt.compute_gradients(loss)
    first = len(graph.get_operations())
    train = opt.apply_gradients(grads, global_step=step)
    opt.make_session_run_hook(True)
    tokens = opt.get_init_tokens_op()
    no_tokens = opt.get_init_tokens_op(num_tokens=0)
    mine = {op.name: op for op in graph.get_operations()[first:]}
    for expected in recorded["ops"]:
        name = expected["name"]
        if name.startswith(FOREIGN):
            continue
        op = mine[name]
        assert op.type == expected["type"], name
        inputs = [t.name for t in op.inputs]
        assert [i for i in inputs if not i.startswith(FOREIGN)] == \
            [i for i in expected["inputs"] if not i.startswith(FOREIGN)], name
        assert len(inputs) == len(expected["inputs"]), name
        assert sorted(c.name for c in op.control_inputs) == \
            sorted(expected["control_inputs"]), name
    assert train.name == recorded["train_op"]
    assert opt.chief_init_op.name == recorded["chief_init_op"]
    assert opt.local_step_init_op.name == recorded["local_step_init_op"]
    assert (tokens.name, no_tokens.name) == (recorded["init_tokens_op"],
                                             recorded["no_init_tokens_op"])
    runner = opt.get_chief_queue_runner()
    assert runner.queue.name == recorded["runner_queue"]
    assert [op.name for op in runner.enqueue_ops] == recorded["runner_enqueue_ops"]
    assert [v.name for v in tf1.local_variables()] == recorded["local_variables"]
    assert [v.name for v in tf1.global_variables()] == recorded["global_variables"]
    assert [op.name for op in graph.get_collection("train_op")] == \
        recorded["train_op_collection"]
    assert opt.variables() == [] and opt.get_slot_names() == []


def test_placement_under_replica_device_setter_is_tfs():
    recorded = FIXTURE["sync_placement"]
    graph = gf.get_default_graph()
    with gf.device(gf.train.replica_device_setter(ps_tasks=2,
                                                  worker_device="/job:worker/task:1")):
        x = tf1.placeholder(gf.float32, [None, 2], name="x")
        w, emb = _variables()
        loss = sync_model(x, w, emb, "loss")
        step = gf.train.get_or_create_global_step()
        opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 2)
        grads = opt.compute_gradients(loss)
        first = len(graph.get_operations())
        opt.apply_gradients(grads, global_step=step)
        opt.get_init_tokens_op()
    devices = {op.name: op.device for op in graph.get_operations()[first:]}
    # TF's FIFOQueue constructor adds /device:CPU:* to the queue op (data_flow_ops.py's
    # area), its group() adds a NoOp per device, and its ready op differs (state.py's
    # area); every other shared op agrees.
    shared = [n for n in recorded if n in devices and n != "sync_token_q"
              and not n.startswith(FOREIGN)]
    assert {"sync_rep_local_step", "Assign", "Assign_1", "Fill",
            "sync_replicas/conditional_accumulator",
            "sync_replicas/SparseAccumulatorTakeGradient"} <= set(shared)
    assert {n: devices[n] for n in shared} == {n: recorded[n] for n in shared}
    assert devices["sync_rep_local_step"] == "/job:worker/task:1"  # each worker its own


def test_errors_are_tfs():
    recorded = FIXTURE["sync_graph"]["errors"]
    w, emb = _variables()
    loss = sync_model(gf.constant(X0), w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    fresh = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 2)
    grads = fresh.compute_gradients(loss)
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    for key, call in {"runner_before_apply": fresh.get_chief_queue_runner,
                      "tokens_before_apply": fresh.get_init_tokens_op,
                      "no_pairs": lambda: fresh.apply_gradients([], step),
                      "no_global_step": lambda: fresh.apply_gradients(grads)}.items():
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == recorded[key]
    assert [op.name for op in graph.get_operations()] == before
    few = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 3, 1)
    few.apply_gradients(grads, step)
    with pytest.raises(ValueError) as info:
        few.get_init_tokens_op(num_tokens=1)
    assert str(info.value) == recorded["too_few_tokens"]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"opt": "sgd", "replicas_to_aggregate": 1}, TypeError, "opt must be"),
    ({"replicas_to_aggregate": 0}, ValueError, "replicas_to_aggregate"),
    ({"replicas_to_aggregate": 2, "total_num_replicas": 1.5}, ValueError,
     "total_num_replicas"),
])
def test_bad_constructor_arguments(kwargs, error, match):
    kwargs.setdefault("opt", gf.train.GradientDescentOptimizer(0.1))
    with pytest.raises(error, match=match):
        SyncReplicasOptimizer(**kwargs)


def test_a_failing_apply_leaves_the_graph_as_it_was():
    w, emb = _variables()
    loss = sync_model(gf.constant(X0), w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 1)
    grads = opt.compute_gradients(loss)
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    collections = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
    bad = [(grads[0][0], grads[0][1]), ("not a gradient", grads[1][1])]
    with pytest.raises((TypeError, ValueError)):
        opt.apply_gradients(bad, step)
    assert [op.name for op in graph.get_operations()] == before
    assert {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()} \
        == collections
    with pytest.raises(ValueError, match="after apply_gradients"):
        opt.get_chief_queue_runner()


def _train_single(kind):
    w, emb = _variables()
    loss = sync_model(gf.constant(X0), w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    opt = gf.train.GradientDescentOptimizer(0.1)
    hooks = []
    if kind == "sync":
        opt = SyncReplicasOptimizer(opt, 1, 1)
        hooks = [opt.make_session_run_hook(True, num_tokens=0)]
    train = opt.minimize(loss, global_step=step)
    # the chief's queue runner stays blocked in take_grad at the end (as in TF, whose
    # close then waits the whole grace period): a short one keeps the test quick
    with gf.train.MonitoredTrainingSession(hooks=hooks, stop_grace_period_secs=0.5) as sess:
        for _ in range(STEPS):
            sess.run(train)
        return sess.run({"w": w, "emb": emb, "global_step": step})


@pytest.mark.parametrize("kind", ["sync", "plain"])
def test_one_replica_trains_as_the_plain_optimizer(kind):
    values = _train_single(kind)
    gf.reset_default_graph()
    plain = _train_single("plain")
    recorded = FIXTURE["sync_single_replica"][kind]
    for key in ("w", "emb", "global_step"):
        np.testing.assert_allclose(values[key], recorded[key], rtol=1e-6)
        np.testing.assert_array_equal(values[key], plain[key])


def test_two_towers_in_threads_average_as_tf():
    w, emb = _variables()
    step = gf.train.get_or_create_global_step()
    opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 2, 2)
    trains = []
    for k, x in enumerate((X0, X1)):
        with gf.name_scope(f"tower_{k}"):
            loss = sync_model(gf.constant(x), w, emb, "loss")
        trains.append(opt.apply_gradients(opt.compute_gradients(loss), global_step=step))
    recorded = FIXTURE["sync_two_towers"]
    assert [t.name for t in trains] == recorded["names"]
    init = [gf.global_variables_initializer(), tf1.local_variables_initializer()]
    sess = gf.Session()
    sess.run(init)
    sess.run(opt.chief_init_op)
    opt.get_chief_queue_runner().create_threads(sess, daemon=True, start=True)
    barrier = threading.Barrier(2)
    failures = []

    def tower(train):
        try:
            for _ in range(STEPS):
                barrier.wait(30)
                sess.run(train)
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            failures.append(err)

    threads = [threading.Thread(target=tower, args=(t,)) for t in trains]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures
    values = sess.run({"w": w, "emb": emb, "global_step": step})
    sess.close()
    for key, expected in recorded["values"].items():
        np.testing.assert_allclose(values[key], expected, rtol=1e-5)
    # The same as one plain step per step on the mean of the towers' gradients.
    gf.reset_default_graph()
    w, emb = _variables()
    loss = (sync_model(gf.constant(X0), w, emb, "l0") +
            sync_model(gf.constant(X1), w, emb, "l1")) / 2
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with gf.Session() as plain:
        plain.run(gf.global_variables_initializer())
        for _ in range(STEPS):
            plain.run(train)
        np.testing.assert_allclose(plain.run(w), values["w"], rtol=1e-5)


def test_variable_averages_run_after_each_update():
    w, emb = _variables()
    loss = sync_model(gf.constant(X0), w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    ema = gf.train.ExponentialMovingAverage(0.5)
    opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 1,
                                variable_averages=ema, variables_to_average=[w])
    train = opt.minimize(loss, global_step=step)
    hook = opt.make_session_run_hook(True, num_tokens=0)
    with gf.train.MonitoredTrainingSession(hooks=[hook], stop_grace_period_secs=0.5) as sess:
        sess.run(train)
        first_w = sess.run(w)
        averaged = sess.run(ema.average(w))
    # One update, then the average of the initial and the updated value.
    np.testing.assert_allclose(averaged, 0.5 * W0 + 0.5 * first_w, rtol=1e-6)


def test_non_chief_hook_runs_the_local_step_init_only():
    w, emb = _variables()
    loss = sync_model(gf.constant(X0), w, emb, "loss")
    step = gf.train.get_or_create_global_step()
    opt = SyncReplicasOptimizer(gf.train.GradientDescentOptimizer(0.1), 1)
    opt.minimize(loss, global_step=step)
    hook = opt.make_session_run_hook(False)
    hook.begin()
    with gf.Session() as sess:
        with pytest.raises(RuntimeError, match="did not make model ready for SyncReplicas"):
            hook.after_create_session(sess, None)
        sess.run(gf.global_variables_initializer())
        sess.run(step.assign(7))
        sess.run(tf1.local_variables_initializer())
        hook.after_create_session(sess, None)
        local = [v for v in tf1.local_variables() if v.op.name == "sync_rep_local_step"][0]
        assert sess.run(local) == 7
        assert sess.run(opt._sync_token_queue.size()) == 0  # no tokens from a worker
