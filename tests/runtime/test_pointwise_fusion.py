"""Pointwise fusion in the plan optimizer: BiasAdd + activation and the sparse softmax
cross entropy + the Mul scaling its gradient run as one step each, with the bits of the
ops run one by one."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.framework import errors
from gradflow.runtime import executor


def _run_both(build, feed_values, fetch_names=None):
    """(optimized results, unoptimized results, the optimized plan's op types)."""
    results = []
    for optimize in (True, False):
        was = executor.optimizations_enabled()
        executor.set_optimizations(optimize)
        try:
            graph = gf.Graph()
            with graph.as_default():
                placeholders, fetches = build()
            with gf.Session(graph=graph) as sess:
                feed = dict(zip(placeholders, feed_values, strict=True))
                for _ in range(3):  # interpreted, then generated code
                    values = sess.run(fetches, feed)
                plan = list(sess._plans.values())[-1]
                results.append((values, [s.op.type for s in plan.steps]))
        finally:
            executor.set_optimizations(was)
    return results[0][0], results[1][0], results[0][1]


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 3), (64, 40, 30)])  # one pass, blocks of rows
def test_bias_add_activation_fused_bitwise(shape, dtype, activation):
    rng = np.random.default_rng(0)
    x_value = rng.standard_normal(shape).astype(dtype)
    bias = rng.standard_normal(shape[-1]).astype(dtype)

    def build():
        x = gf.placeholder(dtype, shape)
        h = gf.matmul(gf.reshape(x, [-1, shape[-1]]), np.eye(shape[-1], dtype=dtype))
        h = gf.reshape(h, shape)
        y = getattr(gf.nn, activation)(gf.nn.bias_add(h * 2, bias))
        return [x], [y, gf.reduce_sum(y)]
    fused, plain, types = _run_both(build, [x_value])
    _same(fused, plain)
    assert "BiasAdd" not in types


def test_bias_add_read_elsewhere_is_not_fused():
    x_value = np.arange(12, dtype=np.float32).reshape(4, 3) - 6

    def build():
        x = gf.placeholder(gf.float32, [4, 3])
        pre = gf.nn.bias_add(x * 1.5, np.float32([1, -2, 3]))
        return [x], [gf.nn.relu(pre), pre]
    fused, plain, types = _run_both(build, [x_value])
    _same(fused, plain)
    assert "BiasAdd" in types


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_and_scaled_gradient_fused_bitwise(dtype):
    rng = np.random.default_rng(1)
    logits_value = rng.standard_normal((32, 10)).astype(dtype)
    labels_value = rng.integers(0, 10, 32).astype(np.int32)

    def build():
        logits = gf.placeholder(dtype, [32, 10])
        labels = gf.placeholder(gf.int32, [32])
        w = gf.constant(np.linspace(0.5, 1.5, 100, dtype=dtype).reshape(10, 10))
        z = gf.matmul(logits, w)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=z))
        return [logits, labels], [loss, gf.gradients(loss, [logits])[0]]
    fused, plain, types = _run_both(build, [logits_value, labels_value])
    _same(fused, plain)
    assert types.count("SparseSoftmaxCrossEntropyWithLogits") == 1 and "Mul" not in types


def test_fused_cross_entropy_reports_bad_labels_as_the_kernel_does():
    graph = gf.Graph()
    with graph.as_default():
        logits = gf.placeholder(gf.float32, [4, 3])
        labels = gf.placeholder(gf.int32, [4])
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits * 2))
        grad = gf.gradients(loss, [logits])[0]
    with gf.Session(graph=graph) as sess:
        feed = {logits: np.zeros((4, 3), np.float32), labels: np.int32([0, 1, 2, 0])}
        sess.run([loss, grad], feed)
        with pytest.raises(errors.InvalidArgumentError, match="label"):
            sess.run([loss, grad], {logits: feed[logits], labels: np.int32([0, 1, 5, 0])})


def _gates(z, forget_bias=1.0):
    """A BasicLSTMCell's pointwise part after its gate product."""
    i, j, f, o = gf.split(z, 4, axis=1)
    c = gf.sigmoid(f + forget_bias) * 0.5 + gf.sigmoid(i) * gf.tanh(j)
    return [c, gf.tanh(c) * gf.sigmoid(o)]


