"""Lowered ops under the XLA backend give the NumPy kernels' values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import assert_lowered_like_numpy, jit_config

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(7)


def _x(*shape):
    return RNG.standard_normal(shape)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


# (id, build(*placeholders) -> tensor, inputs, op types that must be compiled)
CASES = [
    ("unary", lambda x: gf.exp(gf.tanh(x)) + gf.sigmoid(x) * gf.sin(x) - gf.square(x),
     [_x(3, 4)], {"Exp", "Tanh", "Sigmoid", "Sin", "Square"}),
    ("log_sqrt_rsqrt", lambda x: gf.log(x) + gf.sqrt(x) + gf.rsqrt(x) + 1 / x,
     [_pos(3, 4)], {"Log", "Sqrt", "Rsqrt"}),
    ("binary_broadcast", lambda a, b: gf.maximum(a, b) * (a - b) / (gf.abs(b) + 1.0)
     + gf.squared_difference(a, b), [_x(3, 4), _x(4)], {"Maximum", "SquaredDifference"}),
    ("select_compare", lambda a, b: gf.where(a > b, a * b, a + b) + gf.minimum(a, b),
     [_x(3, 4), _x(3, 4)], {"Greater", "Minimum"}),
    ("reductions", lambda x: gf.reduce_sum(x, 1) + gf.reduce_mean(x, 1)
     + gf.reduce_max(x, 1) + gf.reduce_prod(x, 1), [_x(3, 4)],
     {"Sum", "Mean", "Max", "Prod"}),
    ("matmul", lambda a, b: gf.matmul(a, b, transpose_b=True), [_x(3, 4), _x(5, 4)],
     {"MatMul"}),
    ("batch_matmul", lambda a, b: gf.matmul(a, b, adjoint_a=True), [_x(2, 4, 3), _x(2, 4, 5)],
     {"BatchMatMulV2"}),
    ("einsum", lambda a, b: gf.einsum("ij,jk->ik", a, b), [_x(3, 4), _x(4, 2)], {"Einsum"}),
    ("reshape_transpose", lambda x: gf.transpose(gf.reshape(x * 2.0, [4, 3]), [1, 0]),
     [_x(3, 4)], {"Transpose"}),
    ("concat_stack", lambda a, b: gf.concat([a, b], 1) + gf.reduce_sum(gf.stack([a, b]), 0)
     [:, :1], [_x(3, 2), _x(3, 2)], {"ConcatV2", "Pack", "StridedSlice"}),
    ("unstack", lambda x: gf.add_n(gf.unstack(x * 1.5, axis=1)), [_x(3, 4)], {"Unpack"}),
    ("slices", lambda x: gf.slice(x * 2.0, [1, 0], [2, 3]) + x[1:3, ::-1][:, :3], [_x(3, 4)],
     {"Slice", "StridedSlice"}),
    ("pad_tile", lambda x: gf.pad(x * 2.0, [[1, 0], [0, 2]]) + gf.tile(x[:1], [4, 2])[:, :6],
     [_x(3, 4)], {"Pad", "Tile"}),
    ("gather", lambda x: gf.gather(x * 2.0, [2, 0, 2], axis=0), [_x(3, 4)], {"GatherV2"}),
    ("activations", lambda x: gf.nn.relu(x) + gf.nn.relu6(3 * x) + gf.nn.elu(x)
     + gf.nn.selu(x) + gf.nn.softplus(x) + gf.nn.leaky_relu(x), [_x(3, 4)],
     {"Relu", "Relu6", "Elu", "Selu", "Softplus", "LeakyRelu"}),
    ("softmaxes", lambda x: gf.nn.softmax(x) * gf.nn.log_softmax(x * 0.5), [_x(3, 4)],
     {"Softmax", "LogSoftmax"}),
    ("softmax_xent", lambda a, b: gf.nn.softmax_cross_entropy_with_logits_v2(
        labels=gf.nn.softmax(b), logits=a), [_x(3, 4), _x(3, 4)],
     {"SoftmaxCrossEntropyWithLogits"}),
    ("sparse_xent", lambda a: gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=gf.constant([1, 0, 3]), logits=a * 1.0), [_x(3, 4)],
     {"SparseSoftmaxCrossEntropyWithLogits"}),
    ("bias_add", lambda x, b: gf.nn.bias_add(x * 1.0, b), [_x(2, 3, 4), _x(4)],
     {"BiasAdd"}),
    ("conv2d", lambda x, w: gf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME"),
     [_x(2, 5, 5, 2), _x(3, 3, 2, 3)], {"Conv2D"}),
    ("conv2d_valid", lambda x, w: gf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"),
     [_x(1, 4, 4, 2), _x(2, 2, 2, 2)], {"Conv2D"}),
    ("max_pool", lambda x: gf.nn.max_pool(x * 1.0, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
     [_x(2, 5, 5, 2)], {"MaxPool"}),
    ("avg_pool", lambda x: gf.nn.avg_pool(x * 1.0, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
     [_x(2, 5, 5, 2)], {"AvgPool"}),
    ("cast_one_hot", lambda x: gf.one_hot(gf.cast(gf.abs(x[:, 0]) * 2, gf.int32), 4,
                                          dtype=gf.float64) * x, [_x(3, 4)], {"OneHot", "Cast"}),
]


@pytest.mark.parametrize("build,inputs,lowered", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_xla_values_and_gradients_match_numpy(build, inputs, lowered):
    assert_lowered_like_numpy(build, inputs, lowered, tolerance=1e-10)


@pytest.mark.parametrize("build,inputs", [
    (lambda x: gf.reduce_sum(gf.tanh(x) * gf.nn.softmax(x), 1), [_x(3, 4)]),
    (lambda x, w: gf.nn.max_pool(gf.nn.relu(gf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")),
                                 [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
     [_x(1, 4, 4, 2), _x(2, 2, 2, 3)]),
    (lambda a, b: gf.matmul(gf.nn.sigmoid(a), b), [_x(2, 3), _x(3, 2)]),
], ids=["tanh_softmax", "conv_relu_pool", "sigmoid_matmul"])
def test_gradient_checks_pass_under_xla(build, inputs):
    graph = gf.Graph()
    with graph.as_default():
        xs = [gf.placeholder(gf.float64, v.shape) for v in inputs]
        y = build(*xs)
        with gf.Session(graph=graph, config=jit_config()):
            error = gf.test.compute_gradient_error(xs, [v.shape for v in inputs], y,
                                                   y.shape.as_list(), x_init_value=inputs,
                                                   delta=1e-6)
    assert error < 1e-6


def test_float32_keeps_its_dtype_and_int_ops_compile():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [4])
        i = gf.placeholder(gf.int32, [4])
        y = gf.reduce_sum(x * 2.0) + gf.cast(gf.reduce_sum(i * 3), gf.float32)
        with gf.Session(graph=graph, config=jit_config()) as sess:
            value = sess.run(y, {x: np.arange(4, dtype=np.float32), i: np.arange(4)})
    assert value.dtype == np.float32 and value == 12.0 + 18.0


def test_float64_graphs_keep_their_precision_when_other_code_turns_x64_off():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float64, [3])
        y = gf.reduce_sum(gf.exp(x) * 1e-3)
        with gf.Session(graph=graph, config=jit_config()) as sess:
            sess.run(y, {x: np.zeros(3)})
            jax.config.update("jax_enable_x64", False)  # as a JAX user's code may
            try:
                value = sess.run(y, {x: np.full(3, 1e-9)})
            finally:
                jax.config.update("jax_enable_x64", True)
    assert value.dtype == np.float64
    np.testing.assert_allclose(value, np.sum(np.exp(np.full(3, 1e-9)) * 1e-3), rtol=1e-15)
