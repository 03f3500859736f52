"""The shared window kernels (issue 23): pooling over tiling windows (reshape views)
and over overlapping or padded ones, in 2-D and 3-D, against direct loops; max-pool
gradients routed to the first maximum or first NaN; the forward patch matrix reused by
the filter gradient only for the same input with the same values; float32 kept float32."""
import itertools

import numpy as np
import pytest
from gradcheck import gradient_error

import gradflow as gf
from gradflow.framework.registry import get_op_def
from gradflow.ops.nn import convolution
from gradflow.ops.nn import windows as win_mod

RNG = np.random.default_rng(2323)


def _windows(in_sizes, ksize, strides, padding):
    return tuple(win_mod.fit_window(n, k, s, 1, padding) for n, k, s in zip(
        in_sizes, ksize, strides, strict=True))


def _loop_pool(x, ksize, strides, padding, kind):
    """Channels-last pooling and the max-pool winners, one window at a time."""
    windows = _windows(x.shape[1:-1], ksize, strides, padding)
    outs = tuple(w.out for w in windows)
    y = np.zeros((x.shape[0], *outs, x.shape[-1]), x.dtype)
    winners = {}
    for n, *pos, c in np.ndindex(*y.shape):
        cells = []
        for taps in itertools.product(*(range(k) for k in ksize)):
            index = tuple(p * w.stride + t - w.before for p, t, w in zip(
                pos, taps, windows, strict=True))
            if all(0 <= i < size for i, size in zip(index, x.shape[1:-1], strict=True)):
                cells.append((n, *index, c))
        values = np.array([x[cell] for cell in cells])
        if kind == "avg":
            y[(n, *pos, c)] = values.mean()
        else:
            best = int(np.argmax(values))  # first maximum, or first NaN
            y[(n, *pos, c)] = values[best]
            winners[(n, *pos, c)] = cells[best]
    return y, winners


def _attrs(ksize, strides, padding, rank):
    return {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1], "padding": padding,
            "data_format": "NHWC" if rank == 2 else "NDHWC", "explicit_paddings": []}


# (input shape channels-last, ksize, strides, padding): tiling with and without a
# remainder, 'SAME' that needs no padding (tiles) and that does, overlapping windows
POOL_CASES = [
    ((2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    ((1, 5, 7, 2), (2, 3), (2, 3), "VALID"),
    ((1, 4, 4, 2), (2, 2), (2, 2), "SAME"),
    ((1, 5, 5, 2), (2, 2), (2, 2), "SAME"),
    ((2, 5, 4, 1), (3, 3), (2, 1), "SAME"),
    ((1, 4, 4, 6, 2), (2, 2, 2), (2, 2, 2), "VALID"),
    ((1, 3, 5, 4, 1), (2, 3, 2), (1, 2, 2), "SAME"),
]


def _kernel(op_type):
    return get_op_def(op_type).kernel


@pytest.mark.parametrize("shape,ksize,strides,padding", POOL_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pool_kernels_match_loops(shape, ksize, strides, padding, dtype):
    rank = len(ksize)
    suffix = "" if rank == 2 else "3D"
    attrs = _attrs(ksize, strides, padding, rank)
    x = RNG.integers(-2, 3, shape).astype(dtype)  # many ties
    x.flat[RNG.choice(x.size, 2, replace=False)] = [np.nan, -np.inf]
    expected_max, winners = _loop_pool(x, ksize, strides, padding, "max")
    y = _kernel("MaxPool" + suffix)(x, **attrs)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected_max)

    dy = RNG.standard_normal(y.shape).astype(dtype)
    expected_dx = np.zeros_like(x)
    for out_cell, in_cell in winners.items():
        expected_dx[in_cell] += dy[out_cell]
    dx = _kernel("MaxPool" + suffix + "Grad")(x, y, dy, **attrs)
    assert dx.dtype == dtype and dx.shape == x.shape
    np.testing.assert_allclose(dx, expected_dx, rtol=1e-6)

    ddx = RNG.standard_normal(x.shape).astype(dtype)
    picked = _kernel("MaxPool" + suffix + "GradGrad")(x, y, ddx, **attrs)
    expected_picked = np.zeros_like(y)
    for out_cell, in_cell in winners.items():
        expected_picked[out_cell] = ddx[in_cell]
    np.testing.assert_array_equal(picked, expected_picked)

    x = RNG.standard_normal(shape).astype(dtype)
    expected_avg, _ = _loop_pool(x, ksize, strides, padding, "avg")
    avg = _kernel("AvgPool" + suffix)(x, **attrs)
    assert avg.dtype == dtype
    np.testing.assert_allclose(avg, expected_avg, rtol=1e-5 if dtype == np.float32 else 1e-12)
    grad = _kernel("AvgPool" + suffix + "Grad")(np.array(shape, np.int32), dy, **attrs)
    assert grad.dtype == dtype and grad.shape == x.shape


@pytest.mark.parametrize("shape,ksize,strides,padding", [POOL_CASES[1], POOL_CASES[5]])
def test_tiled_pool_gradients_numerically(shape, ksize, strides, padding):
    rank = len(ksize)
    data_format = "NHWC" if rank == 2 else "NDHWC"
    x = RNG.permutation(np.prod(shape)).reshape(shape) / 7.0  # distinct: no ties

    for pool in ((gf.nn.max_pool, gf.nn.avg_pool) if rank == 2 else
                 (gf.nn.max_pool3d, gf.nn.avg_pool3d)):
        def build(x_t, pool=pool):
            return pool(x_t, [1, *ksize, 1], [1, *strides, 1], padding,
                        data_format=data_format)
        assert gradient_error(build, [x]) < 1e-7


def test_tiled_pool_channels_first():
    x = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)  # NCHW
    attrs = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding": "VALID",
             "data_format": "NCHW", "explicit_paddings": []}
    y = _kernel("MaxPool")(x, **attrs)
    expected, _ = _loop_pool(x.transpose(0, 2, 3, 1), (2, 2), (2, 2), "VALID", "max")
    np.testing.assert_array_equal(y, expected.transpose(0, 3, 1, 2))
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    dx = _kernel("MaxPoolGrad")(x, y, dy, **attrs)
    # every window's gradient lands once, on a position holding the window's maximum
    np.testing.assert_allclose(dx.sum(axis=(2, 3)), dy.sum(axis=(2, 3)), rtol=1e-5)
    np.testing.assert_array_equal(np.repeat(np.repeat(y, 2, 2), 2, 3)[dx != 0], x[dx != 0])


