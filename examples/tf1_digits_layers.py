"""A TF1-style program on gradflow: classify the bundled 8x8 handwritten digits.

Written as a TensorFlow 1.x program is (variable scopes, ``tf.layers`` dense + batch norm
+ dropout, ``tf.losses``, ``tf.metrics.accuracy``, an ``exponential_decay`` learning
rate, ``UPDATE_OPS``, a ``Saver``); only the import differs. Run::

    python examples/tf1_digits_layers.py [--steps 600] [--save /tmp/digits.ckpt]
"""
from __future__ import annotations

import argparse
import importlib.resources
import os
import tempfile

import numpy as np

import gradflow as tf


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 digit images as float32 rows in [0, 1] and their int64 labels."""
    path = importlib.resources.files("gradflow").joinpath("data/digits.npz")
    with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
        images, labels = data["images"], data["labels"]
    return images.reshape(len(images), -1).astype(np.float32) / 16.0, labels.astype(np.int64)


def build_model(images, training):
    """64 -> 128 -> 64 -> 10 with batch norm and dropout after each hidden layer."""
    with tf.variable_scope("model"):
        hidden = images
        for units in (128, 64):
            hidden = tf.layers.dense(hidden, units, use_bias=False)
            hidden = tf.layers.batch_normalization(hidden, training=training)
            hidden = tf.nn.relu(hidden)
            hidden = tf.layers.dropout(hidden, rate=0.2, training=training)
        return tf.layers.dense(hidden, 10, name="logits")


def main(steps: int = 600, batch_size: int = 64, save_path: str | None = None,
         seed: int = 0) -> float:
    images, labels = load_digits()
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:360], order[360:]

    tf.reset_default_graph()
    tf.set_random_seed(seed)
    x = tf.placeholder(tf.float32, [None, 64], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    training = tf.placeholder_with_default(False, [], name="training")

    logits = build_model(x, training)
    tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    loss = tf.losses.get_total_loss()
    predictions = tf.argmax(logits, axis=1)
    accuracy, accuracy_update = tf.metrics.accuracy(labels=y, predictions=predictions)

    global_step = tf.train.get_or_create_global_step()
    learning_rate = tf.train.exponential_decay(0.01, global_step, decay_steps=100,
                                               decay_rate=0.8, staircase=True)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss,
                                                                  global_step=global_step)
    saver = tf.train.Saver()

    rng = np.random.default_rng(seed + 1)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for step in range(steps):
            batch = rng.choice(train, batch_size, replace=False)
            _, value = sess.run([train_op, loss], {x: images[batch], y: labels[batch],
                                                   training: True})
            if step % 100 == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {value:.4f}  "
                      f"learning rate {sess.run(learning_rate):.5f}")
        sess.run(accuracy_update, {x: images[test], y: labels[test]})
        test_accuracy = float(sess.run(accuracy))
        print(f"test accuracy {test_accuracy:.4f} on {len(test)} held-out digits")
        path = save_path or os.path.join(tempfile.mkdtemp(), "digits.ckpt")
        print("saved to", saver.save(sess, path, global_step=global_step))
    return test_accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--save", default=None, help="checkpoint path prefix")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.batch_size, args.save, args.seed)
