"""Optimizer API: TF1 names, slots, global step, gating, errors and atomicity."""
import numpy as np
import pytest

import gradflow as gf


def quadratic(w, target=3.0):
    return gf.reduce_sum(gf.square(w - target))


def ops_snapshot():
    return [op.name for op in gf.get_default_graph().get_operations()]


def test_minimize_names_ops_and_slots_like_tf1():
    w = gf.Variable([1.0, 2.0], name="w")
    opt = gf.train.AdamOptimizer(0.1)
    train = opt.minimize(quadratic(w))
    assert train.name == "Adam"
    assert opt.get_slot_names() == ["m", "v"]
    assert opt.get_slot(w, "m").op.name == "w/Adam"
    assert opt.get_slot(w, "v").op.name == "w/Adam_1"
    assert opt.get_slot(w, "nope") is None
    assert [v.op.name for v in opt.variables()] == ["beta1_power", "beta2_power", "w/Adam",
                                                    "w/Adam_1"]
    graph = gf.get_default_graph()
    assert graph.get_operation_by_name("Adam/update_w/ApplyAdam").type == "ApplyAdam"
    assert [v.op.name for v in gf.trainable_variables()] == ["w"]
    assert train in graph.get_collection(gf.GraphKeys.TRAIN_OP)


@pytest.mark.parametrize("make, slots", [
    (lambda: gf.train.GradientDescentOptimizer(0.5), []),
    (lambda: gf.train.MomentumOptimizer(0.1, 0.9), ["momentum"]),
    (lambda: gf.train.AdagradOptimizer(0.5), ["accumulator"]),
    (lambda: gf.train.RMSPropOptimizer(0.1), ["momentum", "rms"]),
    (lambda: gf.train.RMSPropOptimizer(0.1, centered=True), ["mg", "momentum", "rms"]),
    (lambda: gf.train.AdamOptimizer(0.3), ["m", "v"]),
])
def test_every_optimizer_minimizes_a_quadratic(make, slots):
    w = gf.Variable([0.0, 5.0], name="w")
    loss = quadratic(w)
    opt = make()
    train = opt.minimize(loss)
    assert opt.get_slot_names() == slots
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        start = sess.run(loss)
        for _ in range(60):
            sess.run(train)
        assert sess.run(loss) < 0.05 * start


def test_initial_slot_values_follow_tf1():
    w = gf.Variable(np.zeros((2, 2)), name="w")
    adagrad = gf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.25)
    rms = gf.train.RMSPropOptimizer(0.1, momentum=0.5)
    adagrad.minimize(quadratic(w))
    rms.minimize(quadratic(w))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(adagrad.get_slot(w, "accumulator")), 0.25)
        np.testing.assert_array_equal(sess.run(rms.get_slot(w, "rms")), 1.0)
        np.testing.assert_array_equal(sess.run(rms.get_slot(w, "momentum")), 0.0)
        assert not adagrad.get_slot(w, "accumulator").trainable


def test_global_step_increments_after_the_updates():
    step = gf.train.get_or_create_global_step()
    assert gf.train.get_or_create_global_step() is step
    assert gf.train.get_global_step() is step
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        gf.train.create_global_step()
    w = gf.Variable(1.0, name="w")
    train = gf.train.GradientDescentOptimizer(0.25).minimize(quadratic(w), global_step=step)
    assert train.name == "GradientDescent"
    assert gf.get_default_graph().get_operation_by_name("GradientDescent/update").type == "NoOp"
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert gf.train.global_step(sess, step) == 3
        assert sess.run(w) == pytest.approx(3.0 - 2.0 * 0.5 ** 3)


def test_global_step_lookup_and_validation():
    assert gf.train.get_global_step() is None
    graph = gf.Graph()
    step = gf.train.create_global_step(graph)
    assert step.graph is graph and step.dtype is gf.int64 and step.op.name == "global_step"
    assert gf.train.get_global_step(graph) is step
    with pytest.raises(TypeError, match="does not have integer type"):
        gf.train.assert_global_step(gf.constant(1.0))
    with pytest.raises(TypeError, match="must be a Variable or Tensor"):
        gf.train.assert_global_step(3)