# ------------------------------------------------------------------- patch reuse
CONV_ATTRS = {"strides": [1, 1, 1, 1], "dilations": [1, 1, 1, 1], "padding": "SAME",
              "data_format": "NHWC", "explicit_paddings": []}


@pytest.mark.parametrize("channels", [2, 6])  # channel-major and row-major patch matrices
def test_filter_gradient_reuses_patches_only_for_the_same_values(channels):
    x = RNG.standard_normal((2, 5, 6, channels)).astype(np.float32)
    w = RNG.standard_normal((3, 3, channels, 4)).astype(np.float32)
    dy = RNG.standard_normal((2, 5, 6, 4)).astype(np.float32)
    sizes = np.array(w.shape, np.int32)
    forward, backprop_filter = _kernel("Conv2D"), _kernel("Conv2DBackpropFilter")
    fresh = backprop_filter(x, sizes, dy, **CONV_ATTRS)  # nothing cached for x yet

    forward(x, w, **CONV_ATTRS)
    reused = backprop_filter(x, sizes, dy, **CONV_ATTRS)
    np.testing.assert_array_equal(reused, fresh)
    assert reused.dtype == np.float32

    forward(x, w, **CONV_ATTRS)
    x += 1.0  # written in place after the forward pass: the cached matrix is stale
    changed = backprop_filter(x, sizes, dy, **CONV_ATTRS)
    x_copy = x.copy()
    np.testing.assert_array_equal(changed, backprop_filter(x_copy, sizes, dy, **CONV_ATTRS))
    assert not np.array_equal(changed, fresh)


def test_patch_cache_forgets_dead_inputs_and_other_windows():
    cache = win_mod.PatchCache(capacity=2)
    windows = _windows((4, 4), (2, 2), (1, 1), "SAME")
    x = RNG.standard_normal((1, 4, 4, 1))
    matrix = win_mod.im2col(x, windows)
    cache.put(x, windows, matrix)
    assert cache.take(x, _windows((4, 4), (3, 3), (1, 1), "SAME")) is None  # used up
    cache.put(x, windows, matrix)
    assert cache.take(x, windows) is matrix
    assert cache.take(x, windows) is None  # one use
    cache.put(x, windows, matrix)
    del x
    assert not cache._entries
    arrays = [RNG.standard_normal((1, 4, 4, 1)) for _ in range(3)]
    for a in arrays:
        cache.put(a, windows, matrix)
    assert cache.take(arrays[0], windows) is None  # the oldest made room
    assert cache.take(arrays[2], windows) is matrix


