"""Activations and softmax: forward values, gradients (first and second order), dtypes, errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from scipy import special

import gradflow as gf

RNG = np.random.default_rng(11)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def away_from_kinks(*shape, kinks=(0.0,)):
    """Random values at least 0.05 from every kink, so finite differences stay one-sided."""
    x = RNG.uniform(-3, 8, size=shape)
    for kink in kinks:
        close = np.abs(x - kink) < 0.05
        x[close] = kink + 0.1
    return x


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# (public function, NumPy reference, kinks to avoid)
ACTIVATIONS = {
    "relu": (gf.nn.relu, lambda x: np.maximum(x, 0), (0.0,)),
    "relu6": (gf.nn.relu6, lambda x: np.clip(x, 0, 6), (0.0, 6.0)),
    "leaky_relu": (gf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), (0.0,)),
    "leaky_relu_0.01": (lambda x: gf.nn.leaky_relu(x, alpha=0.01),
                        lambda x: np.where(x > 0, x, 0.01 * x), (0.0,)),
    "elu": (gf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), (0.0,)),
    "selu": (gf.nn.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
             (0.0,)),
    "gelu": (gf.nn.gelu, lambda x: 0.5 * x * (1 + special.erf(x / np.sqrt(2))), ()),
    "gelu_tanh": (lambda x: gf.nn.gelu(x, approximate=True),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                  ()),
    "silu": (gf.nn.silu, lambda x: x * special.expit(x), ()),
    "swish_beta": (lambda x: gf.nn.swish(x, beta=2.0), lambda x: x * special.expit(2 * x), ()),
    "softmax": (gf.nn.softmax, np_softmax, ()),
    "softmax_axis0": (lambda x: gf.nn.softmax(x, axis=0), lambda x: np_softmax(x, 0), ()),
    "softmax_dim": (lambda x: gf.nn.softmax(x, dim=0), lambda x: np_softmax(x, 0), ()),
    "log_softmax": (gf.nn.log_softmax, lambda x: np.log(np_softmax(x)), ()),
    "log_softmax_axis": (lambda x: gf.nn.log_softmax(x, axis=1),
                         lambda x: np.log(np_softmax(x, 1)), ()),
}


def cases(shapes):
    """(name, shape) pairs; ops along a given axis need at least two axes."""
    return [(name, shape) for name in ACTIVATIONS for shape in shapes
            if len(shape) > 1 or "axis" not in name and "dim" not in name]


@pytest.mark.parametrize("name,shape", cases([(5,), (2, 3), (2, 3, 4)]))
def test_forward_matches_numpy(name, shape, sess):
    fn, reference, kinks = ACTIVATIONS[name]
    x = away_from_kinks(*shape, kinks=kinks)
    y = fn(gf.constant(x))
    assert y.shape.as_list() == list(shape)
    np.testing.assert_allclose(sess.run(y), reference(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,shape", cases([(4,), (2, 3)]))
def test_gradient(name, shape):
    fn, _, kinks = ACTIVATIONS[name]
    assert gradient_error(fn, [away_from_kinks(*shape, kinks=kinks)]) < 1e-7


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_second_order(name):
    fn, _, kinks = ACTIVATIONS[name]
    assert second_order_error(fn, [away_from_kinks(2, 3, kinks=kinks)]) < 1e-6


@pytest.mark.parametrize("name", ["relu", "relu6", "leaky_relu", "elu", "selu"])
def test_backward_ops_are_fused_and_differentiable_in_the_upstream_gradient(name):
    """The <Op>Grad op's gradient w.r.t. the incoming gradient is checked numerically."""
    fn, _, kinks = ACTIVATIONS[name]
    x = away_from_kinks(2, 3, kinks=kinks)

    def backward(upstream, x_in):
        return gf.gradients(fn(x_in), x_in, grad_ys=upstream)[0]

    assert gradient_error(backward, [RNG.standard_normal((2, 3)), x]) < 1e-7
    x_t = gf.constant(x)
    assert gf.gradients(fn(x_t), x_t)[0].op.type.endswith("Grad")


