"""Input pipeline throughput: ``TFRecordDataset -> map(parse) -> shuffle -> batch -> prefetch``
feeding a small model, gradflow vs TensorFlow 2.x ``compat.v1`` in the same run.

The records are ``tf.train.Example``s (64 float features, an int64 label) written once by
gradflow's ``TFRecordWriter``. Three measures per library:

* pipeline elements/s: ``sess.run(get_next)`` alone, batches of 64;
* training step with the pipeline: one SGD step of a 64-128-10 MLP on ``get_next``
  (mean over a block of steps);
* training step fed NumPy arrays: the same step with ``feed_dict`` batches (likewise);

and the ratio of the last two (target: <= 1.1, the pipeline never starves the step).

    python benchmarks/input_pipeline.py [--records 8192] [--steps 100] [--parallel 0]

Run it with ``/opt/tfenv/bin/python`` and ``PYTHONPATH`` at this tree to get the
TensorFlow column; without TensorFlow that column shows "-".
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import gradflow as gf

FEATURES, HIDDEN, CLASSES, BATCH = 64, 128, 10, 64


def load_tf():
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf  # optional: only for the comparison column
    except ImportError:
        return None
    tf.get_logger().setLevel("ERROR")
    tf.disable_v2_behavior()
    return tf


def write_records(path: str, count: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((count, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, count)
    with gf.python_io.TFRecordWriter(path) as writer:
        for row, label in zip(x, y, strict=True):
            example = gf.train.Example(features=gf.train.Features(feature={
                "x": gf.train.Feature(float_list=gf.train.FloatList(value=row)),
                "y": gf.train.Feature(int64_list=gf.train.Int64List(value=[label]))}))
            writer.write(example.SerializeToString())
    return x


def build(tf, path: str, parallel: int, vectorized: bool):
    """(graph, next batch, train op on the pipeline, placeholders and train op fed).

    ``vectorized``: batch the serialized records first and parse each batch with one
    ``parse_example`` (TF's advice for fast pipelines), instead of one
    ``parse_single_example`` per record.
    """
    graph = tf.Graph()
    with graph.as_default():
        spec = {"x": tf.FixedLenFeature([FEATURES], tf.float32),
                "y": tf.FixedLenFeature([], tf.int64)}

        def parse(record):
            parsed = (tf.parse_example if vectorized else tf.parse_single_example)(record, spec)
            return parsed["x"], parsed["y"]

        dataset = tf.data.TFRecordDataset(path)
        if vectorized:
            dataset = dataset.shuffle(1024, seed=1).batch(BATCH, drop_remainder=True)
            dataset = dataset.map(parse, num_parallel_calls=parallel or None).repeat()
        else:
            dataset = dataset.map(parse, num_parallel_calls=parallel or None)
            dataset = dataset.shuffle(1024, seed=1).batch(BATCH, drop_remainder=True).repeat()
        element = tf.data.make_one_shot_iterator(dataset.prefetch(4)).get_next()
        px = tf.placeholder(tf.float32, [BATCH, FEATURES])
        py = tf.placeholder(tf.int64, [BATCH])

        with tf.variable_scope("mlp", reuse=tf.AUTO_REUSE):
            def loss(x, y):
                w1 = tf.get_variable("w1", [FEATURES, HIDDEN],
                                     initializer=tf.truncated_normal_initializer(0.0, 0.1, 1))
                w2 = tf.get_variable("w2", [HIDDEN, CLASSES],
                                     initializer=tf.truncated_normal_initializer(0.0, 0.1, 2))
                logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
                return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=logits))

            optimizer = tf.train.GradientDescentOptimizer(0.01)
            train_pipeline = optimizer.minimize(loss(*element))
            train_fed = optimizer.minimize(loss(px, py))
        init = tf.global_variables_initializer()
    return graph, element, train_pipeline, (px, py, train_fed), init


def measure(tf, path: str, x: np.ndarray, steps: int, parallel: int, vectorized: bool) -> dict:
    graph, element, train_pipeline, (px, py, train_fed), init = build(tf, path, parallel,
                                                                      vectorized)
    labels = np.random.default_rng(1).integers(0, CLASSES, len(x))
    batches = [(x[i:i + BATCH], labels[i:i + BATCH])
               for i in range(0, len(x) - BATCH + 1, BATCH)]
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(5):  # warm up: plans compiled, buffers filled
            sess.run(element)
            sess.run(train_pipeline)
        start = time.perf_counter()
        for _ in range(steps):
            sess.run(element)
        pipeline_s = (time.perf_counter() - start) / steps
        # each measure in a block of its own, as a training loop runs: a pipeline slower
        # than the step shows as waiting, the prefetch buffer (4 batches) hides little
        start = time.perf_counter()
        for i in range(steps):
            bx, by = batches[i % len(batches)]
            sess.run(train_fed, {px: bx, py: by})
        fed_s = (time.perf_counter() - start) / steps
        start = time.perf_counter()
        for _ in range(steps):
            sess.run(train_pipeline)
        piped_s = (time.perf_counter() - start) / steps
    return {"elements_per_s": BATCH / pipeline_s, "step_fed_ms": 1e3 * fed_s,
            "step_pipeline_ms": 1e3 * piped_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=0,
                        help="map num_parallel_calls (0: sequential map)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "examples.tfrecord")
        x = write_records(path, args.records)
        tf = load_tf()
        for vectorized in (False, True):
            results = {"gradflow": measure(gf, path, x, args.steps, args.parallel, vectorized),
                       "tensorflow": measure(tf, path, x, args.steps, args.parallel, vectorized)
                       if tf else None}
            report(results, args, vectorized)


def report(results: dict, args, vectorized: bool) -> None:
    layout = ("TFRecordDataset -> shuffle -> batch -> map(parse_example) -> prefetch"
              if vectorized else
              "TFRecordDataset -> map(parse_single_example) -> shuffle -> batch -> prefetch")
    print(f"\n{layout}")
    print(f"records {args.records}, batch {BATCH}, MLP {FEATURES}-{HIDDEN}-{CLASSES}, "
          f"{args.steps} steps, map num_parallel_calls={args.parallel or None}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'':34}{'gradflow':>12}{'tensorflow':>12}")
    rows = (("pipeline elements/s", "elements_per_s", "{:12.0f}"),
            ("train step, fed NumPy (ms)", "step_fed_ms", "{:12.3f}"),
            ("train step, pipeline (ms)", "step_pipeline_ms", "{:12.3f}"))
    for title, key, fmt in rows:
        cells = [fmt.format(r[key]) if r else f"{'-':>12}" for r in results.values()]
        print(f"{title:34}{''.join(cells)}")
    ratios = [f"{r['step_pipeline_ms'] / r['step_fed_ms']:12.2f}" if r else f"{'-':>12}"
              for r in results.values()]
    print(f"{'pipeline / fed step (<= 1.1)':34}{''.join(ratios)}")


if __name__ == "__main__":
    main()