def test_hyperparameters_may_be_tensors_or_callables():
    w = gf.Variable([0.0], name="w")
    lr = gf.placeholder(gf.float32, shape=[], name="lr")
    train = gf.train.MomentumOptimizer(lr, momentum=lambda: 0.0).minimize(quadratic(w))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train, {lr: 0.5})
        np.testing.assert_allclose(sess.run(w), [3.0])


def test_float64_variables_take_float32_hyperparameters():
    w = gf.Variable(np.array([0.0, 1.0]), name="w")
    train = gf.train.AdamOptimizer(0.1).minimize(quadratic(w))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w).dtype == np.float64


def test_compute_and_apply_gradients_separately():
    w = gf.Variable([1.0, 2.0], name="w")
    v = gf.Variable([0.0], name="v")
    opt = gf.train.GradientDescentOptimizer(0.5)
    pairs = opt.compute_gradients(quadratic(w))
    assert [var for _, var in pairs] == [w, v]
    assert pairs[1][0] is None
    clipped = [(gf.maximum(g, -1.0), var) for g, var in pairs if g is not None]
    train = opt.apply_gradients(clipped, name="train")
    assert train.name == "train"
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.5, 2.5])


def test_grad_loss_and_stop_gradients_reach_gradients():
    w = gf.Variable([1.0, 2.0], name="w")
    doubled = w * 2.0
    loss = gf.reduce_sum(doubled * w)
    opt = gf.train.GradientDescentOptimizer(1.0)
    (grad, _), = opt.compute_gradients(loss, var_list=[w], grad_loss=gf.constant(0.5),
                                       stop_gradients=[doubled])
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grad), [1.0, 2.0])  # 0.5 * doubled


@pytest.mark.parametrize("gate", [gf.train.Optimizer.GATE_NONE, gf.train.Optimizer.GATE_OP,
                                  gf.train.Optimizer.GATE_GRAPH])
def test_gate_gradients_modes_give_the_same_gradients(gate):
    w = gf.Variable([1.0, 2.0], name="w")
    b = gf.Variable(0.5, name="b")
    loss = gf.reduce_sum(gf.square(w * b))
    pairs = gf.train.GradientDescentOptimizer(0.1).compute_gradients(loss, gate_gradients=gate)
    if gate == gf.train.Optimizer.GATE_GRAPH:
        assert all(g.op.type == "Identity" and g.op.control_inputs for g, _ in pairs)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        gw, gb = sess.run([g for g, _ in pairs])
        np.testing.assert_allclose(gw, [0.5, 1.0])
        np.testing.assert_allclose(gb, 5.0)


def test_constraint_is_applied_after_each_dense_update():
    w = gf.Variable([0.0, 0.0], name="w", constraint=lambda t: gf.minimum(t, 1.0))
    train = gf.train.GradientDescentOptimizer(0.25).minimize(quadratic(w))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.0, 1.0])


def test_sparse_gradient_with_constraint_is_refused():
    w = gf.Variable(np.ones((3, 2)), name="w", constraint=lambda t: t)
    with pytest.raises(RuntimeError, match="constraint function on a sparse variable"):
        gf.train.GradientDescentOptimizer(0.1).minimize(gf.reduce_sum(gf.gather(w, [0])))


def test_sparse_indices_out_of_range_fail_the_run_without_changing_w():
    w = gf.Variable(np.ones((3, 2)), name="w")
    rows = gf.placeholder(gf.int32, shape=[None])
    train = gf.train.AdagradOptimizer(0.1).minimize(gf.reduce_sum(gf.gather(w, rows)))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        with pytest.raises(gf.errors.InvalidArgumentError):
            sess.run(train, {rows: [0, 7]})
        np.testing.assert_array_equal(sess.run(w), np.ones((3, 2)))


def test_no_gradients_error_explains_each_variable():
    w = gf.Variable([1.0, 2.0], name="w")
    v = gf.Variable([1.0], name="v")
    loss = gf.reduce_sum(gf.cast(gf.cast(w, gf.int32), gf.float32)) + gf.reduce_sum(
        gf.stop_gradient(v))
    before = ops_snapshot()
    with pytest.raises(ValueError) as info:
        gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    message = str(info.value)
    assert message.startswith("No gradients provided for any variable, check your graph for "
                              "ops that do not support gradients, between variables")
    assert "w: op 'Cast' (type Cast) outputs Cast:0 of type int32" in message
    assert "v: op 'StopGradient' (type StopGradient) is a stop_gradient" in message
    assert ops_snapshot() == before


