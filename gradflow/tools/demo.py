"""``gradflow demo``: train a small MLP on the handwritten digits and show what happened.

Trains a 64-64-10 ReLU network on 8x8 digit images (gradflow/data/digits.npz) with
mini-batches, prints a progress bar with the running loss and the held-out accuracy,
and writes into the output folder: the graph as DOT (and SVG when Graphviz is
installed), the same graph as JSON + NPZ, a loss curve (SVG), a checkpoint and
TensorBoard event files (``tensorboard --logdir <output>/tensorboard``: the loss and
accuracy curves, weight histograms and the graph).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from importlib import resources
from typing import Optional, TextIO

import numpy as np

from gradflow.framework.dtypes import float32, int64
from gradflow.framework.graph import Graph, name_scope
from gradflow.ops.array import placeholder
from gradflow.ops.math import argmax, cast, equal, matmul, reduce_mean
from gradflow.ops.nn import relu, sparse_softmax_cross_entropy_with_logits
from gradflow.ops.state import Variable, global_variables_initializer
from gradflow.runtime.executor import required_ops
from gradflow.runtime.session import Session
from gradflow.summary import FileWriter, Summary, histogram, merge_all, scalar
from gradflow.tools.plot import line_chart_svg, moving_average
from gradflow.tools.serialization import save_graph
from gradflow.tools.visualize import graphviz_available, render, to_dot
from gradflow.train import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                            MomentumOptimizer, RMSPropOptimizer, Saver)

__all__ = ["DemoConfig", "DemoResult", "run_demo", "load_digits", "OPTIMIZERS"]

# Steps between two TensorBoard points (loss, weight histograms).
SUMMARY_EVERY = 10
# Default learning rate of each optimizer choice (tuned for this problem).
OPTIMIZERS = {"sgd": 0.5, "momentum": 0.1, "adagrad": 0.1, "rmsprop": 0.003, "adam": 0.01}
HIDDEN_UNITS = 64
BATCH_SIZE = 64
TEST_FRACTION = 0.2


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    steps: int = 1000
    learning_rate: Optional[float] = None
    optimizer: str = "adam"
    output: str = "gradflow-demo"
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class DemoResult:
    test_accuracy: float
    final_loss: float
    seconds: float
    files: list


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 digit images as float32 rows in [0, 1] and their int64 labels."""
    with resources.files("gradflow").joinpath("data/digits.npz").open("rb") as f, \
            np.load(f, allow_pickle=False) as data:
        images, labels = data["images"], data["labels"]
    return images.reshape(len(images), -1).astype(np.float32) / 16.0, labels.astype(np.int64)


def run_demo(config: DemoConfig, out: Optional[TextIO] = None) -> DemoResult:
    """Trains, evaluates and writes the pictures; returns the accuracy and the files.

    Progress and results are written to ``out`` (default: standard output).
    """
    out = out or sys.stdout
    if config.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got "
                         f"{config.optimizer!r}")
    if config.steps < 1:
        raise ValueError(f"steps must be positive, got {config.steps}")
    start = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    train_x, train_y, test_x, test_y = _split(*load_digits(), rng)
    learning_rate = config.learning_rate or OPTIMIZERS[config.optimizer]
    out.write(f"Training a {train_x.shape[1]}-{HIDDEN_UNITS}-10 MLP on {len(train_x)} "
              f"handwritten digits ({len(test_x)} held out) with {config.optimizer}, "
              f"learning rate {learning_rate:g}, {config.steps} steps of {BATCH_SIZE}.\n")
    graph = Graph()
    with graph.as_default():
        model = _Model(rng, config.optimizer, learning_rate)
        # The picture shows what a training step runs, not the variable initialisers.
        picture_ops = required_ops([model.accuracy], [model.train_op], set())
        saver = Saver(max_to_keep=1)
        logdir = os.path.join(config.output, "tensorboard")
        with Session(graph=graph) as sess, FileWriter(logdir, graph) as writer:
            sess.run(global_variables_initializer())
            losses = _train(sess, model, train_x, train_y, config, rng, out, writer)
            accuracy = float(sess.run(model.accuracy, {model.images: test_x,
                                                       model.labels: test_y}))
            writer.add_summary(Summary(value=[Summary.Value(
                tag="test_accuracy", simple_value=accuracy)]), config.steps)
            os.makedirs(config.output, exist_ok=True)
            files = [saver.save(sess, os.path.join(config.output, "checkpoints", "model"),
                                global_step=config.steps) + ".index", logdir]
    seconds = time.perf_counter() - start
    out.write(f"Test accuracy: {accuracy:.4f} ({round(accuracy * len(test_x))}/{len(test_x)}) "
              f"after {seconds:.1f} s\n")
    files += _write_pictures(graph, picture_ops, losses, config, out)
    out.write("Wrote:\n" + "".join(f"  {path}\n" for path in files))
    out.write(f"See the training run in TensorBoard: tensorboard --logdir {logdir} "
              "(then open http://localhost:6006)\n")
    return DemoResult(accuracy, losses[-1], seconds, files)


