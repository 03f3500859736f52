"""Convolutional training steps for gradflow and TensorFlow (TF1 graph mode): the models of
``deep_mnist_step`` and ``vgg_block_step``, their FLOPs and NumPy's GEMM rate.

A model is a list of layers over shared NumPy initial weights:
``("conv", w, b, pool)`` a 'SAME' convolution with HWIO filter ``w`` (any kernel size),
bias and ReLU, then 2x2 max pooling when ``pool``; ``("flatten",)``;
``("dense", w, b, relu)``; ``("dropout", keep_prob)``.
"""
from __future__ import annotations

import time
import tracemalloc
from typing import Callable

import numpy as np

from common import load
RATE_SIZE = 1024  # the GEMM whose rate bounds a step: float32 [n, n] @ [n, n]


def graph_step(module, layers: list, x_value: np.ndarray, y_value: np.ndarray,
               optimizer: Callable) -> Callable[[], object]:
    """``sess.run(train_op, feed)`` of the model in gradflow or TF1 graph mode."""
    graph = module.Graph()
    with graph.as_default():
        module.set_random_seed(0)
        x = module.placeholder(module.float32, x_value.shape, name="x")
        y = module.placeholder(module.int32, y_value.shape, name="y")
        h = x
        for layer in layers:
            h = _layer(module, layer, h)
        loss = module.reduce_mean(
            module.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = optimizer(module).minimize(loss)
        init = module.global_variables_initializer()
    session = module.Session(graph=graph)
    session.run(init)
    feed = {x: x_value, y: y_value}
    return lambda: session.run(train, feed)


def _layer(module, layer: tuple, h):
    nn = module.nn
    kind = layer[0]
    if kind == "flatten":
        dims = h.shape.as_list()
        return module.reshape(h, [dims[0], int(np.prod(dims[1:]))])
    if kind == "dropout":
        return nn.dropout(h, keep_prob=layer[1])
    w, b = module.Variable(layer[1]), module.Variable(layer[2])
    if kind == "conv":
        h = nn.relu(nn.bias_add(nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME"), b))
        return nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                           padding="VALID") if layer[3] else h
    h = nn.bias_add(module.matmul(h, w), b)
    return nn.relu(h) if layer[3] else h


def step_flops(layers: list, input_shape: tuple) -> int:
    """The FLOPs of one step's matrix products done as im2col GEMMs: forward,
    filter/weight gradient, and the input gradient of every layer but the first."""
    shapes = []
    n, height, width, _ = input_shape
    first = True
    for layer in layers:
        if layer[0] == "conv":
            kh, kw, c_in, c_out = layer[1].shape
            rows, inner = n * height * width, kh * kw * c_in
            shapes += [(rows, inner, c_out), (inner, rows, c_out)]
            if not first:
                shapes.append((rows, c_out, inner))
            if layer[3]:
                height, width = height // 2, width // 2
        elif layer[0] == "dense":
            fan_in, fan_out = layer[1].shape
            shapes += [(n, fan_in, fan_out), (fan_in, n, fan_out)]
            if not first:
                shapes.append((n, fan_out, fan_in))
        else:
            continue
        first = False
    return sum(2 * rows * inner * cols for rows, inner, cols in shapes)


def candidates(layers: list, x: np.ndarray, y: np.ndarray, optimizer: Callable) -> tuple:
    """Step callables of gradflow, TensorFlow (when importable) and a reference NumPy
    GEMM ("gemm", ``RATE_SIZE`` cubed), the step's FLOPs and the reference's FLOPs."""
    steps = {"gradflow": graph_step(load("gradflow"), layers, x, y, optimizer)}
    tf = load("tensorflow")
    if tf is not None:
        steps["tensorflow"] = graph_step(tf, layers, x, y, optimizer)
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((RATE_SIZE, RATE_SIZE)).astype(np.float32) for _ in range(2))
    steps["gemm"] = lambda: np.matmul(a, b)
    return steps, step_flops(layers, x.shape), 2 * RATE_SIZE ** 3


def peak_bytes(step: Callable[[], object]) -> int:
    """Peak NumPy allocation of one step above what existed before it (tracemalloc)."""
    step()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before


# Op types whose kernels ``op_times`` reports: the convolution and pooling families.
WINDOW_OP_TYPES = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
                   "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "DepthwiseConv2dNative")


def op_times(layers: list, x: np.ndarray, y: np.ndarray, optimizer: Callable,
             repeats: int = 10) -> dict:
    """Median CPU milliseconds per step spent in each window op type's gradflow kernel
    (the registered kernels wrapped with timers for the whole run), plus ``"step"``."""
    gradflow = load("gradflow")
    get_op_def = gradflow.framework.registry.get_op_def
    spent: dict = {}
    originals = {}
    for op_type in WINDOW_OP_TYPES:
        op_def = get_op_def(op_type)
        originals[op_type] = op_def.kernel

        def timed_kernel(*args, _kernel=op_def.kernel, _type=op_type, **attrs):
            start = time.process_time()
            try:
                return _kernel(*args, **attrs)
            finally:
                spent[_type] = spent.get(_type, 0.0) + time.process_time() - start
        op_def.kernel = timed_kernel
    try:
        step = graph_step(gradflow, layers, x, y, optimizer)
        for _ in range(3):
            step()
        samples: dict = {}
        for _ in range(repeats):
            spent.clear()
            start = time.process_time()
            step()
            spent["step"] = time.process_time() - start
            for name, value in spent.items():
                samples.setdefault(name, []).append(value * 1e3)
    finally:
        for op_type, kernel in originals.items():
            get_op_def(op_type).kernel = kernel
    return {name: float(np.median(values)) for name, values in samples.items()}


def op_times_text(layers: list, x: np.ndarray, y: np.ndarray, optimizer: Callable,
                  repeats: int = 10) -> str:
    """``op_times`` as one line: CPU ms per step in each window kernel and in the step."""
    times = op_times(layers, x, y, optimizer, repeats)
    return (f"gradflow CPU ms per step (median of {repeats}): "
            + ", ".join(f"{name} {value:.1f}" for name, value in times.items()))
