"""Convolutions and pooling against direct NumPy loops; gradients to second order; errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error

import gradflow as gf

RNG = np.random.default_rng(17)


def normal(*shape):
    return RNG.standard_normal(shape)


# ------------------------------------------------------------------ NumPy references
def same_padding(size, k, stride, dilation=1):
    span = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def paddings(padding, x_hw, k_hw, strides, dilations):
    if padding == "SAME":
        return [same_padding(*args) for args in zip(x_hw, k_hw, strides, dilations)]
    if padding == "VALID":
        return [(0, 0), (0, 0)]
    return [tuple(padding[1]), tuple(padding[2])]


def sliding(xp, k_hw, strides, dilations, reduce):
    """reduce(patch [N, kh, kw, C]) for every output position of padded NHWC ``xp``."""
    (kh, kw), (sh, sw), (dh, dw) = k_hw, strides, dilations
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    rows = [[reduce(xp[:, i * sh:i * sh + (kh - 1) * dh + 1:dh,
                       j * sw:j * sw + (kw - 1) * dw + 1:dw])
             for j in range(ow)] for i in range(oh)]
    return np.moveaxis(np.array(rows), 2, 0)


def np_conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1), depthwise=False):
    pads = paddings(padding, x.shape[1:3], w.shape[:2], strides, dilations)
    xp = np.pad(x, [(0, 0), *pads, (0, 0)])
    if depthwise:
        def reduce(p):
            return np.einsum("nabc,abcm->ncm", p, w).reshape(len(x), -1)
    else:
        def reduce(p):
            return np.einsum("nabc,abco->no", p, w)
    return sliding(xp, w.shape[:2], strides, dilations, reduce)


def np_pool(x, k_hw, strides, padding, kind):
    pads = paddings(padding, x.shape[1:3], k_hw, strides, (1, 1))
    xp = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=np.nan)
    reduce = {"max": lambda p: np.nanmax(p, axis=(1, 2)),
              "avg": lambda p: np.nanmean(p, axis=(1, 2))}[kind]
    return sliding(xp, k_hw, strides, (1, 1), reduce)


def to_nchw(x):
    return x.transpose(0, 3, 1, 2)


def to_nhwc(x):
    return x.transpose(0, 2, 3, 1)


# ------------------------------------------------------------------------- conv2d
# (input NHWC, filter, strides, padding, dilations)
CONV_CASES = [
    ((1, 4, 4, 2), (2, 2, 2, 3), (1, 1), "SAME", (1, 1)),
    ((2, 5, 4, 1), (3, 3, 1, 2), (1, 1), "VALID", (1, 1)),
    ((1, 5, 5, 2), (3, 2, 2, 2), (2, 2), "SAME", (1, 1)),
    ((1, 6, 5, 2), (2, 2, 2, 1), (2, 1), "VALID", (1, 1)),
    ((1, 5, 5, 1), (2, 2, 1, 2), (1, 1), "SAME", (2, 2)),
    ((1, 6, 6, 2), (2, 3, 2, 2), (1, 1), "VALID", (2, 1)),
    ((1, 4, 4, 2), (2, 2, 2, 2), (2, 1), [[0, 0], [1, 0], [0, 2], [0, 0]], (1, 1)),
    ((1, 3, 3, 1), (1, 1, 1, 2), (1, 1), "SAME", (1, 1)),
]
CONV_IDS = [f"{c[0]}-{c[1]}-s{c[2]}-{c[3] if isinstance(c[3], str) else 'explicit'}-d{c[4]}"
            for c in CONV_CASES]


def as_nchw_padding(padding):
    return padding if isinstance(padding, str) else [padding[0], padding[3], padding[1],
                                                     padding[2]]


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("x_shape,w_shape,strides,padding,dilations", CONV_CASES, ids=CONV_IDS)
def test_conv2d_forward(x_shape, w_shape, strides, padding, dilations, data_format, sess):
    x, w = normal(*x_shape), normal(*w_shape)
    expected = np_conv2d(x, w, strides, padding, dilations)
    if data_format == "NCHW":
        x, expected, padding = to_nchw(x), to_nchw(expected), as_nchw_padding(padding)
    y = gf.nn.conv2d(x, w, strides=list(strides), padding=padding, data_format=data_format,
                     dilations=list(dilations))
    assert y.op.type == "Conv2D"
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(sess.run(y), expected, atol=1e-12)


@pytest.mark.parametrize("x_shape,w_shape,strides,padding,dilations", CONV_CASES[::2],
                         ids=CONV_IDS[::2])
def test_conv2d_gradients_to_second_order(x_shape, w_shape, strides, padding, dilations):
    def conv(x, w):
        return gf.nn.conv2d(x, w, list(strides), padding, dilations=list(dilations))
    x, w = normal(*x_shape), normal(*w_shape)
    assert gradient_error(conv, [x, w]) < 1e-7
    # Second order exercises the gradients of both backprop ops.
    assert second_order_error(conv, [x, w]) < 1e-7
    assert second_order_error(lambda f, i: conv(i, f), [w, x]) < 1e-7


def test_conv2d_gradient_nchw():
    def conv(x, w):
        return gf.nn.conv2d(x, w, [1, 1, 2, 1], "SAME", data_format="NCHW")
    assert gradient_error(conv, [normal(1, 2, 4, 3), normal(2, 2, 2, 2)]) < 1e-7


def test_backprop_ops_are_differentiable_in_the_upstream_gradient():
    x, w = normal(1, 4, 4, 2), normal(2, 2, 2, 3)

    def input_grad(upstream, filters):
        x_t = gf.constant(x)
        return gf.gradients(gf.nn.conv2d(x_t, filters, 2, "SAME"), x_t, grad_ys=upstream)[0]

    def filter_grad(upstream, inputs):
        w_t = gf.constant(w)
        return gf.gradients(gf.nn.conv2d(inputs, w_t, 2, "SAME"), w_t, grad_ys=upstream)[0]

    assert gradient_error(input_grad, [normal(1, 2, 2, 3), w]) < 1e-7
    assert gradient_error(filter_grad, [normal(1, 2, 2, 3), x]) < 1e-7


def test_public_backprop_functions_match_gradients(sess):
    x, w, dy = normal(1, 5, 5, 2), normal(3, 3, 2, 2), normal(1, 3, 3, 2)
    x_t, w_t = gf.constant(x), gf.constant(w)
    y = gf.nn.conv2d(x_t, w_t, [1, 2, 2, 1], "SAME")
    dx, dw = gf.gradients(y, [x_t, w_t], grad_ys=dy)
    dx2 = gf.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, [1, 2, 2, 1], "SAME")
    dw2 = gf.nn.conv2d_backprop_filter(x, [3, 3, 2, 2], dy, [1, 2, 2, 1], "SAME")
    assert dx.op.type == dx2.op.type == "Conv2DBackpropInput"
    assert dw.op.type == dw2.op.type == "Conv2DBackpropFilter"
    for a, b in zip(sess.run([dx, dw]), sess.run([dx2, dw2])):
        np.testing.assert_allclose(a, b, atol=1e-12)


# Stride-1 padding larger than the filter's reach: the input gradient's full correlation
# crops the gradient positions that read only padding.
WIDE_PADDING_CASES = [
    ((1, 4, 4, 2), (2, 2, 2, 2), (1, 1), [[0, 0], [3, 0], [0, 2], [0, 0]], (1, 1)),
    ((2, 3, 5, 1), (2, 3, 1, 2), (1, 1), [[0, 0], [0, 4], [2, 2], [0, 0]], (2, 1)),
]


@pytest.mark.parametrize("x_shape,w_shape,strides,padding,dilations",
                         CONV_CASES + WIDE_PADDING_CASES)
def test_conv2d_backprops_are_the_adjoints_of_conv2d(x_shape, w_shape, strides, padding,
                                                     dilations, sess):
    """<conv(x, w), dy> = <x, backprop_input(dy)> = <w, backprop_filter(dy)>, every case."""
    x, w = normal(*x_shape), normal(*w_shape)
    y_shape = np_conv2d(x, w, strides, padding, dilations).shape
    dy = normal(*y_shape)
    attrs = dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1])
    dx = gf.nn.conv2d_backprop_input(list(x_shape), w, dy, **attrs)
    dw = gf.nn.conv2d_backprop_filter(x, list(w_shape), dy, **attrs)
    dx_value, dw_value = sess.run([dx, dw])
    forward = np.vdot(np_conv2d(x, w, strides, padding, dilations), dy)
    np.testing.assert_allclose(np.vdot(x, dx_value), forward, rtol=1e-10)
    np.testing.assert_allclose(np.vdot(w, dw_value), forward, rtol=1e-10)


def adjoint_of_conv(dy, w, x_shape, strides, padding):
    """conv2d's transpose applied to dy, from conv2d's matrix built column by column."""
    size = int(np.prod(x_shape))
    columns = [np_conv2d(np.eye(size)[i].reshape(x_shape), w, strides, padding).reshape(-1)
               for i in range(size)]
    return (np.array(columns) @ dy.reshape(-1)).reshape(x_shape)


@pytest.mark.parametrize("out_shape,strides,padding", [((1, 4, 4, 3), (2, 2), "SAME"),
                                                      ((1, 5, 5, 3), (2, 2), "SAME"),
                                                      ((1, 5, 5, 3), (2, 2), "VALID"),
                                                      ((1, 3, 4, 3), (1, 1), "VALID")])
def test_conv2d_transpose(out_shape, strides, padding, sess):
    w = normal(2, 2, 3, 2)  # [kh, kw, out_channels, in_channels]
    forward_w = w
    in_shape = np_conv2d(np.zeros(out_shape), forward_w, strides, padding).shape
    dy = normal(*in_shape)
    y = gf.nn.conv2d_transpose(dy, w, list(out_shape), list(strides), padding)
    assert y.shape.as_list() == list(out_shape)
    np.testing.assert_allclose(sess.run(y), adjoint_of_conv(dy, w, out_shape, strides, padding),
                               atol=1e-12)

    def build(value, filters):
        return gf.nn.conv2d_transpose(value, filters, list(out_shape), list(strides), padding)
    assert gradient_error(build, [dy, w]) < 1e-7
    assert second_order_error(build, [dy, w]) < 1e-7


def test_conv2d_transpose_with_dynamic_output_shape(sess):
    value = gf.placeholder(gf.float64, [None, 2, 2, 2])
    out_shape = gf.stack([gf.shape(value)[0], 4, 4, 3])
    y = gf.nn.conv2d_transpose(value, normal(2, 2, 3, 2), out_shape, 2)
    assert y.shape.ndims == 4
    assert sess.run(y, {value: normal(3, 2, 2, 2)}).shape == (3, 4, 4, 3)


# -------------------------------------------------------------------- depthwise
@pytest.mark.parametrize("x_shape,w_shape,strides,padding,rate", [
    ((1, 4, 4, 2), (2, 2, 2, 1), (1, 1), "SAME", None),
    ((1, 5, 5, 2), (3, 3, 2, 2), (2, 2), "SAME", None),
    ((2, 4, 5, 1), (2, 2, 1, 3), (1, 2), "VALID", None),
    ((1, 5, 5, 2), (2, 2, 2, 2), (1, 1), "VALID", (2, 2)),
])
def test_depthwise_conv2d(x_shape, w_shape, strides, padding, rate, sess):
    x, w = normal(*x_shape), normal(*w_shape)
    dilations = rate or (1, 1)
    expected = np_conv2d(x, w, strides, padding, dilations, depthwise=True)
    strides4 = [1, *strides, 1]
    y = gf.nn.depthwise_conv2d(x, w, strides4, padding, rate=rate)
    assert y.op.type == "DepthwiseConv2dNative"
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(sess.run(y), expected, atol=1e-12)

    def build(x_in, w_in):
        return gf.nn.depthwise_conv2d(x_in, w_in, strides4, padding, rate=rate)
    assert gradient_error(build, [x, w]) < 1e-7
    assert second_order_error(build, [x, w]) < 1e-7
    assert second_order_error(lambda f, i: build(i, f), [w, x]) < 1e-7


def test_depthwise_conv2d_nchw(sess):
    x, w = normal(1, 4, 4, 2), normal(2, 2, 2, 2)
    y = gf.nn.depthwise_conv2d(to_nchw(x), w, [1, 1, 1, 1], "SAME", data_format="NCHW")
    np.testing.assert_allclose(to_nhwc(sess.run(y)),
                               np_conv2d(x, w, (1, 1), "SAME", depthwise=True), atol=1e-12)


# ------------------------------------------------------------------------- conv1d
@pytest.mark.parametrize("stride,padding,data_format", [(1, "SAME", "NWC"), (2, "VALID", "NWC"),
                                                        (2, "SAME", "NCW")])
def test_conv1d(stride, padding, data_format, sess):
    x, w = normal(2, 5, 2), normal(2, 2, 3)
    expected = np_conv2d(x[:, None], w[None], (1, stride), padding)[:, 0]
    value = x.transpose(0, 2, 1) if data_format == "NCW" else x
    y = gf.nn.conv1d(value, w, stride, padding, data_format=data_format)
    got = sess.run(y)
    np.testing.assert_allclose(got.transpose(0, 2, 1) if data_format == "NCW" else got, expected,
                               atol=1e-12)
    assert gradient_error(lambda v, f: gf.nn.conv1d(v, f, stride, padding,
                                                    data_format=data_format), [value, w]) < 1e-7


# ------------------------------------------------------------------------ pooling
POOL_CASES = [
    ((1, 4, 4, 2), 2, 2, "VALID"),
    ((1, 5, 5, 1), 3, 2, "SAME"),
    ((2, 3, 4, 2), [2, 3], [1, 2], "SAME"),
    ((1, 4, 3, 1), [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
    ((1, 3, 3, 2), 2, 1, "SAME"),
]


def spatial(value):
    values = [value] * 2 if isinstance(value, int) else list(value)
    return values[1:3] if len(values) == 4 else values


@pytest.mark.parametrize("kind,fn", [("max", gf.nn.max_pool), ("max", gf.nn.max_pool2d),
                                     ("avg", gf.nn.avg_pool), ("avg", gf.nn.avg_pool2d)])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("x_shape,ksize,strides,padding", POOL_CASES)
def test_pool_forward(kind, fn, data_format, x_shape, ksize, strides, padding, sess):
    x = normal(*x_shape)
    expected = np_pool(x, spatial(ksize), spatial(strides), padding, kind)
    if data_format == "NCHW":
        if isinstance(ksize, list) and len(ksize) == 4:
            ksize, strides = [1, 1] + ksize[1:3], [1, 1] + strides[1:3]
        x, expected = to_nchw(x), to_nchw(expected)
    y = fn(x, ksize, strides, padding, data_format=data_format)
    assert y.op.type == {"max": "MaxPool", "avg": "AvgPool"}[kind]
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(sess.run(y), expected, atol=1e-12)


@pytest.mark.parametrize("fn", [gf.nn.max_pool, gf.nn.avg_pool])
@pytest.mark.parametrize("x_shape,ksize,strides,padding", POOL_CASES[:3])
def test_pool_gradients(fn, x_shape, ksize, strides, padding):
    def pool(x):
        return fn(x, ksize, strides, padding)
    x = normal(*x_shape)
    assert gradient_error(pool, [x]) < 1e-7
    assert second_order_error(pool, [x]) < 1e-7

    def backward(upstream, x_in):
        return gf.gradients(pool(x_in), x_in, grad_ys=upstream)[0]
    # Gradient of the backward op in its upstream gradient, then of that again.
    y_shape = np_pool(x, spatial(ksize), spatial(strides), padding, "max").shape
    assert gradient_error(backward, [normal(*y_shape), x]) < 1e-7
    assert second_order_error(backward, [normal(*y_shape), x]) < 1e-7


def test_max_pool_gradient_goes_to_the_first_maximum(sess):
    x = gf.constant(np.ones((1, 3, 3, 1)))
    (grad,) = gf.gradients(gf.nn.max_pool(x, 2, 2, "SAME"), x)
    np.testing.assert_array_equal(sess.run(grad)[0, :, :, 0], [[1, 0, 1], [0, 0, 0], [1, 0, 1]])


def np_max_pool_grad(x, dy, k_hw, strides, padding):
    """Routes each window's gradient to its argmax (first maximum, first NaN)."""
    pads = paddings(padding, x.shape[1:3], k_hw, strides, (1, 1))
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=lowest)
    dx = np.zeros(xp.shape, dy.dtype)
    for n, oh, ow, c in np.ndindex(*dy.shape):
        top, left = oh * strides[0], ow * strides[1]
        window = xp[n, top:top + k_hw[0], left:left + k_hw[1], c]
        i, j = np.unravel_index(np.argmax(window), window.shape)
        dx[n, top + i, left + j, c] += dy[n, oh, ow, c]
    return dx[:, pads[0][0]:pads[0][0] + x.shape[1], pads[1][0]:pads[1][0] + x.shape[2]]