def test_apply_gradients_validation_messages():
    w = gf.Variable([1.0, 2.0], name="w")
    opt = gf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No variables provided."):
        opt.apply_gradients([])
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \[\"<tf.Var"):
        opt.apply_gradients([(None, w)])
    with pytest.raises(TypeError, match="Gradient must be convertible"):
        opt.apply_gradients([(object(), w)])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([w])
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.apply_gradients([(gf.constant([1.0, 1.0]), gf.constant([1.0, 1.0]))])
    before = ops_snapshot()
    with pytest.raises(ValueError, match="gradient"):
        opt.apply_gradients([(gf.constant([1.0, 1.0, 1.0]), w)])
    with pytest.raises(TypeError, match="does not match type float32"):
        opt.apply_gradients([(gf.constant([1.0, 1.0], dtype=gf.float64), w)])
    assert ops_snapshot()[:len(before)] == before
    assert not any(n.startswith("GradientDescent") for n in ops_snapshot()[len(before):])


def test_compute_gradients_validation_messages():
    w = gf.Variable([1.0, 2.0], name="w")
    opt = gf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(quadratic(w), gate_gradients=7)
    with pytest.raises(ValueError, match="No variables to optimize."):
        opt.compute_gradients(quadratic(w), var_list=[])
    with pytest.raises(ValueError, match=r"Invalid type tf.int32 for .*, expected: \[tf.float32"):
        opt.compute_gradients(gf.constant(3))
    with pytest.raises(NotImplementedError, match="unsupported type"):
        opt.compute_gradients(quadratic(w), var_list=[w.value()])
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        gf.train.GradientDescentOptimizer(0.1, name="")
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        gf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_integer_variables_get_no_gradient_and_are_skipped():
    w = gf.Variable([1.0], name="w")
    i = gf.Variable([1, 2], name="i")
    loss = quadratic(w) + gf.reduce_sum(gf.cast(i, gf.float32))
    pairs = gf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
    assert pairs[1] == (None, i)


def test_one_optimizer_reuses_its_slots_across_minimize_calls():
    w = gf.Variable([1.0], name="w")
    opt = gf.train.MomentumOptimizer(0.1, 0.9)
    first = opt.minimize(quadratic(w))
    slot = opt.get_slot(w, "momentum")
    second = opt.minimize(quadratic(w, 5.0))
    assert opt.get_slot(w, "momentum") is slot
    assert (first.name, second.name) == ("Momentum", "Momentum_1")


def test_custom_optimizer_through_tf1_hooks():
    class SignDescent(gf.train.Optimizer):
        def __init__(self, learning_rate):
            super().__init__(False, "SignDescent")
            self._hyper = {"learning_rate": learning_rate}

        def _create_slots(self, var_list):
            for var in var_list:
                self._zeros_slot(var, "steps", self._name)

        def _apply_dense(self, grad, var):
            lr = self._hyper_tensor("learning_rate", var.dtype)
            steps = self.get_slot(var, "steps")
            return gf.group(var.assign_sub(lr * gf.sign(grad)), steps.assign_add(gf.ones_like(var)))

    w = gf.Variable([0.0, 10.0], name="w")
    opt = SignDescent(0.5)
    train = opt.minimize(quadratic(w))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.0, 9.0])
        np.testing.assert_allclose(sess.run(opt.get_slot(w, "steps")), [2.0, 2.0])
    with pytest.raises(NotImplementedError):
        SignDescent(0.1).minimize(gf.reduce_sum(gf.gather(w, [0])))


def test_a_failed_apply_gradients_forgets_its_slots():
    w = gf.Variable([1.0, 2.0], name="w")
    opt = gf.train.AdamOptimizer(0.1)
    before = ops_snapshot()
    with pytest.raises(ValueError):
        opt.apply_gradients([(gf.constant([1.0, 1.0, 1.0]), w)])
    assert opt.get_slot(w, "m") is None and opt.variables() == []
    assert ops_snapshot()[:len(before)] == before
    train = opt.minimize(quadratic(w))
    assert opt.get_slot(w, "m").op.name == "w/Adam"
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w)[0] == pytest.approx(1.1)
