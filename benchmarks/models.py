"""The models of the training-step benchmarks, written once per library.

A model is a list of layers over shared NumPy initial weights, so every library starts
from the same parameters and sees the same batch. gradflow and TensorFlow share one
implementation (gradflow's API is TF1's); JAX and PyTorch each get their own.

Layers: ``("dense", w, b, relu)`` with w [in, out]; ``("conv", w, b)`` a 3x3 'SAME'
convolution with w [kh, kw, in, out] (HWIO), followed by ReLU and 2x2 max pooling;
``("flatten",)``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from common import load

LEARNING_RATE = 0.01


def mlp_layers(sizes, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        layers.append(("dense", w, np.zeros(fan_out, np.float32), i < len(sizes) - 2))
    return layers


def batch(input_shape, classes: int, size: int, seed: int = 1) -> tuple:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, *input_shape)).astype(np.float32)
    return x, rng.integers(0, classes, size).astype(np.int32)


# ------------------------------------------------------------ gradflow and TensorFlow
def graph_train_step(module, layers: list, x_value: np.ndarray,
                     y_value: np.ndarray, config=None) -> Callable[[], object]:
    """One SGD step as ``sess.run(train_op)`` in gradflow or TF1 graph mode (``config``:
    the session's ``ConfigProto``, e.g. one turning XLA on). ``run.sync()`` reads a
    variable back: gradflow's XLA backend may return from a run that fetches nothing
    before its compiled step has finished (TF1's runs return finished steps)."""
    graph = module.Graph()
    with graph.as_default():
        x = module.placeholder(module.float32, x_value.shape, name="x")
        y = module.placeholder(module.int32, y_value.shape, name="y")
        logits = _graph_forward(module, layers, x)
        loss = module.reduce_mean(
            module.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = module.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        init = module.global_variables_initializer()
        first = module.trainable_variables()[0]
    session = module.Session(graph=graph, config=config)
    session.run(init)
    feed = {x: x_value, y: y_value}

    def run():
        return session.run(train, feed)

    run.sync = lambda: session.run(first)
    return run


def _graph_forward(module, layers: list, h):
    nn = module.nn
    for layer in layers:
        if layer[0] == "flatten":
            dims = h.shape.as_list()
            h = module.reshape(h, [dims[0], int(np.prod(dims[1:]))])
            continue
        w, b = module.Variable(layer[1]), module.Variable(layer[2])
        if layer[0] == "conv":
            h = nn.relu(nn.bias_add(nn.conv2d(h, w, strides=1, padding="SAME"), b))
            h = nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
        else:
            h = nn.bias_add(module.matmul(h, w), b)
            h = nn.relu(h) if layer[3] else h
    return h


# ------------------------------------------------------------------------------ JAX
def jax_train_step(layers: list, x_value: np.ndarray, y_value: np.ndarray,
                   blocking: bool = True):
    """One SGD step as a JAX user writes a training loop: ``params = step(params, x, y)``
    with a jitted ``step`` and the NumPy batch passed as it is on every call (JAX copies
    it to the device, as gradflow's session does with a fed batch).

    ``blocking``: each call waits for its step to finish (the benchmarks' other
    libraries return finished steps too). Without it a call only dispatches the step,
    as JAX's asynchronous dispatch does, and ``run.sync()`` waits for the last one:
    time a loop of calls and its ``sync()`` together.
    """
    jax = load("jax")
    jnp, lax = jax.numpy, jax.lax

    def forward(params, h):
        for layer, p in zip(layers, params):
            if layer[0] == "flatten":
                h = h.reshape(h.shape[0], -1)
            elif layer[0] == "conv":
                h = lax.conv_general_dilated(h, p[0], (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
                h = jax.nn.relu(h + p[1])
                h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                      "VALID")
            else:
                h = h @ p[0] + p[1]
                h = jax.nn.relu(h) if layer[3] else h
        return h

    def loss(params, x, y):
        log_p = jax.nn.log_softmax(forward(params, x))
        return -jnp.mean(jnp.take_along_axis(log_p, y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)

    state = [[tuple(jnp.asarray(a) for a in layer[1:3]) for layer in layers]]

    def run():
        state[0] = step(state[0], x_value, y_value)
        if blocking:
            jax.block_until_ready(state[0])

    run.sync = lambda: jax.block_until_ready(state[0])
    return run


# -------------------------------------------------------------------------- PyTorch
def torch_train_step(layers: list, x_value: np.ndarray, y_value: np.ndarray):
    """One SGD step in eager PyTorch: forward, ``backward()``, in-place ``p -= lr * grad``.

    Convolutions run in PyTorch's native NCHW layout (weights OIHW), the same math.
    (``torch.optim`` is avoided: it imports torch._dynamo, whose LLVM clashes with the
    one TensorFlow and JAX load into the same process.)
    """
    torch = load("torch")
    functional = torch.nn.functional
    params = [[torch.tensor(_torch_layout(layer[0], a), requires_grad=True)
               for a in layer[1:3]] for layer in layers]
    flat = [p for pair in params for p in pair]
    image = x_value.ndim == 4
    x = torch.tensor(x_value.transpose(0, 3, 1, 2).copy() if image else x_value)
    y = torch.tensor(y_value.astype(np.int64))

    def forward(h):
        for layer, p in zip(layers, params):
            if layer[0] == "flatten":  # back to NHWC order so dense weights match
                h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
            elif layer[0] == "conv":
                h = functional.relu(functional.conv2d(h, p[0], p[1], padding=1))
                h = functional.max_pool2d(h, 2)
            else:
                h = h @ p[0] + p[1]
                h = functional.relu(h) if layer[3] else h
        return h

    def run():
        functional.cross_entropy(forward(x), y).backward()
        with torch.no_grad():
            for p in flat:
                p.add_(p.grad, alpha=-LEARNING_RATE)
                p.grad = None
    return run


def _torch_layout(kind: str, array: np.ndarray) -> np.ndarray:
    return array.transpose(3, 2, 0, 1).copy() if kind == "conv" and array.ndim == 4 else array


def train_steps(layers: list, x_value: np.ndarray, y_value: np.ndarray) -> dict:
    """A step callable for every installed library."""
    builders = {
        "gradflow": lambda: graph_train_step(load("gradflow"), layers, x_value, y_value),
        "tensorflow": lambda: graph_train_step(load("tensorflow"), layers, x_value, y_value),
        "jax": lambda: jax_train_step(layers, x_value, y_value),
        "torch": lambda: torch_train_step(layers, x_value, y_value),
    }
    return {name: build() for name, build in builders.items() if load(name) is not None}