@pytest.mark.parametrize("x_shape,ksize,strides,padding", POOL_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_grad_routes_to_argmax_with_ties_and_nans(x_shape, ksize, strides, padding,
                                                           dtype, sess):
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, x_shape).astype(dtype)  # many ties
    x.flat[rng.choice(x.size, 3, replace=False)] = [np.nan, -np.inf, np.nan]
    x_t = gf.constant(x)
    y = gf.nn.max_pool(x_t, ksize, strides, padding)
    dy = rng.standard_normal(y.shape.as_list()).astype(dtype)
    dy.flat[0] = np.inf  # an infinite gradient must not spill into other positions
    (dx,) = gf.gradients(y, x_t, grad_ys=dy)
    expected = np_max_pool_grad(x, dy, spatial(ksize), spatial(strides), padding)
    np.testing.assert_allclose(sess.run(dx), expected, rtol=1e-6)  # overlaps add up


def test_max_pool_gradient_leaves_a_contiguous_input_untouched(sess):
    # one row: the first tap's view of the input is contiguous memory of the input itself
    x = np.array([3.0, 1.0, 2.0, 5.0]).reshape(1, 1, 4, 1)
    fed = x.copy()
    p = gf.placeholder(gf.float64, x.shape)
    y = gf.nn.max_pool(p, [1, 1, 2, 1], [1, 1, 1, 1], "VALID")
    (grad,) = gf.gradients(y, p)
    pooled, routed = sess.run([y, grad], {p: fed})
    np.testing.assert_array_equal(fed, x)
    np.testing.assert_array_equal(pooled.ravel(), [3, 2, 5])
    np.testing.assert_array_equal(routed.ravel(), [1, 0, 1, 1])


