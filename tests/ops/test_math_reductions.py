"""Reductions, argmax/argmin, scans and sorting: values, gradients, shapes and errors."""
import numpy as np
import pytest
from scipy import special

import gradflow as gf
from gradcheck import gradient_error, second_order_error

TOL = 1e-6


def run(tensor, feed=None):
    with gf.Session() as session:
        return session.run(tensor, feed)


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


# name, constructor, NumPy reference taking (x, axis, keepdims)
REDUCTIONS = [
    ("sum", gf.reduce_sum, lambda x, a, k: np.sum(x, _np_axis(a), keepdims=k)),
    ("mean", gf.reduce_mean, lambda x, a, k: np.mean(x, _np_axis(a), keepdims=k)),
    ("prod", gf.reduce_prod, lambda x, a, k: np.prod(x, _np_axis(a), keepdims=k)),
    ("max", gf.reduce_max, lambda x, a, k: np.max(x, _np_axis(a), keepdims=k)),
    ("min", gf.reduce_min, lambda x, a, k: np.min(x, _np_axis(a), keepdims=k)),
    ("logsumexp", gf.reduce_logsumexp,
     lambda x, a, k: special.logsumexp(x, _np_axis(a), keepdims=k)),
    ("euclidean_norm", gf.math.reduce_euclidean_norm,
     lambda x, a, k: np.sqrt(np.sum(x * x, _np_axis(a), keepdims=k))),
]
REDUCTION_IDS = [row[0] for row in REDUCTIONS]
AXES = [None, 0, 1, -1, [0, 1]]


@pytest.mark.parametrize("name,fn,reference", REDUCTIONS, ids=REDUCTION_IDS)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_values_and_static_shape(name, fn, reference, axis, keepdims, rng):
    x = rng.uniform(0.5, 2.0, (2, 3))
    result = fn(gf.constant(x), axis=axis, keepdims=keepdims)
    expected = reference(x, axis, keepdims)
    assert result.shape.as_list() == list(np.shape(expected))
    np.testing.assert_allclose(run(result), expected, rtol=1e-12)


@pytest.mark.parametrize("name,fn,reference", REDUCTIONS, ids=REDUCTION_IDS)
@pytest.mark.parametrize("shape,axis,keepdims", [
    ((2, 3), None, False), ((2, 3), 0, False), ((2, 3), 1, True), ((2, 3), [0, 1], True),
    ((), None, False), ((3,), 0, True), ((1, 3), 0, False), ((2, 0), 1, False)],
    ids=["all", "axis0", "axis1-keep", "both-keep", "scalar", "vector-keep", "size1",
         "empty"])
def test_reduction_gradient(name, fn, reference, shape, axis, keepdims, rng):
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    assert gradient_error(lambda t: fn(t, axis=axis, keepdims=keepdims), [x]) < TOL


@pytest.mark.parametrize("name,fn,reference", REDUCTIONS, ids=REDUCTION_IDS)
def test_reduction_second_order(name, fn, reference, rng):
    x = rng.uniform(0.5, 2.0, (2, 3))
    assert second_order_error(lambda t: fn(t, axis=1), [x]) < 1e-5


@pytest.mark.parametrize("name,fn,reference", REDUCTIONS, ids=REDUCTION_IDS)
def test_reduction_gradient_with_dynamic_shape_and_axis(name, fn, reference, rng):
    x = gf.placeholder(gf.float64, shape=[None, 3])
    axis = gf.placeholder(gf.int32, shape=[])
    y = fn(x, axis=axis)
    assert y.shape.ndims is None
    (grad,) = gf.gradients(gf.reduce_sum(y * y), x)
    value = rng.uniform(0.5, 2.0, (2, 3))
    static_x = gf.constant(value)
    (expected,) = gf.gradients(gf.reduce_sum(fn(static_x, axis=0) ** 2), static_x)
    np.testing.assert_allclose(run(grad, {x: value, axis: 0}), run(expected), rtol=1e-10)


