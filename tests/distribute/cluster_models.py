"""Models the cluster tests and the between-graph program share: a small regression MLP
trained by data-parallel SGD, placed on a cluster or in one process."""
import numpy as np

import gradflow as tf

FEATURES, HIDDEN, BATCH = 5, 8, 16


def data(steps: int, workers: int, seed: int = 0):
    """Per step, per worker: (x, y) batches, fixed by ``seed``."""
    rng = np.random.RandomState(seed)
    true_w = rng.randn(FEATURES, 1).astype(np.float32)
    batches = []
    for _ in range(steps):
        step = []
        for _ in range(workers):
            x = rng.randn(BATCH, FEATURES).astype(np.float32)
            step.append((x, np.tanh(x @ true_w)))
        batches.append(step)
    return batches


def parameters():
    """The model's variables, with constant initial values (same in every process)."""
    rng = np.random.RandomState(42)
    w1 = tf.Variable(rng.randn(FEATURES, HIDDEN).astype(np.float32) * 0.3, name="w1")
    b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="b1")
    w2 = tf.Variable(rng.randn(HIDDEN, 1).astype(np.float32) * 0.3, name="w2")
    return [w1, b1, w2]


def loss_of(params, x, y):
    w1, b1, w2 = params
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    return tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))


def in_graph(workers: int, ps_device, worker_device, learning_rate: float = 0.1):
    """One graph: variables on ``ps_device``, one tower per worker (fed placeholders),
    gradients averaged and applied on the ps. Returns (init, train, params, feeds)."""
    with tf.device(ps_device):
        params = parameters()
        global_step = tf.train.get_or_create_global_step()
    towers, feeds = [], []
    for k in range(workers):
        with tf.device(worker_device(k)):
            x = tf.placeholder(tf.float32, [None, FEATURES], name=f"x{k}")
            y = tf.placeholder(tf.float32, [None, 1], name=f"y{k}")
            towers.append(tf.gradients(loss_of(params, x, y), params))
            feeds.append((x, y))
    with tf.device(ps_device):
        mean = [tf.add_n([tower[i] for tower in towers]) / float(workers)
                for i in range(len(params))]
        train = tf.train.GradientDescentOptimizer(learning_rate).apply_gradients(
            list(zip(mean, params)), global_step=global_step)
    return tf.global_variables_initializer(), train, params, feeds


def feed_dict(feeds, step_batches):
    result = {}
    for (x, y), (bx, by) in zip(feeds, step_batches, strict=True):
        result[x], result[y] = bx, by
    return result


def single_process(steps: int, batches, learning_rate: float = 0.1, workers: int = 2):
    """The reference: the same in-graph model trained in this process."""
    graph = tf.Graph()
    with graph.as_default():
        init, train, params, feeds = in_graph(workers, None, lambda k: None, learning_rate)
        with tf.Session() as sess:
            sess.run(init)
            for step in range(steps):
                sess.run(train, feed_dict(feeds, batches[step]))
            return sess.run(params)