def test_training_step_with_reused_patches_matches_separate_runs():
    """The filter gradient of a step equals the one computed in a run of its own."""
    x_value = RNG.standard_normal((3, 6, 6, 5)).astype(np.float32)
    w_value = RNG.standard_normal((3, 3, 5, 4)).astype(np.float32)
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, x_value.shape)
        w = gf.Variable(w_value)
        y = gf.nn.conv2d(gf.nn.relu(x), w, [1, 1, 1, 1], "SAME")
        (dw,) = gf.gradients(gf.reduce_sum(y * y), [w])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            together = sess.run([y, dw], {x: x_value})[1]
            alone = sess.run(dw, {x: x_value})
            sess.run(y, {x: x_value + 1})
            after_other_input = sess.run(dw, {x: x_value})
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(after_other_input, alone)


@pytest.mark.parametrize("op_type,rank", [("Conv2D", 2), ("Conv3D", 3)])
def test_convolution_kernels_keep_float32(op_type, rank):
    x = RNG.standard_normal((2, *(5,) * rank, 3)).astype(np.float32)
    w = RNG.standard_normal((*(3,) * rank, 3, 4)).astype(np.float32)
    attrs = {"strides": [1] * (rank + 2), "dilations": [1] * (rank + 2), "padding": "SAME",
             "data_format": "NHWC" if rank == 2 else "NDHWC"}
    y = _kernel(op_type)(x, w, **attrs)
    input_type = "Conv2DBackpropInput" if rank == 2 else "Conv3DBackpropInputV2"
    filter_type = "Conv2DBackpropFilter" if rank == 2 else "Conv3DBackpropFilterV2"
    dx = _kernel(input_type)(np.array(x.shape, np.int32), w, y, **attrs)
    dw = _kernel(filter_type)(x, np.array(w.shape, np.int32), y, **attrs)
    assert (y.dtype, dx.dtype, dw.dtype) == (np.float32,) * 3
    assert dx.shape == x.shape and dw.shape == w.shape


@pytest.mark.parametrize("multiplier", [1, 3])
def test_depthwise_input_gradient_float32_matches_tap_contraction(multiplier):
    """The per-tap multiply-adds equal contracting each tap's filter with einsum, in
    float32 and within float32 rounding."""
    x_shape, attrs = (2, 5, 6, 3), dict(CONV_ATTRS, strides=[1, 2, 1, 1])
    w = RNG.standard_normal((3, 2, 3, multiplier)).astype(np.float32)
    windows = win_mod.WindowSpec(attrs).windows(x_shape[1:3], w.shape[:2])
    dy = RNG.standard_normal((2, windows[0].out, windows[1].out, 3 * multiplier)).astype(
        np.float32)
    dx = _kernel("DepthwiseConv2dNativeBackpropInput")(np.array(x_shape, np.int32), w, dy,
                                                       **attrs)
    per_tap = w.reshape(6, 3, multiplier)
    per_multiplier = dy.reshape(dy.shape[:3] + (3, multiplier))
    expected = win_mod.accumulate_taps(
        lambda tap: np.einsum("nhwcm,cm->nhwc", per_multiplier, per_tap[tap]), windows,
        x_shape, np.float32)
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, expected, rtol=0, atol=8 * np.abs(expected).max() * 2 ** -24)


@pytest.mark.parametrize("op_type,x_shape,w_shape,strides", [
    ("Conv2DBackpropInput", (5, 6, 5, 2), (3, 3, 2, 4), [1, 1, 1, 1]),  # scattered fields
    ("Conv2DBackpropInput", (5, 7, 6, 3), (3, 2, 3, 2), [1, 2, 2, 1]),  # strided
    ("Conv3DBackpropInputV2", (3, 4, 5, 4, 2), (2, 3, 2, 2, 3), [1, 1, 1, 1, 1]),
])
def test_input_gradient_in_image_chunks_matches_one_chunk(op_type, x_shape, w_shape, strides,
                                                          monkeypatch):
    """Working a few images at a time changes no bits (one image per chunk here)."""
    rank = len(x_shape) - 2
    attrs = {"strides": strides, "dilations": [1] * (rank + 2), "padding": "SAME",
             "data_format": "NHWC" if rank == 2 else "NDHWC"}
    w = RNG.standard_normal(w_shape).astype(np.float32)
    spec = win_mod.WindowSpec(attrs, rank)
    outs = [win.out for win in spec.windows(x_shape[1:-1], w_shape[:rank])]
    dy = RNG.standard_normal((x_shape[0], *outs, w_shape[-1])).astype(np.float32)
    sizes = np.array(x_shape, np.int32)
    whole = _kernel(op_type)(sizes, w, dy, **attrs)
    monkeypatch.setattr(convolution, "_FIELDS_CHUNK_BYTES", 1)
    np.testing.assert_array_equal(_kernel(op_type)(sizes, w, dy, **attrs), whole)