def test_reduction_aliases_and_errors():
    x = gf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert run(gf.reduce_sum(x, reduction_indices=[1], keep_dims=True)).tolist() == [[3], [7]]
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        gf.reduce_prod(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        gf.reduce_max(x, keepdims=True, keep_dims=True)
    with pytest.raises(ValueError, match=r"Invalid reduction dimension 2 .* of shape \(2, 2\)"):
        gf.reduce_min(x, axis=2)
    with pytest.raises(TypeError, match="must be int32 or int64, got float32"):
        gf.reduce_sum(x, axis=gf.constant(0.0))
    with pytest.raises(TypeError, match="'Any' .* DataType int32 not in list"):
        gf.reduce_any([1, 0])
    with pytest.raises(TypeError, match="'Max' .* DataType complex64"):
        gf.reduce_max(gf.constant([1j], dtype=gf.complex64))


def test_reduction_static_shapes_with_unknown_dims():
    x = gf.placeholder(gf.float32, shape=[None, 3, 4])
    assert gf.reduce_prod(x, axis=1).shape.as_list() == [None, 4]
    assert gf.reduce_max(x, axis=[0, 2], keepdims=True).shape.as_list() == [1, 3, 1]
    axis = gf.placeholder(gf.int32, shape=[1])
    assert gf.reduce_min(x, axis=axis, keepdims=True).shape.as_list() == [None] * 3
    assert gf.reduce_min(x, axis=axis).shape.ndims is None


def test_empty_reductions_return_identities():
    empty = gf.zeros([0])
    values = run([gf.reduce_sum(empty), gf.reduce_prod(empty), gf.reduce_max(empty),
                  gf.reduce_min(empty), gf.reduce_mean(empty), gf.reduce_logsumexp(empty),
                  gf.reduce_max(gf.zeros([0], dtype=gf.int32)),
                  gf.reduce_any(gf.zeros([0], dtype=gf.bool)),
                  gf.reduce_all(gf.zeros([0], dtype=gf.bool))])
    assert values[:4] == [0.0, 1.0, -np.inf, np.inf]
    assert np.isnan(values[4]) and values[5] == -np.inf
    assert values[6] == np.iinfo(np.int32).min
    assert (values[7], values[8]) == (False, True)


def test_integer_and_half_means():
    assert run(gf.reduce_mean([-1, -2])) == -1  # truncates toward zero, as TensorFlow
    assert run(gf.reduce_mean([1, 2])) == 1
    assert run(gf.reduce_mean(gf.constant([100, 100], dtype=gf.int8))) == 100
    half = run(gf.reduce_mean(gf.constant(np.full(4096, 0.1), dtype=gf.float16)))
    assert half.dtype == np.float16 and abs(float(half) - 0.1) < 1e-3


def test_any_all():
    x = [[True, False], [True, True]]
    assert run(gf.reduce_any(x, axis=1)).tolist() == [True, True]
    assert run(gf.reduce_all(x, axis=1)).tolist() == [False, True]
    assert run(gf.reduce_all(x)) == np.False_


def test_max_min_gradient_splits_ties():
    x = gf.placeholder(gf.float64, shape=[2, 3])
    value = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    (dmax,) = gf.gradients(gf.reduce_max(x, axis=1), x)
    (dmin,) = gf.gradients(gf.reduce_min(x), x)
    np.testing.assert_allclose(run(dmax, {x: value}), [[0, 0.5, 0.5], [1 / 3] * 3])
    np.testing.assert_allclose(run(dmin, {x: value}), [[1, 0, 0], [0, 0, 0]])


@pytest.mark.parametrize("value", [
    [[0.0, 2.0, 3.0], [1.0, 2.0, 4.0]], [[0.0, 0.0, 3.0], [0.0, 5.0, 0.0]],
    [[0.0, 0.0, 0.0], [2.0, -1.0, 0.5]]], ids=["one-zero", "two-zeros", "all-zero"])
def test_prod_gradient_with_zeros(value):
    value = np.array(value)
    x = gf.placeholder(gf.float64, shape=[2, 3])
    (grad,) = gf.gradients(gf.reduce_prod(x, axis=1), x)
    expected = [[np.prod(np.delete(row, i)) for i in range(3)] for row in value]
    np.testing.assert_allclose(run(grad, {x: value}), expected)
    assert gradient_error(lambda t: gf.reduce_prod(t, axis=1), [value]) < TOL
    assert second_order_error(lambda t: gf.reduce_prod(t, axis=1), [value]) < 1e-5
    assert second_order_error(lambda t: gf.reduce_prod(t, axis=[0, 1]), [value]) < 1e-5


def test_logsumexp_is_stable():
    values = run([gf.reduce_logsumexp([1000.0, 1000.0]),
                  gf.reduce_logsumexp([-np.inf, -np.inf]),
                  gf.reduce_logsumexp([np.inf, 1.0]),
                  gf.reduce_logsumexp([[1000.0, 1000.0]], axis=1, keepdims=True)])
    np.testing.assert_allclose(values[0], 1000 + np.log(2))
    assert values[1] == -np.inf and values[2] == np.inf
    assert values[3].shape == (1, 1)
    x = gf.placeholder(gf.float64, shape=[3])
    (grad,) = gf.gradients(gf.reduce_logsumexp(x), x)
    np.testing.assert_allclose(run(grad, {x: [1000.0, 1000.0, -1000.0]}), [0.5, 0.5, 0.0])
    assert gf.reduce_logsumexp(x, name="lse").op.name == "lse"


def test_euclidean_norm_does_not_overflow():
    x = gf.constant([3e200, 4e200], dtype=gf.float64)
    np.testing.assert_allclose(run(gf.math.reduce_euclidean_norm(x)), 5e200)
    assert run(gf.math.reduce_euclidean_norm([[3, 4], [5, 12]], axis=1)).tolist() == [5, 13]


# --------------------------------------------------------------- argmax, argmin
def test_argmax_argmin_values_and_signatures():
    x = [[1, 5, 5], [3, 2, 0]]
    assert run(gf.argmax(x)).tolist() == [1, 0, 0]
    assert run(gf.argmax(x, axis=1)).tolist() == [1, 0]
    assert run(gf.argmin(x, dimension=1)).tolist() == [0, 2]
    assert run(gf.argmin([3, 1, 1, 2])) == 1
    assert gf.argmax(x).dtype == gf.int64
    result = gf.argmax(x, 1, output_type=gf.int32)
    assert result.dtype == gf.int32 and result.shape.as_list() == [2]
    assert run(gf.argmax([True, False, True])) == 0
    assert gf.argmax(gf.placeholder(gf.float32, [None, 4, 5]), -1).shape.as_list() == [None, 4]
    axis = gf.placeholder(gf.int32, shape=[])
    assert gf.argmin(gf.placeholder(gf.float32, [2, 3]), axis).shape.as_list() == [None]


@pytest.mark.parametrize("call,error,message", [
    (lambda: gf.argmax([1, 2], axis=0, dimension=0), ValueError,
     "Cannot specify both 'dimension' and 'axis'."),
    (lambda: gf.argmax([[1]], output_type=gf.float32), TypeError,
     "output_type' has DataType float32 not in list of allowed values: int16, uint16"),
    (lambda: gf.argmin([[1, 5], [3, 2]], 2), ValueError,
     r"Dimension \(2\) must be in the range \[-2, 2\)"),
    (lambda: gf.argmax([1.0], gf.constant(0.0)), TypeError, "'dimension'"),
    (lambda: gf.argmax(gf.constant([1j])), TypeError, "complex128"),
])
def test_argmax_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_argmax_of_empty_axis_fails_when_run():
    with pytest.raises(gf.errors.InvalidArgumentError, match=r"axis 0 is empty in shape \[0, 2\]"):
        run(gf.argmax(gf.zeros([0, 2]), 0))


# ------------------------------------------------------------------------ scans
def _np_scan(ufunc, identity, x, axis, exclusive, reverse):
    values = np.flip(x, axis) if reverse else x
    out = ufunc.accumulate(values, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


SCANS = [("cumsum", gf.cumsum, np.add, 0), ("cumprod", gf.cumprod, np.multiply, 1)]
FLAGS = [(False, False), (True, False), (False, True), (True, True)]
FLAG_IDS = ["plain", "exclusive", "reverse", "exclusive-reverse"]


@pytest.mark.parametrize("name,fn,ufunc,identity", SCANS, ids=[s[0] for s in SCANS])
@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scan_values(name, fn, ufunc, identity, exclusive, reverse, axis, rng):
    x = rng.uniform(0.5, 2.0, (2, 3))
    result = fn(x, axis=axis, exclusive=exclusive, reverse=reverse)
    assert result.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(result), _np_scan(ufunc, identity, x, axis % 2, exclusive,
                                                     reverse))


@pytest.mark.parametrize("name,fn,ufunc,identity", SCANS, ids=[s[0] for s in SCANS])
@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("shape,axis", [((2, 3), 1), ((2, 3), 0), ((1,), 0), ((0, 2), 0)],
                         ids=["rows", "columns", "single", "empty"])
def test_scan_gradient(name, fn, ufunc, identity, exclusive, reverse, shape, axis, rng):
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    build = lambda t: fn(t, axis=axis, exclusive=exclusive, reverse=reverse)  # noqa: E731
    assert gradient_error(build, [x]) < TOL


@pytest.mark.parametrize("name,fn,ufunc,identity", SCANS, ids=[s[0] for s in SCANS])
@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=FLAG_IDS)
def test_scan_second_order(name, fn, ufunc, identity, exclusive, reverse, rng):
    x = rng.uniform(0.5, 2.0, (4,))
    build = lambda t: fn(t, exclusive=exclusive, reverse=reverse)  # noqa: E731
    assert second_order_error(build, [x]) < 1e-5


