"""float32 Sigmoid: NumPy's vectorised exp in one buffer, within a few ulp of the exact
logistic everywhere (SciPy's expit where exp(-x) would overflow)."""
import numpy as np
import pytest
from scipy import special

import gradflow as gf


def _sigmoid(value: np.ndarray) -> np.ndarray:
    with gf.Graph().as_default(), gf.Session() as sess:
        return sess.run(gf.sigmoid(gf.constant(value)))


@pytest.mark.parametrize("low, high", [(-20.0, 20.0), (-87.9, 40.0)])
def test_within_three_ulp_of_the_exact_logistic(low, high):
    x = np.linspace(low, high, 200_001, dtype=np.float32)
    got = _sigmoid(x)
    exact = special.expit(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    ulps = np.abs(got.astype(np.float64) - exact) / np.spacing(exact).astype(np.float64)
    assert ulps.max() <= 3


def test_the_far_negative_tail_is_expit():
    x = np.linspace(-120.0, 120.0, 20_001, dtype=np.float32)
    np.testing.assert_array_equal(_sigmoid(x), special.expit(x))


def test_special_values_and_layouts():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -100.0], np.float32)
    got = _sigmoid(x)
    np.testing.assert_array_equal(got[:6], [np.nan, 1, 0, 0.5, 0.5, 1])
    assert 0 <= got[6] < 1e-38
    block = np.random.default_rng(0).standard_normal((4, 12)).astype(np.float32)
    with gf.Graph().as_default(), gf.Session() as sess:  # split parts are strided views
        parts = sess.run([gf.sigmoid(p) for p in gf.split(gf.constant(block), 3, axis=1)])
    np.testing.assert_allclose(np.concatenate(parts, axis=1),
                               special.expit(block.astype(np.float64)), rtol=4e-7)
    assert _sigmoid(np.float32(2.0)) == special.expit(np.float32(2.0))  # 0-d: expit