@pytest.mark.parametrize("fn", [gf.nn.relu, gf.nn.elu, gf.nn.softmax, gf.nn.log_softmax,
                                gf.nn.gelu, gf.nn.selu])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_low_precision_keeps_dtype(fn, dtype, sess):
    x = RNG.standard_normal((2, 3)).astype(dtype)
    y = fn(gf.constant(x))
    assert y.dtype == gf.as_dtype(dtype)
    assert sess.run(y).dtype == dtype


@pytest.mark.parametrize("fn,dtype", [(gf.nn.relu, np.int32), (gf.nn.relu6, np.int64)])
def test_integer_relus(fn, dtype, sess):
    x = np.array([-3, 0, 4, 9], dtype=dtype)
    np.testing.assert_array_equal(sess.run(fn(x)), np.clip(x, 0, 6 if fn is gf.nn.relu6 else 99))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5)])
def test_relu_gradient_passes_upstream_bits_exactly(dtype, shape, sess):
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 2.5]
    x = np.asarray(RNG.choice(specials, shape)).astype(dtype)
    dy = np.asarray(RNG.choice(specials, shape)).astype(dtype)
    x_t = gf.constant(x)
    (grad,) = gf.gradients(gf.nn.relu(x_t), x_t, grad_ys=gf.constant(dy))
    assert grad.op.type == "ReluGrad"
    got = np.asarray(sess.run(grad))
    expected = np.asarray(np.where(x > 0, dy, dtype(0)))
    assert got.dtype == dtype and got.shape == shape
    assert got.tobytes() == expected.tobytes()


def test_softmax_is_stable_at_extreme_logits(sess):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    soft, log_soft = sess.run([gf.nn.softmax(x), gf.nn.log_softmax(x)])
    assert np.isfinite(soft).all() and np.isfinite(log_soft).all()
    np.testing.assert_allclose(soft, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-6)
    np.testing.assert_allclose(log_soft, [[0, -2e4, -1e4], [-np.log(3)] * 3], rtol=1e-6)


def test_log_softmax_gradient_is_finite_at_extreme_logits(sess):
    x = gf.constant([1e4, -1e4, 0.0], dtype=gf.float64)
    (grad,) = gf.gradients(gf.nn.log_softmax(x)[1], x)
    np.testing.assert_allclose(sess.run(grad), [-1, 1, 0], atol=1e-12)


def test_elu_does_not_overflow_for_large_inputs(sess):
    x = np.array([1000.0, -1000.0])
    np.testing.assert_allclose(sess.run(gf.nn.elu(x)), [1000.0, -1.0])


def test_unknown_shapes_propagate():
    x = gf.placeholder(gf.float32, [None, 3])
    for fn in (gf.nn.relu, gf.nn.softmax, gf.nn.gelu, gf.nn.silu):
        assert fn(x).shape.as_list() == [None, 3]
    assert gf.nn.softmax(gf.placeholder(gf.float32)).shape.ndims is None


@pytest.mark.parametrize("call,error,text", [
    (lambda: gf.nn.softmax(gf.zeros([2], dtype=gf.int32)), TypeError, "float32"),
    (lambda: gf.nn.elu(gf.zeros([2], dtype=gf.int32)), TypeError, "features"),
    (lambda: gf.nn.relu(gf.zeros([2], dtype=gf.bool)), TypeError, "features"),
    (lambda: gf.nn.softmax(gf.zeros([])), ValueError, "at least rank 1"),
    (lambda: gf.nn.softmax(gf.zeros([2, 3]), axis=2), gf.errors.InvalidArgumentError,
     "dim=2"),
    (lambda: gf.nn.softmax(gf.zeros([2, 3]), axis=1, dim=1), ValueError, "both 'axis'"),
])
def test_bad_input(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_op_types_and_names():
    x = gf.placeholder(gf.float32, [2])
    assert gf.nn.relu(x).op.type == "Relu"
    assert gf.nn.relu(x, name="act").op.name == "act"
    assert gf.nn.leaky_relu(x, alpha=0.3).op.get_attr("alpha") == pytest.approx(0.3)
    assert gf.nn.softmax(x).op.type == "Softmax"
    assert gf.nn.log_softmax(x).op.type == "LogSoftmax"
    assert gf.nn.tanh is gf.tanh and gf.nn.sigmoid is gf.sigmoid
    assert gf.nn.softplus is gf.math.softplus and gf.nn.softsign is gf.math.softsign
