"""Normalisation, bias_add and dropout: values against NumPy, gradients, errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error

import gradflow as gf

RNG = np.random.default_rng(3)


def normal(*shape):
    return RNG.standard_normal(shape)


def positive(*shape):
    return RNG.random(shape) + 0.5


# ---------------------------------------------------------------------- l2_normalize
@pytest.mark.parametrize("shape,axis", [((4,), None), ((2, 3), 1), ((2, 3), 0),
                                        ((2, 3, 2), [1, 2])])
def test_l2_normalize(shape, axis, sess):
    x = normal(*shape)
    y = gf.nn.l2_normalize(x, axis=axis)
    axes = None if axis is None else tuple(np.atleast_1d(axis))
    np.testing.assert_allclose(sess.run(y), x / np.sqrt(np.sum(x ** 2, axis=axes, keepdims=True)))
    assert gradient_error(lambda t: gf.nn.l2_normalize(t, axis), [x]) < 1e-7
    assert second_order_error(lambda t: gf.nn.l2_normalize(t, axis), [x]) < 1e-6


def test_l2_normalize_of_zeros_is_zero_and_dim_alias_works(sess):
    np.testing.assert_array_equal(sess.run(gf.nn.l2_normalize(np.zeros((2, 2)), dim=1)), 0)


# --------------------------------------------------------------------------- moments
@pytest.mark.parametrize("shape,axes", [((5,), [0]), ((3, 4), [0]), ((2, 3, 4), [0, 2]),
                                        ((2, 3, 2), [1])])
@pytest.mark.parametrize("keep", [False, True])
def test_moments(shape, axes, keep, sess):
    x = normal(*shape)
    mean, variance = gf.nn.moments(x, axes, keep_dims=keep)
    expected_mean = x.mean(axis=tuple(axes), keepdims=keep)
    assert mean.shape.as_list() == list(expected_mean.shape) == variance.shape.as_list()
    got_mean, got_variance = sess.run([mean, variance])
    np.testing.assert_allclose(got_mean, expected_mean, atol=1e-12)
    np.testing.assert_allclose(got_variance, x.var(axis=tuple(axes), keepdims=keep), atol=1e-12)
    assert gradient_error(lambda t: gf.nn.moments(t, axes)[1], [x]) < 1e-7
    assert second_order_error(lambda t: gf.nn.moments(t, axes)[1], [x]) < 1e-7


def test_moments_of_float16_are_computed_in_float32(sess):
    x = (normal(4, 3) * 100).astype(np.float16)
    mean, variance = sess.run(gf.nn.moments(x, [0], keepdims=True))
    assert mean.dtype == variance.dtype == np.float16
    np.testing.assert_allclose(variance, x.astype(np.float32).var(0, keepdims=True), rtol=1e-3)


# --------------------------------------------------------------- batch normalisation
def np_batch_norm(x, mean, variance, offset, scale, epsilon):
    y = (x - mean) / np.sqrt(variance + epsilon)
    return (y if scale is None else y * scale) + (0 if offset is None else offset)


@pytest.mark.parametrize("with_offset,with_scale", [(True, True), (False, True), (True, False),
                                                    (False, False)])
def test_batch_normalization(with_offset, with_scale, sess):
    x, mean, variance = normal(3, 4), normal(4), positive(4)
    offset, scale = (normal(4) if with_offset else None), (normal(4) if with_scale else None)
    y = gf.nn.batch_normalization(x, mean, variance, offset, scale, 1e-3)
    np.testing.assert_allclose(sess.run(y), np_batch_norm(x, mean, variance, offset, scale, 1e-3))

    def build(x_in, m, v, o, s):
        return gf.nn.batch_normalization(x_in, m, v, o, s, 1e-3)
    inputs = [x, mean, variance, normal(4), normal(4)]
    assert gradient_error(build, inputs) < 1e-7
    assert second_order_error(build, inputs) < 1e-6


def nhwc_stats(x, data_format):
    axes = (0, 1, 2) if data_format == "NHWC" else (0, 2, 3)
    return x.mean(axis=axes), x.var(axis=axes), x[0].size // x.shape[3 if data_format == "NHWC"
                                                                      else 1] * x.shape[0]


@pytest.mark.parametrize("data_format,shape", [("NHWC", (2, 3, 2, 3)), ("NCHW", (2, 3, 2, 2))])
def test_fused_batch_norm_training(data_format, shape, sess):
    x = normal(*shape) * 3 + 1
    channels = shape[3] if data_format == "NHWC" else shape[1]
    scale, offset = normal(channels), normal(channels)
    y, mean, variance = gf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3,
                                               data_format=data_format)
    batch_mean, batch_variance, count = nhwc_stats(x, data_format)
    to_channels = (lambda v: v) if data_format == "NHWC" else (lambda v: v[:, None, None])
    expected = np_batch_norm(x, to_channels(batch_mean), to_channels(batch_variance),
                             to_channels(offset), to_channels(scale), 1e-3)
    got_y, got_mean, got_variance = sess.run([y, mean, variance])
    np.testing.assert_allclose(got_y, expected, atol=1e-10)
    np.testing.assert_allclose(got_mean, batch_mean, atol=1e-12)
    # Returned variance is the unbiased one, as TF's kernel returns it.
    np.testing.assert_allclose(got_variance, batch_variance * count / (count - 1))

    def build(x_in, s, o):
        return gf.nn.fused_batch_norm(x_in, s, o, data_format=data_format)[0]
    assert gradient_error(build, [x, scale, offset]) < 1e-6
    assert second_order_error(build, [x, scale, offset]) < 1e-6


def test_fused_batch_norm_inference_and_running_averages(sess):
    x, scale, offset = normal(2, 2, 2, 3), normal(3), normal(3)
    mean, variance = normal(3), positive(3)
    y, out_mean, out_variance = gf.nn.fused_batch_norm(x, scale, offset, mean, variance,
                                                       epsilon=1e-3, is_training=False)
    got = sess.run([y, out_mean, out_variance])
    np.testing.assert_allclose(got[0], np_batch_norm(x, mean, variance, offset, scale, 1e-3))
    np.testing.assert_allclose(got[1], mean)
    np.testing.assert_allclose(got[2], variance)

    _, avg_mean, avg_variance = gf.nn.fused_batch_norm(x, scale, offset, mean, variance,
                                                       exponential_avg_factor=0.1)
    batch_mean, batch_variance, count = nhwc_stats(x, "NHWC")
    got_mean, got_variance = sess.run([avg_mean, avg_variance])
    np.testing.assert_allclose(got_mean, 0.9 * mean + 0.1 * batch_mean)
    np.testing.assert_allclose(got_variance,
                               0.9 * variance + 0.1 * batch_variance * count / (count - 1))


def test_fused_batch_norm_float16_uses_float32_parameters(sess):
    x = normal(1, 2, 2, 2).astype(np.float16)
    y, mean, _ = gf.nn.fused_batch_norm(x, np.ones(2, np.float32), np.zeros(2, np.float32))
    got_y, got_mean = sess.run([y, mean])
    assert got_y.dtype == np.float16 and got_mean.dtype == np.float32


@pytest.mark.parametrize("call,error,text", [
    (lambda: gf.nn.fused_batch_norm(gf.zeros([2, 3]), gf.ones([3]), gf.zeros([3])), ValueError,
     "must be rank 4 but is rank 2"),
    (lambda: gf.nn.fused_batch_norm(gf.zeros([1, 2, 2, 3]), gf.ones([3]), gf.zeros([3]),
                                    is_training=False), ValueError,
     "Both `mean` and `variance` must be a 1D tensor"),
    (lambda: gf.nn.fused_batch_norm(gf.zeros([1, 2, 2, 3]), gf.ones([4]), gf.zeros([3])),
     ValueError, "'scale'.*3 entries"),
    (lambda: gf.nn.fused_batch_norm(gf.zeros([1, 2, 2, 3]), gf.ones([3]), gf.zeros([3]),
                                    data_format="NDHWC"), ValueError, "data_format"),
    (lambda: gf.nn.moments(gf.zeros([2]), [0], keep_dims=True, keepdims=True), ValueError,
     "both"),
])
def test_normalisation_bad_input(call, error, text):
    with pytest.raises(error, match=text):
        call()


# -------------------------------------------------------------------------- bias_add
@pytest.mark.parametrize("shape,data_format", [((2, 3), None), ((2, 3, 4), "NHWC"),
                                               ((2, 3, 2, 2), "NCHW"), ((2, 3), "NCHW")])
def test_bias_add(shape, data_format, sess):
    channel_axis = 1 if data_format == "NCHW" else -1
    x, b = normal(*shape), normal(shape[channel_axis])
    y = gf.nn.bias_add(x, b, data_format=data_format)
    bias_view = b.reshape((-1,) + (1,) * (len(shape) - 2)) if channel_axis == 1 else b
    np.testing.assert_allclose(sess.run(y), x + bias_view)
    assert y.op.type == "BiasAdd"

    def build(x_in, b_in):
        return gf.nn.bias_add(x_in, b_in, data_format=data_format)
    assert gradient_error(build, [x, b]) < 1e-8
    assert second_order_error(build, [x, b]) < 1e-8
    # The bias gradient's own gradient (BiasAddGrad's) w.r.t. the upstream gradient.
    assert gradient_error(
        lambda g, b_in: gf.gradients(build(gf.constant(x), b_in), b_in, grad_ys=g)[0],
        [normal(*shape), b]) < 1e-8


def test_bias_add_grad_grad_with_unknown_rank_channels_first(sess):
    x, upstream = gf.placeholder(gf.float64), gf.placeholder(gf.float64)
    b = gf.constant(normal(3))
    (d_b,) = gf.gradients(gf.nn.bias_add(x, b, data_format="NCHW"), b, grad_ys=upstream)
    (d_upstream,) = gf.gradients(d_b * gf.constant([1.0, 2.0, 3.0], dtype=gf.float64), upstream)
    feed = {x: np.ones((2, 3, 2)), upstream: normal(2, 3, 2)}
    np.testing.assert_allclose(sess.run(d_upstream, feed),
                               np.broadcast_to(np.array([1.0, 2.0, 3.0])[:, None], (2, 3, 2)))


@pytest.mark.parametrize("shape", [(33, 31, 3, 5), (0, 4), (2, 0), (1025, 1)])
def test_bias_add_gradient_sums_tall_inputs_accurately(shape, sess):
    upstream = np.random.default_rng(3).standard_normal(shape).astype(np.float32) + 1
    b = gf.zeros(shape[-1:])
    (d_b,) = gf.gradients(gf.nn.bias_add(gf.zeros(shape), b), b, grad_ys=upstream)
    exact = upstream.astype(np.float64).sum(axis=tuple(range(len(shape) - 1)))
    got = sess.run(d_b)
    assert got.dtype == np.float32 and got.shape == shape[-1:]
    # rows are added pairwise: the error stays near float32 resolution of the total
    np.testing.assert_allclose(got, exact, rtol=1e-6)


@pytest.mark.parametrize("value_shape,bias_shape,text", [
    ([2, 3], [3, 1], "must be rank 1 but is rank 2"),
    ([3], [3], "must be at least rank 2 but is rank 1"),
    ([2, 3], [4], "Dimensions must be equal, but are 3 and 4"),
])
def test_bias_add_bad_shapes(value_shape, bias_shape, text):
    with pytest.raises(ValueError, match=text):
        gf.nn.bias_add(gf.zeros(value_shape), gf.zeros(bias_shape))


def test_xw_plus_b(sess):
    x, w, b = normal(2, 3), normal(3, 4), normal(4)
    np.testing.assert_allclose(sess.run(gf.nn.xw_plus_b(x, w, b)), x @ w + b)


# --------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("kwargs,keep", [({"keep_prob": 0.25}, 0.25), ({"rate": 0.4}, 0.6)])
def test_dropout_zeroes_and_rescales(kwargs, keep, sess):
    x = np.ones((200, 50))
    y = sess.run(gf.nn.dropout(x, seed=1, **kwargs))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / keep)
    assert abs(kept.mean() - keep) < 0.03


def test_dropout_noise_shape_shares_the_mask(sess):
    x = np.ones((4, 30))
    y = sess.run(gf.nn.dropout(x, rate=0.5, noise_shape=[4, 1], seed=2))
    assert all(len(set(row)) == 1 for row in y)
    z = sess.run(gf.nn.dropout(x, rate=0.5, noise_shape=[None, 1], seed=2))
    assert z.shape == (4, 30)


def test_dropout_gradient_uses_the_same_mask(sess):
    x = gf.constant(np.ones((3, 4)))
    y = gf.nn.dropout(x, keep_prob=0.5, seed=3)
    (grad,) = gf.gradients(y, x)
    y_value, grad_value = sess.run([y, grad])
    np.testing.assert_allclose(grad_value, y_value)


def test_dropout_with_seed_is_reproducible_across_graphs():
    def sample():
        with gf.Graph().as_default():
            gf.set_random_seed(7)
            y = gf.nn.dropout(np.ones(50), rate=0.5)
            with gf.Session() as session:
                return session.run(y)
    np.testing.assert_array_equal(sample(), sample())


def test_dropout_rate_tensor_and_zero_rate(sess):
    x = gf.constant(np.ones(10))
    assert gf.nn.dropout(x, rate=0.0) is x
    assert gf.nn.dropout(x, keep_prob=1.0) is x
    rate = gf.placeholder(gf.float64, [])
    y = gf.nn.dropout(x, rate=rate, seed=4)
    np.testing.assert_allclose(sess.run(y, {rate: 0.0}), np.ones(10))


@pytest.mark.parametrize("kwargs,text", [
    ({"keep_prob": 0.5, "rate": 0.5}, "Cannot specify both 'keep_prob' and 'rate'"),
    ({"keep_prob": 1.5}, r"in the range \[0, 1\). Received: rate=-0.5"),
    ({"rate": 1.0}, r"in the range \[0, 1\). Received: rate=1.0"),
    ({}, "`rate` must be provided"),
])
def test_dropout_bad_arguments(kwargs, text):
    with pytest.raises(ValueError, match=text):
        gf.nn.dropout(gf.zeros([2]), **kwargs)


def test_dropout_rejects_integers():
    with pytest.raises(ValueError, match="must be a floating point tensor"):
        gf.nn.dropout(gf.zeros([2], dtype=gf.int32), rate=0.5)