def _split(images, labels, rng):
    order = rng.permutation(len(images))
    test = order[:int(round(TEST_FRACTION * len(images)))]
    train = order[len(test):]
    return images[train], labels[train], images[test], labels[test]


class _Model:
    """The network, its loss, accuracy and train op, built in the default graph."""

    def __init__(self, rng, optimizer: str, learning_rate: float):
        self.images = placeholder(float32, [None, 64], name="images")
        self.labels = placeholder(int64, [None], name="labels")
        with name_scope("hidden"):
            hidden = relu(matmul(self.images, _weights(rng, 64, HIDDEN_UNITS))
                          + Variable(np.zeros(HIDDEN_UNITS, np.float32), name="bias"))
        with name_scope("output"):
            logits = matmul(hidden, _weights(rng, HIDDEN_UNITS, 10)) + \
                Variable(np.zeros(10, np.float32), name="bias")
        self.loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(
            labels=self.labels, logits=logits), name="loss")
        correct = equal(argmax(logits, 1), self.labels)
        self.accuracy = reduce_mean(cast(correct, float32), name="accuracy")
        self.train_op = _optimizer(optimizer, learning_rate).minimize(self.loss)
        scalar("training_loss", self.loss)
        scalar("batch_accuracy", self.accuracy)
        for weights in (hidden, logits):
            histogram(weights.op.name.split("/")[0] + "_activations", weights)
        self.summary = merge_all()


def _weights(rng, fan_in: int, fan_out: int):
    """He-initialised weights (drawn from the demo's seeded NumPy generator)."""
    scale = np.sqrt(2.0 / fan_in)
    return Variable(rng.normal(0.0, scale, (fan_in, fan_out)).astype(np.float32),
                    name="weights")


def _optimizer(name: str, learning_rate: float):
    return {"sgd": lambda: GradientDescentOptimizer(learning_rate),
            "momentum": lambda: MomentumOptimizer(learning_rate, 0.9),
            "adagrad": lambda: AdagradOptimizer(learning_rate),
            "rmsprop": lambda: RMSPropOptimizer(learning_rate),
            "adam": lambda: AdamOptimizer(learning_rate)}[name]()


def _train(sess, model: _Model, images, labels, config: DemoConfig, rng, out,
           writer: FileWriter) -> list[float]:
    progress = ProgressBar(config.steps, out)
    losses = []
    for step in range(1, config.steps + 1):
        batch = rng.integers(0, len(images), BATCH_SIZE)
        feed = {model.images: images[batch], model.labels: labels[batch]}
        if step % SUMMARY_EVERY == 0 or step == 1:
            _, loss, summary = sess.run([model.train_op, model.loss, model.summary], feed)
            writer.add_summary(summary, step)
        else:
            _, loss = sess.run([model.train_op, model.loss], feed)
        losses.append(float(loss))
        recent = losses[-50:]
        progress.update(step, sum(recent) / len(recent))
    progress.close()
    return losses


class ProgressBar:
    """``[#####.....] 120/300 loss 0.4321`` on one line (a line per 10% when not a TTY)."""

    def __init__(self, total: int, out: TextIO, width: int = 30):
        self._total = total
        self._out = out
        self._width = width
        self._tty = hasattr(out, "isatty") and out.isatty()
        self._next_line = 0

    def update(self, step: int, loss: float) -> None:
        if self._tty:
            self._out.write("\r" + self._line(step, loss))
            self._out.flush()
        elif step >= self._next_line or step == self._total:
            self._out.write(self._line(step, loss) + "\n")
            self._next_line = step + max(self._total // 10, 1)

    def close(self) -> None:
        if self._tty:
            self._out.write("\n")

    def _line(self, step: int, loss: float) -> str:
        filled = self._width * step // self._total
        bar = "#" * filled + "." * (self._width - filled)
        digits = len(str(self._total))
        return f"[{bar}] {step:>{digits}}/{self._total} loss {loss:.4f}"


def _write_pictures(graph, picture_ops, losses, config: DemoConfig, out) -> list[str]:
    directory = config.output
    dot = to_dot(picture_ops, title=f"gradflow demo: MLP on digits ({config.optimizer})")
    files = [os.path.join(directory, "graph.dot")]
    with open(files[0], "w", encoding="utf-8") as f:
        f.write(dot)
    if graphviz_available():
        files.append(render(dot, os.path.join(directory, "graph.svg")))
    else:
        out.write("Graphviz's 'dot' program is not installed, so the graph is written as "
                  "graph.dot only (install graphviz, e.g. apt-get install graphviz, to get "
                  "graph.svg).\n")
    files += list(save_graph(graph, os.path.join(directory, "graph")))
    curve = os.path.join(directory, "loss.svg")
    with open(curve, "w", encoding="utf-8") as f:
        f.write(line_chart_svg(
            [("mini-batch loss", losses, "#9ecae1"),
             ("moving average (50 steps)", moving_average(losses, 50), "#08519c")],
            title="Training loss", x_label="step", y_label="cross-entropy"))
    files.append(curve)
    return files