def _gate_values(rows, scale=3.0):
    rng = np.random.default_rng(2)
    return (rng.standard_normal((rows, 4 * 16)) * scale).astype(np.float32)


@pytest.mark.parametrize("case", ["plain", "past the bound", "nan"])
def test_lstm_gates_sigmoids_fused_bitwise(case):
    """The split and its three sigmoids (one through the forget bias) run as one step,
    also where a gate holds values whose sigmoid is denormal, or NaN (per gate)."""
    value = _gate_values(32)
    if case == "past the bound":
        value[3, 2] = -95.0      # in gate i
        value[5, 60] = -1e30     # in gate o
    elif case == "nan":
        value[7, 40] = np.nan    # in gate f

    def build():
        x = gf.placeholder(gf.float32, [None, 64])
        z = gf.matmul(x, np.eye(64, dtype=np.float32))
        return [x], _gates(z)
    fused, plain, types = _run_both(build, [value])
    _same(fused, plain)
    assert "Sigmoid" not in types and "AddV2" in types and types.count("Tanh") == 2


def test_lstm_gates_with_gradients_fused_bitwise():
    value = _gate_values(8)

    def build():
        x = gf.placeholder(gf.float32, [8, 64])
        w = gf.constant(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64))
        outputs = _gates(gf.matmul(x, w), forget_bias=np.float32(0.5))
        return [x], outputs + gf.gradients(outputs, [x, w])
    fused, plain, types = _run_both(build, [value])
    _same(fused, plain)
    assert "Sigmoid" not in types


def test_split_read_elsewhere_or_with_one_sigmoid_is_not_fused():
    value = _gate_values(4)

    def shared():
        x = gf.placeholder(gf.float32, [4, 64])
        z = x * 2.0
        return [x], _gates(z) + [z]      # the split's value is fetched too

    def one_sigmoid():
        x = gf.placeholder(gf.float32, [4, 64])
        i, j, f, o = gf.split(x * 2.0, 4, axis=1)
        return [x], [gf.sigmoid(i), gf.tanh(j), f * o]
    for build in (shared, one_sigmoid):
        fused, plain, types = _run_both(build, [value])
        _same(fused, plain)
        assert "Sigmoid" in types


def test_lstm_gates_of_other_dtypes_are_not_fused():
    value = _gate_values(4).astype(np.float64)

    def build():
        x = gf.placeholder(gf.float64, [4, 64])
        return [x], _gates(x * 2.0)
    fused, plain, types = _run_both(build, [value])
    _same(fused, plain)
    assert types.count("Sigmoid") == 3


def test_dynamic_rnn_lstm_training_step_bitwise_with_fused_gates():
    """A BasicLSTMCell dynamic_rnn's loss and gradients (the loop bodies' plans fuse the
    gates' sigmoids and run the swapped input-gradient product) equal the unoptimized
    plans' bit for bit."""
    inputs = np.random.default_rng(3).standard_normal((8, 6, 12)).astype(np.float32)
    results, body_types = [], []
    for optimize in (True, False):
        was = executor.optimizations_enabled()
        executor.set_optimizations(optimize)
        try:
            graph = gf.Graph()
            with graph.as_default():
                gf.set_random_seed(5)
                cell = gf.nn.rnn_cell.BasicLSTMCell(16)
                outputs, state = gf.nn.dynamic_rnn(cell, gf.constant(inputs), dtype=gf.float32)
                loss = gf.reduce_mean(gf.square(outputs)) + gf.reduce_mean(gf.square(state.c))
                fetches = [loss] + gf.gradients(loss, gf.trainable_variables())
                init = gf.global_variables_initializer()
            with gf.Session(graph=graph) as sess:
                sess.run(init)
                for _ in range(3):  # interpreted, then generated code
                    values = sess.run(fetches)
            results.append(values)
            loop = graph.get_operation_by_name("rnn/while/While")
            body_plan = loop.get_attr("saving").plan
            body_types.append([s.op.type for s in getattr(body_plan, "_plan", body_plan).steps])
        finally:
            executor.set_optimizations(was)
    _same(*results)
    assert "Sigmoid" not in body_types[0] and body_types[1].count("Sigmoid") == 3
