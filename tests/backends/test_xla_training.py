"""Whole training steps compiled by XLA give the NumPy backend's losses and variables."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import clustered_op_types, jit_config

pytest.importorskip("jax")

OPTIMIZERS = {
    "sgd": lambda: gf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda: gf.train.AdamOptimizer(0.01),
    "adagrad": lambda: gf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: gf.train.RMSPropOptimizer(0.01, momentum=0.5),
}
APPLY_OPS = {"sgd": "ApplyGradientDescent", "momentum": "ApplyMomentum", "adam": "ApplyAdam",
             "adagrad": "ApplyAdagrad", "rmsprop": "ApplyRMSProp"}


def _init(rng, shape, scale):
    return gf.constant_initializer(rng.standard_normal(shape) * scale)


def _mlp(x, labels, rng):
    flat = gf.reshape(x, [8, -1])
    h = gf.layers.dense(flat, 16, activation=gf.nn.relu,
                        kernel_initializer=_init(rng, (48, 16), 0.2))
    h = gf.layers.dense(h, 12, activation=gf.nn.tanh,
                        kernel_initializer=_init(rng, (16, 12), 0.3))
    logits = gf.layers.dense(h, 5, kernel_initializer=_init(rng, (12, 5), 0.3))
    return gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))


def _cnn(x, labels, rng):
    h = gf.layers.conv2d(x, 4, 3, padding="same", activation=gf.nn.relu,
                         kernel_initializer=_init(rng, (3, 3, 3, 4), 0.3))
    h = gf.layers.max_pooling2d(h, 2, 2)
    h = gf.layers.average_pooling2d(h, 2, 1, padding="same")
    logits = gf.layers.dense(gf.reshape(h, [8, -1]), 5,
                             kernel_initializer=_init(rng, (16, 5), 0.3))
    return gf.reduce_mean(gf.nn.softmax_cross_entropy_with_logits_v2(
        labels=gf.one_hot(labels, 5, dtype=logits.dtype), logits=logits))


def _train(model, optimizer, config, dtype):
    rng = np.random.default_rng(3)
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(dtype, [8, 4, 4, 3])
        labels = gf.placeholder(gf.int32, [8])
        loss = model(x, labels, rng)
        train = OPTIMIZERS[optimizer]().minimize(loss)
        data = np.random.default_rng(4)
        feeds = [{x: data.standard_normal((8, 4, 4, 3)), labels: data.integers(0, 5, 8)}
                 for _ in range(4)]
        with gf.Session(graph=graph, config=config) as sess:
            sess.run(gf.global_variables_initializer())
            losses = [sess.run([loss, train], feed)[0] for feed in feeds]
            variables = sess.run(gf.global_variables())
        types = clustered_op_types(graph, [loss], [x, labels], [train]) if config else None
    return losses, variables, types


# JAX compiles each training step in ~1 s: the SGD steps run by default, the rest with -m slow
@pytest.mark.parametrize("optimizer", ["sgd"] + [pytest.param(name, marks=pytest.mark.slow)
                                                 for name in ("momentum", "adam", "adagrad",
                                                              "rmsprop")])
@pytest.mark.parametrize("model", [_mlp, _cnn], ids=["mlp", "cnn"])
def test_training_steps_match_numpy(model, optimizer):
    want_losses, want_vars, _ = _train(model, optimizer, None, gf.float64)
    losses, variables, types = _train(model, optimizer, jit_config(), gf.float64)
    assert APPLY_OPS[optimizer] in types
    np.testing.assert_allclose(losses, want_losses, rtol=1e-9)
    for got, want in zip(variables, want_vars, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_float32_mlp_step_matches_numpy_within_float_tolerance():
    want_losses, want_vars, _ = _train(_mlp, "adam", None, gf.float32)
    losses, variables, _ = _train(_mlp, "adam", jit_config(), gf.float32)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for got, want in zip(variables, want_vars, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