def test_scan_integers_and_errors():
    assert run(gf.cumsum([1, 2, 3], exclusive=True, reverse=True)).tolist() == [5, 3, 0]
    assert run(gf.cumprod([1, 2, 3], exclusive=True)).tolist() == [1, 1, 2]
    with pytest.raises(TypeError, match="'axis' of 'Cumsum' .* DataType int64|Expected int32"):
        gf.cumsum([1, 2], axis=0.5)
    with pytest.raises(ValueError, match=r"scan axis in the range \[-1, 1\), but got 1"):
        gf.cumsum([1, 2, 3], axis=1)
    with pytest.raises(ValueError, match="rank >= 1"):
        gf.cumprod(3.0)
    with pytest.raises(TypeError, match="'Cumsum'"):
        gf.cumsum([True])


# ---------------------------------------------------------------------- sorting
def test_sort_and_argsort_values():
    x = [[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]
    assert run(gf.sort(x)).tolist() == [[1, 2, 3], [0, 4, 5]]
    assert run(gf.sort(x, direction="DESCENDING")).tolist() == [[3, 2, 1], [5, 4, 0]]
    assert run(gf.sort(x, axis=0)).tolist() == [[0, 1, 2], [3, 5, 4]]
    ties = [3, 1, 1, 3, 2]
    assert run(gf.argsort(ties)).tolist() == [1, 2, 4, 0, 3]
    assert run(gf.argsort(ties, direction="DESCENDING")).tolist() == [0, 3, 4, 1, 2]
    order = gf.argsort(gf.placeholder(gf.float32, [None, 4]))
    assert order.dtype == gf.int32 and order.shape.as_list() == [None, 4]
    assert gf.sort(x, name="sorted").op.name == "sorted"


@pytest.mark.parametrize("axis,direction", [(-1, "ASCENDING"), (0, "ASCENDING"),
                                            (1, "DESCENDING"), (0, "DESCENDING")])
def test_sort_gradient(axis, direction, rng):
    x = rng.permutation(12).reshape(3, 4) + rng.uniform(0, 0.5, (3, 4))
    assert gradient_error(lambda t: gf.sort(t, axis=axis, direction=direction), [x]) < TOL
    assert second_order_error(lambda t: gf.sort(t, axis=axis, direction=direction) ** 2,
                              [x]) < 1e-5


def test_sort_gradient_routes_through_the_permutation():
    x = gf.placeholder(gf.float64, shape=[4])
    weights = gf.constant([1.0, 2.0, 3.0, 4.0], dtype=gf.float64)
    (grad,) = gf.gradients(gf.reduce_sum(gf.sort(x) * weights), x)
    assert run(grad, {x: [0.3, -1.0, 2.0, 0.1]}).tolist() == [3.0, 1.0, 4.0, 2.0]
    assert gf.gradients(gf.cast(gf.argsort(x), gf.float64), x) == [None]


@pytest.mark.parametrize("call,error,message", [
    (lambda: gf.sort([3, 1], direction="UP"), ValueError,
     "`direction` should be one of ASCENDING, DESCENDING. Received: direction=UP"),
    (lambda: gf.argsort([3, 1], axis=gf.placeholder(gf.int32, [])), ValueError,
     "`axis` must be a constant scalar"),
    (lambda: gf.sort(3.0), ValueError, "rank >= 1"),
    (lambda: gf.sort([[1.0]], axis=2), ValueError, "axis 2 is out of range"),
    (lambda: gf.sort(gf.constant([1j])), TypeError, "'sort'"),
])
def test_sort_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("exclusive,reverse", FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("value", [[2.0, 0.0, 3.0, 0.5], [0.0, 2.0, 0.0, 3.0],
                                   [1.5, 2.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
                         ids=["one-zero", "two-zeros", "last-zero", "all-zero"])
def test_cumprod_gradient_with_zeros(exclusive, reverse, value):
    build = lambda t: gf.cumprod(t, exclusive=exclusive, reverse=reverse)  # noqa: E731
    assert gradient_error(build, [np.array(value)]) < TOL
    assert gradient_error(lambda t: build(gf.reshape(t, [2, 2])), [np.array(value)]) < TOL
    if value.count(0.0) == 1:  # see _cumprod_grad: exact to second order with one zero
        assert second_order_error(build, [np.array(value)]) < 1e-5


def test_arg_max_and_arg_min_are_tf1s_older_spellings():
    x = gf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    biggest, smallest = gf.arg_max(x, 1), gf.arg_min(x, 0, output_type=gf.int32)
    assert biggest.op.name == "ArgMax" and smallest.op.name == "ArgMin"
    assert biggest.dtype == gf.int64 and smallest.dtype == gf.int32
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(biggest), [1, 0])
        np.testing.assert_array_equal(sess.run(smallest), [0, 1, 0])