def test_avg_pool_same_padding_averages_real_inputs_only(sess):
    x = np.arange(9.0).reshape(1, 3, 3, 1)
    np.testing.assert_allclose(sess.run(gf.nn.avg_pool(x, 2, 2, "SAME"))[0, :, :, 0],
                               [[2, 3.5], [6.5, 8]])


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_max_pool_other_dtypes(dtype, sess):
    x = (normal(1, 4, 4, 1) * 10).astype(dtype)
    y = sess.run(gf.nn.max_pool(x, 2, 2, "SAME"))
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, x.reshape(1, 2, 2, 2, 2, 1).max(axis=(2, 4)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_low_precision_convolutions_keep_dtype(dtype, sess):
    x, w = normal(1, 4, 4, 2).astype(dtype), normal(2, 2, 2, 2).astype(dtype)
    x_t, w_t = gf.constant(x), gf.constant(w)
    outputs = [gf.nn.conv2d(x_t, w_t, 1, "SAME"), gf.nn.depthwise_conv2d(x_t, w_t, [1] * 4, "SAME"),
               gf.nn.avg_pool(x_t, 2, 1, "SAME"), gf.nn.max_pool(x_t, 2, 1, "SAME")]
    grads = gf.gradients(gf.add_n([gf.reduce_sum(y) for y in outputs]), [x_t, w_t])
    for value in sess.run(outputs + grads):
        assert value.dtype == dtype


def test_unknown_dimensions_propagate():
    x = gf.placeholder(gf.float32, [None, 5, None, 2])
    w = gf.zeros([3, 3, 2, 4])
    assert gf.nn.conv2d(x, w, 2, "SAME").shape.as_list() == [None, 3, None, 4]
    assert gf.nn.max_pool(x, 2, 2, "VALID").shape.as_list() == [None, 2, None, 2]
    assert gf.nn.conv2d(gf.placeholder(gf.float32), w, 1, "SAME").shape.as_list() == \
        [None, None, None, 4]


@pytest.mark.parametrize("call,error,text", [
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 3, 5]), 1, "SAME"), ValueError,
     r"Depth of input \(2\) is not a multiple of input depth of filter \(3\)"),
    (lambda: gf.nn.conv2d(gf.zeros([4, 4, 2]), gf.zeros([2, 2, 2, 5]), 1, "SAME"), ValueError,
     "must be rank 4 but is rank 3"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 2, 5]), 1, "FOO"), ValueError,
     "Attr 'padding' of 'Conv2D' Op passed string 'FOO'"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 2, 2, 2]), gf.zeros([3, 3, 2, 5]), 1, "VALID"), ValueError,
     "Negative dimension size caused by subtracting 3 from 2"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 2, 5]), [1, 2, 2], "SAME"),
     ValueError, r"strides should be of length 1, 2 or 4. Received: strides=\[1, 2, 2\]"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 2, 5]), [2, 1, 1, 1], "SAME"),
     ValueError, "batch and channel"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 2, 5], dtype=gf.float64), 1,
                          "SAME"), TypeError,
     "'filter' of 'Conv2D' Op has type float64 that does not match type float32"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), gf.zeros([2, 2, 2, 5]), 1,
                          [[1, 1], [0, 0], [0, 0], [0, 0]]), ValueError, "batch and channel"),
    (lambda: gf.nn.conv2d(gf.zeros([1, 4, 4, 2]), None, 1, "SAME"), ValueError, "'filter'"),
    (lambda: gf.nn.conv2d_transpose(gf.zeros([1, 2, 2, 3]), gf.zeros([2, 2, 5, 4]), [1, 4, 4, 5],
                                    2), ValueError, "out_backprop"),
    (lambda: gf.nn.depthwise_conv2d(gf.zeros([1, 4, 4, 3]), gf.zeros([2, 2, 2, 2]),
                                    [1, 1, 1, 1], "SAME"), ValueError, r"Depth of input \(3\)"),
    (lambda: gf.nn.max_pool(gf.zeros([1, 4, 4, 2]), [2, 2, 2, 1], 1, "SAME"), ValueError,
     "batch and channel"),
    (lambda: gf.nn.max_pool(gf.zeros([1, 4, 4, 2]), [2, 2, 2], 1, "SAME"), ValueError,
     "ksize should be of length 1, 2 or 4"),
    (lambda: gf.nn.avg_pool(gf.zeros([1, 4, 4, 2]), 2, 1, "EXPLICIT"), ValueError,
     "Attr 'padding' of 'AvgPool' Op passed string 'EXPLICIT'"),
    (lambda: gf.nn.avg_pool(gf.zeros([1, 4, 4, 2], dtype=gf.int32), 2, 1, "SAME"), TypeError,
     "int32"),
    (lambda: gf.nn.conv1d(gf.zeros([1, 4, 2]), gf.zeros([2, 2, 3]), 1, "SAME", data_format="NHC"),
     ValueError, "data_format"),
])
def test_bad_input(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_backprop_input_with_mismatched_gradient_fails_at_run_time(sess):
    dy = gf.placeholder(gf.float32, [1, None, None, 2])
    dx = gf.nn.conv2d_backprop_input([1, 4, 4, 2], gf.zeros([2, 2, 2, 2]), dy, 1, "SAME")
    with pytest.raises(gf.errors.InvalidArgumentError, match="out_backprop"):
        sess.run(dx, {dy: np.zeros((1, 3, 3, 2))})
