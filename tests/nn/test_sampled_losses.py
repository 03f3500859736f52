"""nce_loss and sampled_softmax_loss against TF 2.21, with given sampled_values."""
import numpy as np
import pytest
from gradcheck import gradient_error
from sequence_fixture import DATA, check

import gradflow as gf
from gradflow.nn.sampled_losses import sampled_logits

CASES = DATA["sampled_losses"]


def build_for(case):
    def build(biases, inputs, *weights):
        values = (gf.constant(np.asarray(case["sampled"], np.int64)),
                  gf.constant(np.asarray(case["true_expected"])),
                  gf.constant(np.asarray(case["sampled_expected"])))
        fn = getattr(gf.nn, case["fn"])
        return fn(list(weights) if len(weights) > 1 else weights[0], biases,
                  np.asarray(case["labels"]), inputs, num_sampled=3, num_classes=7,
                  num_true=case["num_true"], sampled_values=values, **case["extra"])
    return build


@pytest.mark.parametrize("key", sorted(CASES))
def test_sampled_losses_match_tf(key):
    case = CASES[key]
    out, graph = check(key, build_for(case), rtol=1e-9, atol=1e-9)
    # gf's softmax_cross_entropy_with_logits_v2 names its result without TF's reshapes.
    assert out.name.split("/")[0].split(":")[0] == case["out_name"].split("/")[0].split(":")[0]
    assert out.shape.as_list() == case["out_shape"]
    scope = "nce_loss" if case["fn"] == "nce_loss" else "sampled_softmax_loss"
    made = {op.name for op in graph.get_operations()}
    recorded = [name for name, _ in case["ops"]
                if name.startswith(f"{scope}/") and name.count("/") == 1]
    # The composites' scope and its main steps carry TF's names.
    for name in (f"{scope}/concat", f"{scope}/MatMul", f"{scope}/Log", f"{scope}/concat_1"):
        assert (name in recorded) == (name in made), name


def test_nce_loss_numeric_gradients():
    rng = np.random.default_rng(8)
    weights, biases, inputs = rng.standard_normal((7, 3)), rng.standard_normal(7), \
        rng.standard_normal((4, 3))
    labels = np.array([[1, 2], [0, 6], [3, 3], [5, 2]])

    def build(w, b, x):
        values = (gf.constant(np.array([2, 4, 0], np.int64)), gf.constant(np.full((4, 2), 0.3)),
                  gf.constant(np.array([0.5, 0.4, 0.8])))
        return gf.nn.nce_loss(w, b, labels, x, 3, 7, num_true=2, sampled_values=values,
                              remove_accidental_hits=True)
    assert gradient_error(build, [weights, biases, inputs]) < 1e-7


def test_sampled_softmax_loss_numeric_gradients_sharded():
    rng = np.random.default_rng(9)
    shards = [rng.standard_normal((4, 3)), rng.standard_normal((3, 3))]
    biases, inputs = rng.standard_normal(7), rng.standard_normal((3, 3))

    def build(w0, w1, b, x):
        values = (gf.constant(np.array([6, 1], np.int64)), gf.constant(np.full((3, 1), 0.3)),
                  gf.constant(np.array([0.5, 0.4])))
        return gf.nn.sampled_softmax_loss([w0, w1], b, [[1], [6], [4]], x, 2, 7,
                                          sampled_values=values, partition_strategy="div")
    assert gradient_error(build, shards + [biases, inputs]) < 1e-7


def test_subtract_log_q_is_optional(sess):
    weights, biases, inputs = np.ones((5, 2)), np.zeros(5), np.ones((1, 2))
    values = (np.array([3, 4], np.int64), np.full((1, 1), 0.5), np.array([0.25, 0.5]))
    with_q, _ = sampled_logits(weights, biases, [[0]], inputs, 2, 5, sampled_values=values)
    without_q, targets = sampled_logits(weights, biases, [[0]], inputs, 2, 5,
                                        sampled_values=values, subtract_log_q=False)
    a, b, t = sess.run([with_q, without_q, targets])
    np.testing.assert_allclose(b - a, np.log([[0.5, 0.25, 0.5]]))
    np.testing.assert_array_equal(t, [[1.0, 0.0, 0.0]])


def test_default_sampler_draws_log_uniform_candidates(sess):
    gf.set_random_seed(3)
    weights = gf.constant(np.random.default_rng(0).standard_normal((50, 4)))
    loss = gf.nn.sampled_softmax_loss(weights, gf.zeros([50], gf.float64), [[1], [2]],
                                      gf.ones([2, 4], gf.float64), num_sampled=5,
                                      num_classes=50)
    ops = {op.type for op in gf.get_default_graph().get_operations()}
    assert "LogUniformCandidateSampler" in ops
    first, second = sess.run(loss), sess.run(loss)
    assert first.shape == (2,) and np.all(np.isfinite(first)) and not np.allclose(first, second)


def test_bad_arguments_raise_and_leave_graph_unchanged():
    weights, biases, inputs = gf.ones([5, 2]), gf.zeros([5]), gf.ones([1, 2])
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="partition strategy"):
        gf.nn.nce_loss(weights, biases, [[0]], inputs, 2, 5, partition_strategy="x")
    with pytest.raises(ValueError, match="num_sampled"):
        gf.nn.sampled_softmax_loss(weights, biases, [[0]], inputs, 0, 5)
    with pytest.raises(ValueError, match="sampled_values"):
        gf.nn.nce_loss(weights, biases, [[0]], inputs, 2, 5, sampled_values=(1, 2))
    assert [op.name for op in graph.get_operations()] == before


def test_skip_gram_training_with_nce_and_sparse_feeds_lowers_the_loss():
    """A word2vec-style program: embeddings, nce_loss with the default sampler, SGD."""
    gf.set_random_seed(0)
    vocab, dim = 20, 4
    embeddings = gf.Variable(gf.random_uniform([vocab, dim], -1.0, 1.0), name="embeddings")
    nce_weights = gf.Variable(gf.truncated_normal([vocab, dim], stddev=0.5), name="nce_w")
    nce_biases = gf.Variable(gf.zeros([vocab]), name="nce_b")
    context = gf.sparse_placeholder(gf.int64, name="context")
    targets = gf.placeholder(gf.int64, [None, 1])
    embedded = gf.nn.embedding_lookup_sparse(embeddings, context, None, combiner="mean")
    loss = gf.reduce_mean(gf.nn.nce_loss(nce_weights, nce_biases, targets, embedded,
                                         num_sampled=5, num_classes=vocab))
    step = gf.train.GradientDescentOptimizer(0.5).minimize(loss)
    feed = {context: ([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [1, 2, 3, 4, 5], [3, 2]),
            targets: [[2], [4], [6]]}
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        first = np.mean([sess.run(loss, feed) for _ in range(5)])
        for _ in range(150):
            sess.run(step, feed)
        last = np.mean([sess.run(loss, feed) for _ in range(5)])
    assert last < 0.5 * first
