"""Average pooling computes in its input's precision (window counts of the data's dtype,
not int64 counts that would promote float32 to float64): float32 results within float32
rounding of the float64 ones, and numeric gradients in float64."""
import numpy as np
import pytest
from gradcheck import gradient_error

import gradflow as gf

RNG = np.random.default_rng(29)
CASES = [((2, 5, 7, 3), (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
         ((1, 6, 6, 2), (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
         ((1, 4, 5, 1), (1, 3, 2, 1), (1, 1, 1, 1), "SAME")]


@pytest.mark.parametrize("shape,ksize,strides,padding", CASES)
def test_float32_avg_pool_and_gradient_match_float64(shape, ksize, strides, padding):
    x64 = RNG.standard_normal(shape)
    results = {}
    for dtype in (np.float32, np.float64):
        with gf.Graph().as_default():
            x = gf.constant(x64.astype(dtype))
            y = gf.nn.avg_pool(x, ksize, strides, padding)
            dy = gf.constant(np.linspace(-1, 1, int(np.prod(y.shape.as_list())))
                             .reshape(y.shape.as_list()).astype(dtype))
            dx, = gf.gradients(y, [x], grad_ys=dy)
            with gf.Session() as sess:
                results[dtype] = sess.run([y, dx])
    for got, want in zip(results[np.float32], results[np.float64], strict=True):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=0, atol=8 * 2 ** -24 * np.abs(want).max())


@pytest.mark.parametrize("shape,ksize,strides,padding", CASES)
def test_avg_pool_numeric_gradient(shape, ksize, strides, padding):
    x = RNG.standard_normal(shape)
    assert gradient_error(lambda t: gf.nn.avg_pool(t, ksize, strides, padding), [x]) < 1e-7
