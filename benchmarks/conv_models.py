"""Convolutional training steps for gradflow and TensorFlow (TF1 graph mode): the models of
``deep_mnist_step`` and ``vgg_block_step``, their FLOPs and the NumPy GEMM bound.

A model is a list of layers over shared NumPy initial weights:
``("conv", w, b, pool)`` a 'SAME' convolution with HWIO filter ``w`` (any kernel size),
bias and ReLU, then 2x2 max pooling when ``pool``; ``("flatten",)``;
``("dense", w, b, relu)``; ``("dropout", keep_prob)``.
"""
from __future__ import annotations

import tracemalloc
from typing import Callable

import numpy as np

from common import load
from mlp_step import numpy_matmuls


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


def gemm_shapes(layers: list, input_shape: tuple) -> list[tuple]:
    """(rows, inner, cols, transpose_a, transpose_b) of every matrix product of one step
    done as im2col GEMMs: forward, filter/weight gradient, and the input gradient of
    every layer but the first."""
    shapes = []
    n, height, width, _ = input_shape
    features = None
    first = True
    for layer in layers:
        if layer[0] == "conv":
            kh, kw, c_in, c_out = layer[1].shape
            rows, inner = n * height * width, kh * kw * c_in
            shapes += [(rows, inner, c_out, False, False), (inner, rows, c_out, True, False)]
            if not first:
                shapes.append((rows, c_out, inner, False, True))
            if layer[3]:
                height, width = height // 2, width // 2
            features = height * width * c_out
        elif layer[0] == "dense":
            fan_in, fan_out = layer[1].shape
            shapes += [(n, fan_in, fan_out, False, False), (fan_in, n, fan_out, True, False)]
            if not first:
                shapes.append((n, fan_out, fan_in, False, True))
        else:
            continue
        first = False
    del features
    return shapes


def candidates(layers: list, x: np.ndarray, y: np.ndarray, optimizer: Callable) -> tuple:
    """Step callables of gradflow, TensorFlow (when importable) and the NumPy GEMM bound,
    and the step's FLOPs."""
    steps = {"gradflow": graph_step(load("gradflow"), layers, x, y, optimizer)}
    tf = load("tensorflow")
    if tf is not None:
        steps["tensorflow"] = graph_step(tf, layers, x, y, optimizer)
    steps["bound"], flops = numpy_matmuls(gemm_shapes(layers, x.shape))
    return steps, flops


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
