"""Gradients of gf.losses: TF's recorded values, numeric checks, stopped label gradients.

As in TF1, every loss reduces in float32 (``compute_weighted_loss`` casts), so a float64
program still differentiates a float32 computation: the numeric checks below use float64
inputs with a step and tolerance fit for float32 rounding.
"""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error
from tf_fixtures import load_json

CASES = load_json("losses")["cases"]
DIFFERENTIATED = {"absolute_difference": "predictions", "mean_squared_error": "predictions",
                  "huber_loss": "predictions", "log_loss": "predictions",
                  "hinge_loss": "logits", "sigmoid_cross_entropy": "logits",
                  "softmax_cross_entropy": "logits", "sparse_softmax_cross_entropy": "logits",
                  "cosine_distance": "predictions",
                  "mean_pairwise_squared_error": "predictions",
                  "compute_weighted_loss": "losses"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_tf(name):
    case = CASES[name]
    graph = gf.Graph()
    with graph.as_default():
        tensors = {key: gf.constant(np.asarray(value, dtype=dtype), dtype=dtype)
                   for key, (value, dtype) in case["inputs"].items()}
        loss = getattr(gf.losses, case["fn"])(**tensors, **case["kwargs"])
        (grad,) = gf.gradients(gf.reduce_sum(loss), [tensors[DIFFERENTIATED[case["fn"]]]])
        with gf.Session() as session:
            value = session.run(grad)
    np.testing.assert_allclose(value, case["grad"], rtol=1e-5, atol=1e-6)


rng = np.random.default_rng(3)
LABELS = rng.uniform(0.0, 1.0, (4, 3))
PREDS = rng.uniform(-1.0, 1.0, (4, 3))
PROBS = rng.uniform(0.1, 0.9, (4, 3))
BINARY = rng.integers(0, 2, (4, 3)).astype(np.float64)
ONEHOT = np.eye(3)[[0, 2, 1, 2]]
W_COL = np.array([[1.0], [0.0], [2.0], [0.5]])

NUMERIC = {
    "absolute_difference": lambda p: gf.losses.absolute_difference(LABELS, p, W_COL),
    "mean_squared_error": lambda p: gf.losses.mean_squared_error(LABELS, p, W_COL),
    "huber_loss": lambda p: gf.losses.huber_loss(LABELS, p, W_COL, delta=0.4),
    "log_loss": lambda p: gf.losses.log_loss(LABELS, p, W_COL),
    "hinge_loss": lambda p: gf.losses.hinge_loss(BINARY, p, W_COL),
    "cosine_distance": lambda p: gf.losses.cosine_distance(LABELS, p, axis=1, weights=W_COL),
    "mean_pairwise_squared_error":
        lambda p: gf.losses.mean_pairwise_squared_error(LABELS, p, W_COL),
    "sigmoid_cross_entropy":
        lambda p: gf.losses.sigmoid_cross_entropy(BINARY, p, W_COL, label_smoothing=0.1),
    "softmax_cross_entropy":
        lambda p: gf.losses.softmax_cross_entropy(ONEHOT, p, W_COL[:, 0], label_smoothing=0.1),
    "sparse_softmax_cross_entropy":
        lambda p: gf.losses.sparse_softmax_cross_entropy([0, 2, 1, 2], p, W_COL),
    "compute_weighted_loss": lambda p: gf.losses.compute_weighted_loss(
        p, W_COL, reduction=gf.losses.Reduction.MEAN),
    "none_reduction": lambda p: gf.losses.mean_squared_error(
        LABELS, p, W_COL, reduction=gf.losses.Reduction.NONE),
}


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_numeric_gradient(name):
    point = PROBS if name == "log_loss" else PREDS
    # hinge and absolute difference are piecewise linear: keep off their kinks
    error = gradient_error(NUMERIC[name], [point], delta=1e-3)
    assert error < 2e-3, error


def test_softmax_labels_get_no_gradient_and_sigmoid_labels_do():
    with gf.Graph().as_default():
        labels = gf.constant(ONEHOT)
        logits = gf.constant(PREDS)
        loss = gf.losses.softmax_cross_entropy(labels, logits)
        assert gf.gradients(loss, [labels]) == [None]
        sig_labels = gf.constant(LABELS)
        sig = gf.losses.sigmoid_cross_entropy(sig_labels, logits)
        assert gf.gradients(sig, [sig_labels])[0] is not None


def test_second_order_through_mean_squared_error():
    """d2/dp2 of mean((p - l)^2 w) is 2 w / n on the diagonal."""
    with gf.Graph().as_default():
        p = gf.constant(PREDS)
        loss = gf.losses.mean_squared_error(LABELS, p, weights=W_COL,
                                            reduction=gf.losses.Reduction.SUM)
        (hess,) = gf.hessians(loss, [p])
        with gf.Session() as session:
            value = session.run(hess)
    expected = np.zeros((4, 3, 4, 3))
    for i in range(4):
        for j in range(3):
            expected[i, j, i, j] = 2.0 * W_COL[i, 0]
    np.testing.assert_allclose(value, expected, atol=1e-5)
