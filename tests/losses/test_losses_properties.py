"""Property tests: weights broadcasting and every reduction against a NumPy reference."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradflow as gf

REDUCTIONS = ["none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
              "weighted_sum_by_nonzero_weights"]


@st.composite
def loss_and_weights(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    scalar = draw(st.booleans())
    w_shape = () if scalar else tuple(d if draw(st.booleans()) else 1 for d in shape)
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    losses = rng.uniform(-1, 1, shape).astype(np.float32)
    weights = rng.choice([0.0, 0.5, 1.0, 2.0], size=w_shape).astype(np.float32)
    return losses, weights, draw(st.sampled_from(REDUCTIONS))


def reference(losses, weights, reduction):
    weighted = losses * weights
    if reduction == "none":
        return weighted
    total = weighted.sum(dtype=np.float64)
    denominators = {
        "weighted_sum": 1.0,
        "weighted_mean": np.broadcast_to(weights, losses.shape).sum(dtype=np.float64),
        "weighted_sum_over_batch_size": losses.size,
        "weighted_sum_by_nonzero_weights": np.count_nonzero(
            np.broadcast_to(weights, losses.shape))}
    denominator = denominators[reduction]
    return total / denominator if denominator else 0.0


@settings(max_examples=40, deadline=None)
@given(loss_and_weights())
def test_compute_weighted_loss_matches_numpy(case):
    losses, weights, reduction = case
    with gf.Graph().as_default():
        loss = gf.losses.compute_weighted_loss(losses, weights, reduction=reduction)
        with gf.Session() as session:
            value = session.run(loss)
    np.testing.assert_allclose(value, reference(losses, weights, reduction), rtol=1e-5,
                               atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=3), st.data())
def test_weights_that_do_not_broadcast_raise(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    bad = list(shape)
    bad[axis] = shape[axis] + 1
    with gf.Graph().as_default() as graph:
        losses = gf.constant(np.ones(shape, np.float32))
        weights = gf.constant(np.ones(bad, np.float32))
        before = len(graph.get_operations())
        with pytest.raises(ValueError, match=f"Mismatch at dim {axis}"):
            gf.losses.compute_weighted_loss(losses, weights)
        assert len(graph.get_operations()) == before
