"""A TF1-style character-level LSTM language model on gradflow.

Trains on the bundled Shakespeare sonnets (``examples/data/sonnets.txt``, public domain)
as a TensorFlow 1.x program does: ``tf.nn.rnn_cell.BasicLSTMCell`` stacked in a
``MultiRNNCell``, ``tf.nn.dynamic_rnn``, an embedding from ``tf.get_variable``, a
``tf.layers.Dense`` softmax layer, Adam with ``clip_by_global_norm``, and a ``Saver``.
Then it restores the checkpoint into a fresh graph and samples text one character at a
time, carrying the LSTM state through placeholders. Only the import differs from TF1::

    python examples/char_lstm.py [--steps 300] [--save /tmp/char_lstm.ckpt]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import tempfile

import numpy as np

import gradflow as tf

TEXT = pathlib.Path(__file__).parent / "data" / "sonnets.txt"
UNITS, LAYERS, EMBEDDING = 96, 2, 24


def load_text() -> tuple[str, list[str]]:
    text = TEXT.read_text(encoding="utf-8")
    return text, sorted(set(text))


class Model:
    """The network, built once for training (batch of windows) and once for sampling
    (one character); the second build shares the first's variables."""

    def __init__(self, vocab_size: int):
        self.vocab_size = vocab_size
        self.cell = tf.nn.rnn_cell.MultiRNNCell(
            [tf.nn.rnn_cell.BasicLSTMCell(UNITS) for _ in range(LAYERS)])
        self.dense = tf.layers.Dense(vocab_size, name="softmax")

    def logits(self, ids, initial_state=None, reuse=None):
        """Logits [batch, time, vocab] and the final LSTM states."""
        with tf.variable_scope("char_lstm", reuse=reuse):
            embedding = tf.get_variable("embedding", [self.vocab_size, EMBEDDING])
            inputs = tf.nn.embedding_lookup(embedding, ids)
            outputs, state = tf.nn.dynamic_rnn(self.cell, inputs, initial_state=initial_state,
                                               dtype=tf.float32)
            return self.dense(outputs), state


def build_training(vocab_size: int, seq_len: int, learning_rate: float = 0.01):
    ids = tf.placeholder(tf.int32, [None, seq_len], name="ids")
    targets = tf.placeholder(tf.int32, [None, seq_len], name="targets")
    model = Model(vocab_size)
    logits, _ = model.logits(ids)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets,
                                                                        logits=logits))
    params = tf.trainable_variables()
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, params), 5.0)
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).apply_gradients(
        list(zip(grads, params)), global_step=global_step)
    return model, ids, targets, loss, train_op


def build_sampler(model: Model):
    """One step of the model: feed a character and the state, get probabilities and the
    next state."""
    char = tf.placeholder(tf.int32, [1, 1], name="char")
    state_in = tuple(tf.nn.rnn_cell.LSTMStateTuple(
        tf.placeholder(tf.float32, [1, UNITS], name=f"c{k}"),
        tf.placeholder(tf.float32, [1, UNITS], name=f"h{k}")) for k in range(LAYERS))
    logits, state_out = model.logits(char, initial_state=state_in, reuse=True)
    return char, state_in, tf.nn.softmax(logits[0, 0]), state_out


def sample(sess, sampler, chars: list[str], prime: str, length: int,
           rng: np.random.Generator, temperature: float = 0.7) -> str:
    char, state_in, probs, state_out = sampler
    index = {c: i for i, c in enumerate(chars)}
    state = [(np.zeros((1, UNITS), np.float32), np.zeros((1, UNITS), np.float32))
             for _ in range(LAYERS)]
    text = prime
    p = None
    for c in prime + "\0" * length:
        if c == "\0":  # generate: draw from the tempered distribution
            weights = np.exp(np.log(np.maximum(p, 1e-12)) / temperature)
            c = chars[rng.choice(len(chars), p=weights / weights.sum())]
            text += c
        feed = {char: [[index[c]]]}
        for (c_in, h_in), (c_val, h_val) in zip(state_in, state, strict=True):
            feed[c_in], feed[h_in] = c_val, h_val
        p, state = sess.run([probs, state_out], feed)
        p = p.astype(np.float64)
    return text


def batches(encoded: np.ndarray, batch_size: int, seq_len: int, rng: np.random.Generator):
    starts = rng.integers(0, len(encoded) - seq_len - 1, batch_size)
    window = np.stack([encoded[s:s + seq_len + 1] for s in starts])
    return window[:, :-1], window[:, 1:]


def main(steps: int = 300, batch_size: int = 16, seq_len: int = 40,
         save_path: str | None = None, seed: int = 0, sample_length: int = 200) -> dict:
    text, chars = load_text()
    encoded = np.array([chars.index(c) for c in text], np.int32)
    rng = np.random.default_rng(seed)
    path = save_path or os.path.join(tempfile.mkdtemp(), "char_lstm.ckpt")

    tf.reset_default_graph()
    tf.set_random_seed(seed)
    model, ids, targets, loss, train_op = build_training(len(chars), seq_len)
    saver = tf.train.Saver()
    probe_x, probe_y = batches(encoded, batch_size, seq_len, np.random.default_rng(99))
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            x, y = batches(encoded, batch_size, seq_len, rng)
            _, value = sess.run([train_op, loss], {ids: x, targets: y})
            losses.append(float(value))
            if step % 50 == 0 or step == steps - 1:
                print(f"step {step:4d}  loss {value:.3f}")
        trained_loss = float(sess.run(loss, {ids: probe_x, targets: probe_y}))
        saved = saver.save(sess, path, global_step=steps)
        print("saved to", saved)

    # A fresh graph, as a separate sampling program would build it, restored from disk.
    tf.reset_default_graph()
    model, ids, targets, loss, _ = build_training(len(chars), seq_len)
    sampler = build_sampler(model)
    restorer = tf.train.Saver()
    with tf.Session() as sess:
        restorer.restore(sess, saved)
        restored_loss = float(sess.run(loss, {ids: probe_x, targets: probe_y}))
        generated = sample(sess, sampler, chars, "Shall I ", sample_length, rng)
    print(f"restored: loss {restored_loss:.3f} (saved model: {trained_loss:.3f})")
    print("sample:\n" + generated)
    return {"losses": losses, "trained_loss": trained_loss, "restored_loss": restored_loss,
            "sample": generated, "chars": chars, "checkpoint": saved}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=40)
    parser.add_argument("--save", default=None, help="checkpoint path prefix")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.steps, args.batch_size, args.seq_len, args.save, args.seed)
