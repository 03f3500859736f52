"""Graph building with ``tf.layers``: a small CNN classifier, built from scratch per round.

The same TF1 program (variable scopes, conv2d, max pooling, batch normalization with its
update ops, dense, dropout, ``tf.losses.sparse_softmax_cross_entropy``, Adam's
``minimize`` under ``control_dependencies(UPDATE_OPS)`` and the initializer) is built
into a new graph by gradflow and by TensorFlow 2.x in TF1 graph mode (``tf.compat.v1``
with tf-keras' legacy layers, which ``common.py`` selects), timed in the same rounds.
JAX and PyTorch have no graph to build, so they are not shown.

    python benchmarks/layers_build.py [--blocks 4] [--repeats 7]
"""
from __future__ import annotations

import argparse
import sys

from common import Table, load, ms, print_tables, ratio_text, time_interleaved, verdict

LIBRARIES = ("gradflow", "tensorflow")


def build_model(tf, blocks: int) -> int:
    """Builds the training graph of a ``blocks``-deep CNN in a new graph; returns its op count."""
    graph = tf.Graph()
    with graph.as_default():
        images = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        training = tf.placeholder_with_default(False, [], name="training")
        net = images
        for block in range(blocks):
            with tf.variable_scope(f"block{block}"):
                net = tf.layers.conv2d(net, 16, 3, padding="same", activation=tf.nn.relu)
                net = tf.layers.batch_normalization(net, training=training)
                if block < 2:
                    net = tf.layers.max_pooling2d(net, 2, 2)
        net = tf.layers.flatten(net)
        net = tf.layers.dense(net, 64, activation=tf.nn.relu)
        net = tf.layers.dropout(net, rate=0.5, training=training)
        logits = tf.layers.dense(net, 10)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            tf.train.AdamOptimizer(1e-3).minimize(loss)
        tf.global_variables_initializer()
        return len(graph.get_operations())


def tables(blocks: int = 4, repeats: int = 7) -> list[Table]:
    modules = {name: load(name) for name in LIBRARIES}
    candidates = {name: (lambda m=module: build_model(m, blocks))
                  for name, module in modules.items() if module is not None}
    op_counts = {name: fn() for name, fn in candidates.items()}
    times = time_interleaved(candidates, repeats, min_sample_s=0.0)
    table = Table(f"layers_build: ms to build a {blocks}-block tf.layers CNN's training graph "
                  f"(median of {repeats} rounds)",
                  ["library", "ops", "ms", "gradflow/TF", "<=1x"],
                  note="A new graph per build: forward layers, batch-norm updates, the loss, "
                       "Adam's gradients and slots, and the initializer.")
    tf_s = times.get("tensorflow")
    for name in LIBRARIES:
        if name not in times:
            table.add(name, None, None, None, "-")
            continue
        ratio = ratio_text(times[name], tf_s) if name == "gradflow" else None
        met = verdict(times["gradflow"] <= tf_s) if name == "gradflow" and tf_s else "-"
        table.add(name, op_counts[name], ms(times[name]), ratio, met)
    return [table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print_tables(tables(args.blocks, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
