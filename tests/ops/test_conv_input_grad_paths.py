"""The convolution kernels' alternative paths. The stride-1 input gradient's two ways
(scattered receptive fields when the input has fewer channels than the output, full
correlation otherwise): numeric gradients in float64, and float32 results equal to the
full correlation's (the kernel used for every shape before) within float32 rounding.
The patch matrix's two layouts (channel-major for few channels, row-major otherwise):
the same values, and numeric gradients through each."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error

import gradflow as gf
from gradflow.ops.nn import convolution
from gradflow.ops.nn.windows import im2col

RNG = np.random.default_rng(23)

# (input NHWC, filter HWIO, padding, dilations); every case has fewer input channels
# than output channels, so the scattered path runs
CASES = [
    ((2, 5, 6, 2), (3, 3, 2, 3), "SAME", (1, 1)),
    ((1, 6, 5, 1), (2, 3, 1, 4), "VALID", (1, 1)),
    ((1, 7, 7, 2), (3, 2, 2, 5), "SAME", (2, 3)),
    ((2, 4, 5, 1), (2, 2, 1, 2), [[0, 0], [2, 1], [0, 3], [0, 0]], (1, 1)),
    ((1, 3, 3, 1), (1, 1, 1, 2), "VALID", (1, 1)),
]


def _windows(x_shape, w_shape, padding, dilations):
    attrs = {"data_format": "NHWC", "strides": [1, 1, 1, 1],
             "dilations": [1, *dilations, 1],
             **convolution.padding_attrs(padding, "NHWC", "Conv2D")}
    return convolution.WindowSpec(attrs).windows(x_shape[1:3], w_shape[:2])


@pytest.mark.parametrize("x_shape,w_shape,padding,dilations", CASES)
def test_scattered_input_gradient_matches_full_correlation(x_shape, w_shape, padding,
                                                           dilations):
    windows = _windows(x_shape, w_shape, padding, dilations)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    dy = RNG.standard_normal((x_shape[0], windows[0].out, windows[1].out,
                              w_shape[3])).astype(np.float32)
    scattered = convolution._scatter_fields(dy, w, windows, x_shape)
    cropped, full = convolution._full_correlation(dy, windows, x_shape[1:3])
    correlated = convolution._conv_forward(cropped, w[::-1, ::-1].transpose(0, 1, 3, 2), full)
    assert scattered.dtype == np.float32 and scattered.flags.c_contiguous
    scale = np.abs(dy).max() * np.abs(w).sum(axis=(0, 1, 3)).max()
    np.testing.assert_allclose(scattered, correlated, rtol=0, atol=4 * scale * 2 ** -24)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("x_shape,w_shape,padding,dilations", CASES)
def test_scattered_input_gradient_numerically(x_shape, w_shape, padding, dilations,
                                              data_format):
    if data_format == "NCHW":
        pads = padding if isinstance(padding, str) else [padding[0], padding[3],
                                                         padding[1], padding[2]]
        x = RNG.standard_normal(x_shape).transpose(0, 3, 1, 2)
    else:
        pads, x = padding, RNG.standard_normal(x_shape)

    def conv(x_t, w_t):
        return gf.nn.conv2d(x_t, w_t, [1, 1], pads, data_format=data_format,
                            dilations=list(dilations))
    w = RNG.standard_normal(w_shape)
    assert gradient_error(conv, [x, w]) < 1e-7


def test_scattered_input_gradient_second_order():
    x_shape, w_shape, padding, dilations = CASES[0]

    def conv(x_t, w_t):
        return gf.nn.conv2d(x_t, w_t, [1, 1], padding, dilations=list(dilations))
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    assert second_order_error(conv, [x, w]) < 1e-7


@pytest.mark.parametrize("channels", [1, 3, 4, 5, 8])
@pytest.mark.parametrize("strides,dilations,padding", [((1, 1), (1, 1), "SAME"),
                                                       ((2, 1), (1, 2), "VALID")])
def test_patch_matrix_both_layouts(channels, strides, dilations, padding):
    """Channel-major (few channels) and row-major patch matrices hold the same values:
    row (n, oh, ow), column (tap row, tap column, channel)."""
    x = RNG.standard_normal((2, 6, 7, channels)).astype(np.float32)
    attrs = {"data_format": "NHWC", "strides": [1, *strides, 1],
             "dilations": [1, *dilations, 1], "padding": padding, "explicit_paddings": []}
    windows = convolution.WindowSpec(attrs).windows((6, 7), (3, 2))
    h, w = windows
    padded = np.pad(x, ((0, 0), (h.before, h.after), (w.before, w.after), (0, 0)))
    expected = np.empty((2, h.out, w.out, 3, 2, channels), np.float32)
    for oh in range(h.out):
        for ow in range(w.out):
            for i in range(3):
                for j in range(2):
                    expected[:, oh, ow, i, j] = padded[:, oh * h.stride + i * h.dilation,
                                                       ow * w.stride + j * w.dilation]
    np.testing.assert_array_equal(im2col(x, windows),
                                  expected.reshape(2 * h.out * w.out, -1))


@pytest.mark.parametrize("x_shape,w_shape,strides", [
    ((1, 5, 4, 5), (3, 3, 5, 6), (1, 1)),   # row-major patches, scattered input gradient
    ((1, 5, 5, 6), (3, 2, 6, 2), (1, 1)),   # row-major patches, full correlation
    ((2, 5, 6, 5), (2, 2, 5, 3), (2, 1)),   # row-major patches, strided
    ((1, 6, 5, 3), (3, 3, 3, 4), (2, 2)),   # channel-major patches, strided
])
def test_conv_gradients_with_more_channels(x_shape, w_shape, strides):
    def conv(x_t, w_t):
        return gf.nn.conv2d(x_t, w_t, list(strides), "SAME")
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    assert gradient_error(conv, [x, w]) < 1e-7
