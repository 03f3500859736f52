"""One SGD training step of a ``dynamic_rnn`` BasicLSTMCell, gradflow vs TensorFlow.

Batch 32, 128 units, 50 steps, 128-wide float32 inputs; the loss is the mean of the
outputs' squares plus the final state's; forward, backward through the loop, and a
``GradientDescentOptimizer`` update, all in one ``sess.run(train_op)``. The same TF1
program runs in gradflow and, when it is importable, in TensorFlow 2.x's ``compat.v1``
``dynamic_rnn`` (tf-keras' legacy cells), timed in the same rounds. Beside them, the
cost of one loop iteration (forward and backward, and forward alone), taken from the
times at 50 and at 5 steps.

    python benchmarks/lstm_step.py [--repeats 15] [--profile]

For the TensorFlow column run it with TensorFlow's interpreter, this tree and
gradflow's dependencies (SciPy) on the path; without TensorFlow that column shows "-"::

    PYTHONPATH=.:.venv/lib/python3.11/site-packages /opt/tfenv/bin/python \
        benchmarks/lstm_step.py
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.nn.rnn_cell lives in tf-keras

from common import (Table, load, ms, print_tables, ratio_text,  # noqa: E402
                    time_interleaved, verdict)

BATCH, UNITS, DEPTH, STEPS = 32, 128, 128, 50


def _inputs(steps: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((BATCH, steps, DEPTH)).astype(np.float32)


def graph_step(tf, steps: int, train: bool = True):
    """A callable running one training step (or, without ``train``, only the forward
    pass and loss) of the TF1 program in library ``tf``."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(_inputs(steps))
        cell = tf.nn.rnn_cell.BasicLSTMCell(UNITS)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs)) + tf.reduce_mean(tf.square(state.c))
        fetch = tf.train.GradientDescentOptimizer(0.01).minimize(loss) if train else loss
        init = tf.global_variables_initializer()
    session = tf.Session(graph=graph)
    session.run(init)
    return lambda: session.run(fetch)


def measure(repeats: int) -> dict:
    candidates = {}
    for name in ("gradflow", "tensorflow"):
        module = load(name)
        if module is not None:
            candidates[name] = graph_step(module, STEPS)
            candidates[f"{name} (5 steps)"] = graph_step(module, 5)
            candidates[f"{name} forward"] = graph_step(module, STEPS, train=False)
            candidates[f"{name} forward (5 steps)"] = graph_step(module, 5, train=False)
    return time_interleaved(candidates, repeats)


def per_step(times: dict, name: str):
    """Seconds per loop iteration, from the 50- and 5-step runs of ``name``."""
    if name not in times:
        return None
    return (times[name] - times[f"{name} (5 steps)"]) / (STEPS - 5)


def tables(repeats: int) -> list[Table]:
    times = measure(repeats)
    gf_s, tf_s = times["gradflow"], times.get("tensorflow")
    table = Table(f"lstm_step: ms per SGD step (median), dynamic_rnn BasicLSTMCell, batch "
                  f"{BATCH}, {UNITS} units, {STEPS} steps, float32",
                  ["gradflow", "tensorflow", "gf/tf", "<=1x", "gf ms/iter", "tf ms/iter",
                   "gf fwd ms/iter", "tf fwd ms/iter"],
                  note="ms/iter: the cost of one more time step, forward and backward (fwd: "
                       "forward and loss only), from the times at 50 and 5 steps.")
    table.add(ms(gf_s), ms(tf_s), ratio_text(gf_s, tf_s),
              verdict(None if tf_s is None else gf_s <= tf_s),
              ms(per_step(times, "gradflow")), ms(per_step(times, "tensorflow")),
              ms(per_step(times, "gradflow forward")),
              ms(per_step(times, "tensorflow forward")))
    return [table]


def profile(top: int = 25) -> None:
    """cProfile of 20 gradflow steps: where the per-iteration time goes."""
    step = graph_step(load("gradflow"), STEPS)
    step()
    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of gradflow's step instead of the table")
    args = parser.parse_args(argv)
    if args.profile:
        profile()
        return 0
    print_tables(tables(args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
