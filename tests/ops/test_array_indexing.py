"""Slicing, gathering, scattering, masks, one-hot and unique: values, shapes, errors, gradients."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error

X = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
B = np.arange(24, dtype=np.float64).reshape(2, 3, 4)

# __getitem__ keys and the NumPy result they must give on B (and the same static shape)
GETITEM_KEYS = [
    1, -1, (0, -1), (1, 2, 3), slice(1, None), slice(None, None, -1), slice(-2, None),
    (slice(None), slice(None, None, 2)), (slice(None), slice(2, 0, -1)),
    (Ellipsis, 1), (Ellipsis, None), (None, 1), (1, Ellipsis, slice(None, None, -2)),
    (slice(None), None, slice(1, 3), None), (slice(5, None),), (slice(-9, 9),),
    (slice(None), slice(3, 0, -2), -1), (Ellipsis,),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=[repr(k) for k in GETITEM_KEYS])
def test_getitem_matches_numpy(sess, key):
    t = gf.constant(B)[key]
    expected = B[key]
    assert t.shape.as_list() == list(np.shape(expected))
    np.testing.assert_array_equal(sess.run(t), expected)


def test_getitem_with_int_tensors(sess):
    i = gf.placeholder(gf.int32, [])
    j = gf.constant(-1, gf.int64)
    c = gf.constant(B)
    t = c[i, 1:, j]
    assert t.shape.as_list() == [2]
    np.testing.assert_array_equal(sess.run(t, {i: 1}), B[1, 1:, -1])
    u = c[:, i:i + 2]
    assert u.shape.as_list() == [2, None, 4]
    np.testing.assert_array_equal(sess.run(u, {i: 1}), B[:, 1:3])


def test_getitem_with_a_bool_key_is_a_boolean_mask(sess):
    c = gf.constant(X)
    np.testing.assert_array_equal(sess.run(c[c > 5]), X[X > 5])
    np.testing.assert_array_equal(sess.run(c[np.array([True, False, True])]), X[[0, 2]])
    np.testing.assert_array_equal(sess.run(c[1, True]), X[1, 1])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        c[True]


def test_strided_slice_masks(sess):
    t = gf.strided_slice(B, [0, 1, 0], [0, 3, 1], [1, 1, -1], begin_mask=5, end_mask=5,
                         shrink_axis_mask=0, new_axis_mask=0)
    np.testing.assert_array_equal(sess.run(t), B[:, 1:3, ::-1])
    t = gf.strided_slice(B, [0, 1], [0, 2], shrink_axis_mask=2, ellipsis_mask=1)
    assert t.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(sess.run(t), B[..., 1])


def test_slice(sess):
    t = gf.slice(X, [1, 0], [-1, 2])
    assert t.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(sess.run(t), X[1:, :2])
    begin = gf.placeholder(gf.int32, [2])
    t = gf.slice(X, begin, [2, -1])
    assert t.shape.as_list() == [2, None]
    np.testing.assert_array_equal(sess.run(t, {begin: [1, 1]}), X[1:3, 1:])
    np.testing.assert_array_equal(sess.run(gf.slice(X, [3, 4], [0, 0])), np.zeros((0, 0)))


GATHER_CASES = [
    ("axis0", dict(indices=[1, 0, 1]), lambda p: p[[1, 0, 1]]),
    ("axis1_matrix", dict(indices=[[0, 2], [1, 1]], axis=1), lambda p: p[:, [[0, 2], [1, 1]]]),
    ("negative_axis", dict(indices=[1], axis=-1), lambda p: p[..., [1]]),
    ("scalar_index", dict(indices=2, axis=2), lambda p: p[:, :, 2]),
    ("empty", dict(indices=np.zeros((0,), np.int32)), lambda p: p[:0]),
    ("batch", dict(indices=[[0, 2], [1, 1]], batch_dims=1, axis=2),
     lambda p: np.stack([p[0][:, [0, 2]], p[1][:, [1, 1]]])),
    ("batch_negative", dict(indices=[[0, 2], [1, 1]], batch_dims=-1, axis=1),
     lambda p: np.stack([p[0][[0, 2]], p[1][[1, 1]]])),
]


@pytest.mark.parametrize("kwargs,expected", [c[1:] for c in GATHER_CASES],
                         ids=[c[0] for c in GATHER_CASES])
def test_gather(sess, kwargs, expected):
    t = gf.gather(B, **kwargs)
    want = expected(B)
    assert t.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(sess.run(t), want)


def test_gather_nd_and_scatter_nd(sess):
    t = gf.gather_nd(X, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(sess.run(t), [2, 12])
    rows = gf.gather_nd(X, [[1], [0]])
    assert rows.shape.as_list() == [2, 4]
    np.testing.assert_array_equal(sess.run(rows), X[[1, 0]])
    batched = gf.gather_nd(B, [[[1], [0]], [[2], [2]]], batch_dims=1)
    assert batched.shape.as_list() == [2, 2, 4]
    np.testing.assert_array_equal(sess.run(batched), [B[0, [1, 0]], B[1, [2, 2]]])
    pointwise = gf.gather_nd(B, [[0, 1], [2, 3]], batch_dims=1)
    np.testing.assert_array_equal(sess.run(pointwise), [B[0, 0, 1], B[1, 2, 3]])
    s = gf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5])
    assert s.shape.as_list() == [5]
    np.testing.assert_array_equal(sess.run(s), [0, 4, 0, 2, 0])
    s = gf.scatter_nd([[0, 1]], [[5.0, 6.0]], [2, 2, 2])
    np.testing.assert_array_equal(sess.run(s)[0, 1], [5, 6])


def test_boolean_mask(sess):
    t = gf.boolean_mask(X, [True, False, True])
    assert t.shape.as_list() == [2, 4]
    np.testing.assert_array_equal(sess.run(t), X[[0, 2]])
    t = gf.boolean_mask(B, [True, False, True, False], axis=-1)
    np.testing.assert_array_equal(sess.run(t), B[..., [0, 2]])
    mask = gf.placeholder(gf.bool, [3, 4])
    t = gf.boolean_mask(X, mask)
    assert t.shape.as_list() == [None]
    np.testing.assert_array_equal(sess.run(t, {mask: X > 5}), X[X > 5])


def test_one_hot(sess):
    t = gf.one_hot([0, -1, 3, 1], 3)
    assert (t.dtype, t.shape.as_list()) == (gf.float32, [4, 3])
    np.testing.assert_array_equal(sess.run(t), [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 1, 0]])
    t = gf.one_hot([[0, 2]], 3, on_value=5, off_value=-1, axis=0)
    assert (t.dtype, t.shape.as_list()) == (gf.int32, [3, 1, 2])
    np.testing.assert_array_equal(sess.run(t)[:, 0], [[5, -1], [-1, -1], [-1, 5]])
    assert gf.one_hot([1], 2, dtype=gf.int64).dtype == gf.int64
    assert gf.one_hot([1], 2, on_value=2, dtype=gf.float64).dtype == gf.float64
    np.testing.assert_array_equal(sess.run(gf.one_hot([1], gf.constant(2), 3.0, 1.0)), [[1, 3]])


def test_sequence_mask(sess):
    t = gf.sequence_mask([1, 3, 0], 4)
    assert (t.dtype, t.shape.as_list()) == (gf.bool, [3, 4])
    np.testing.assert_array_equal(sess.run(t), np.arange(4) < np.array([[1], [3], [0]]))
    t = gf.sequence_mask([[1, 3], [2, 0]], dtype=gf.float32)
    assert (t.dtype, t.shape.as_list()) == (gf.float32, [2, 2, None])
    np.testing.assert_array_equal(sess.run(t), np.arange(3) < np.array([[[1], [3]], [[2], [0]]]))
    assert sess.run(gf.sequence_mask(np.zeros(0, np.int32))).shape == (0, 0)


def test_unique(sess):
    y, idx = gf.unique([3, 1, 3, 2, 1])
    assert y.shape.as_list() == [None] and idx.shape.as_list() == [5]
    result = sess.run(gf.unique([3, 1, 3, 2, 1]))
    np.testing.assert_array_equal(result.y, [3, 1, 2])
    np.testing.assert_array_equal(result.idx, [0, 1, 0, 2, 1])
    counted = sess.run(gf.unique_with_counts([2.5, 2.5, -1.0], out_idx=gf.int64))
    np.testing.assert_array_equal(counted.y, [2.5, -1.0])
    assert counted.idx.dtype == np.int64
    np.testing.assert_array_equal(counted.count, [2, 1])
    empty = sess.run(gf.unique(np.zeros(0, np.float32)))
    assert empty.y.shape == (0,) and empty.idx.shape == (0,)


BAD_INPUT_CASES = [
    ("getitem_float", lambda: gf.constant(X)[1.5], TypeError, "valid indices"),
    ("getitem_list", lambda: gf.constant(X)[[0, 1]], TypeError, "valid indices"),
    ("getitem_float_tensor", lambda: gf.constant(X)[gf.constant(1.0)], TypeError, "valid"),
    ("getitem_bounds", lambda: gf.constant(X)[3], ValueError, "out of bounds"),
    ("getitem_too_many", lambda: gf.constant(X)[0, 0, 0], ValueError, "rank 2"),
    ("getitem_zero_step", lambda: gf.constant(X)[::0], ValueError, "non-zero"),
    ("slice_size", lambda: gf.slice(X, [1, 0], [3, 2]), ValueError, r"size\[0\] in \[0, 2\]"),
    ("slice_begin", lambda: gf.slice(X, [4, 0], [-1, 2]), ValueError, r"begin\[0\]"),
    ("slice_length", lambda: gf.slice(X, [1, 0], [2]), ValueError, "one entry per dimension"),
    ("gather_axis", lambda: gf.gather(X, [0], axis=2), ValueError, "out of range"),
    ("gather_float_indices", lambda: gf.gather(X, [0.0]), TypeError, "indices"),
    ("gather_batch_axis", lambda: gf.gather(B, [[0], [1]], batch_dims=2, axis=1), ValueError,
     "less than or equal to axis"),
    ("gather_batch_shape", lambda: gf.gather(B, [[0], [1], [1]], batch_dims=1, axis=1),
     ValueError, "Batch dimensions"),
    ("gather_scalar_params", lambda: gf.gather(1.0, [0]), ValueError, "at least 1-D"),
    ("gather_nd_depth", lambda: gf.gather_nd(X, [[1, 2, 0]]), ValueError, "params.rank"),
    ("gather_nd_batch", lambda: gf.gather_nd(B, [[0], [1], [2]], batch_dims=1), ValueError,
     "Batch dimensions"),
    ("scatter_nd_updates", lambda: gf.scatter_nd([[1]], [1.0, 2.0], [5]), ValueError,
     "updates of scatter_nd must have shape"),
    ("boolean_mask_shape", lambda: gf.boolean_mask(X, [True, False]), ValueError,
     "incompatible"),
    ("boolean_mask_scalar", lambda: gf.boolean_mask(X, True), ValueError, "scalar"),
    ("boolean_mask_dtype", lambda: gf.boolean_mask(X, [1, 0, 1]), TypeError, "bool"),
    ("boolean_mask_rank", lambda: gf.boolean_mask(X, gf.placeholder(gf.bool)), ValueError,
     "Number of mask dimensions"),
    ("one_hot_indices", lambda: gf.one_hot([0.0], 3), TypeError, "indices"),
    ("one_hot_values", lambda: gf.one_hot([0], 3, on_value=1.0, off_value=0), TypeError,
     "does not match dtype int32 of off_value"),
    ("one_hot_dtype", lambda: gf.one_hot([0], 3, on_value=1.5, dtype=gf.int32), TypeError,
     "dtype parameter"),
    ("one_hot_depth", lambda: gf.one_hot([0], -1), ValueError, "non-negative"),
    ("sequence_mask_maxlen", lambda: gf.sequence_mask([1], [2]), ValueError, "scalar"),
    ("sequence_mask_negative", lambda: gf.sequence_mask([1], -1), ValueError, "non-negative"),
    ("unique_rank", lambda: gf.unique([[1, 2]]), ValueError, "rank 1"),
]


@pytest.mark.parametrize("build,error,message", [c[1:] for c in BAD_INPUT_CASES],
                         ids=[c[0] for c in BAD_INPUT_CASES])
def test_bad_input_is_rejected_at_build_time(build, error, message):
    with pytest.raises(error, match=message):
        build()


RUN_TIME_ERROR_CASES = [
    ("gather", lambda i: gf.gather(X, i), [[0, 5]], r"indices\[0,1\] = 5 is not in \[0, 3\)"),
    ("gather_negative", lambda i: gf.gather(X, i, axis=1), [-1], r"indices\[0\] = -1"),
    ("gather_batch", lambda i: gf.gather(B, i, batch_dims=1, axis=1), [[0], [3]],
     r"indices\[1,0\] = 3"),
    ("gather_batch_shape", lambda i: gf.gather(B, i, batch_dims=1, axis=1), [[0]],
     r"must equal indices.shape\[:1\] = \[1\]"),
    ("gather_nd", lambda i: gf.gather_nd(X, i), [[1, 4]],
     r"indices\[0\] = \[1, 4\] does not index into param shape \[3, 4\]"),
    ("scatter_nd", lambda i: gf.scatter_nd(i, [1.0], [5]), [[5]],
     r"indices\[0\] = \[5\] does not index into shape \[5\]"),
    ("getitem", lambda i: gf.constant(X)[i], 3, "index 3 is out of bounds"),
    ("slice", lambda i: gf.slice(X, i, [2, 2]), [2, 0], r"size\[0\] in \[0, 1\]"),
    ("boolean_mask", lambda m: gf.boolean_mask(X, m), [True], "does not match"),
    ("unsorted_segment_sum", lambda i: gf.unsorted_segment_sum(X, i, 2), [0, 2, 1],
     r"segment_ids\[1\] = 2 is out of range \[0, 2\)"),
]


@pytest.mark.parametrize("build,value,message", [c[1:] for c in RUN_TIME_ERROR_CASES],
                         ids=[c[0] for c in RUN_TIME_ERROR_CASES])
def test_run_time_index_errors(sess, build, value, message):
    array = np.asarray(value)
    dtype = gf.int32 if array.dtype == np.int64 else gf.as_dtype(array.dtype)
    p = gf.placeholder(dtype, [None] * array.ndim)
    t = build(p)
    with pytest.raises(gf.errors.InvalidArgumentError, match=message) as info:
        sess.run(t, {p: array})
    assert info.value.op is not None


# (id, build from placeholders, input shapes); every input is differentiated
GRADIENT_CASES = [
    ("getitem", lambda x: x[1:, ::-2, None], [(3, 4)]),
    ("getitem_ellipsis", lambda x: x[..., 1], [(2, 2, 3)]),
    ("getitem_scalar", lambda x: x[-1, 0], [(2, 2)]),
    ("strided_slice", lambda x: gf.strided_slice(x, [0, 3], [0, 0], [1, -2], begin_mask=1,
                                                 end_mask=1), [(2, 4)]),
    ("slice", lambda x: gf.slice(x, [1, 0], [-1, 2]), [(3, 4)]),
    ("slice_empty", lambda x: gf.slice(x, [1, 0], [0, 2]), [(3, 4)]),
    ("gather_axis0", lambda x: gf.gather(x, [0, 2, 0]), [(3, 2)]),
    ("gather_no_indices", lambda x: gf.gather(x, np.zeros(0, np.int32), axis=1), [(2, 3)]),
    ("gather_size_one", lambda x: gf.gather(x, [0, 0]), [(1,)]),
    ("gather_axis1", lambda x: gf.gather(x, [[0, 2], [1, 1]], axis=1), [(2, 3)]),
    ("gather_axis_last", lambda x: gf.gather(x, [1, 0, 1], axis=-1), [(2, 1, 2)]),
    ("gather_batch", lambda x: gf.gather(x, [[0, 2], [1, 1]], batch_dims=1, axis=2),
     [(2, 2, 3)]),
    ("gather_batch_at_axis", lambda x: gf.gather(x, [[0, 2, 2], [1, 1, 0]], batch_dims=1),
     [(2, 3)]),
    ("gather_two_batch_dims", lambda x: gf.gather(x, [[[1], [0]], [[0], [0]]], batch_dims=2),
     [(2, 2, 2)]),
    ("gather_nd", lambda x: gf.gather_nd(x, [[0, 1], [2, 3], [0, 1]]), [(3, 4)]),
    ("gather_nd_rows", lambda x: gf.gather_nd(x, [[1], [0], [1]]), [(3, 2)]),
    ("gather_nd_scalar_params", lambda x: gf.gather_nd(x, [[0, 0]]), [(1, 1)]),
    ("scatter_nd_empty", lambda u: gf.scatter_nd(np.zeros((0, 1), np.int32), u, [3]), [(0,)]),
    ("gather_nd_batch", lambda x: gf.gather_nd(x, [[[1], [0]], [[2], [2]]], batch_dims=1),
     [(2, 3, 2)]),
    ("scatter_nd", lambda u: gf.scatter_nd([[1], [3], [1]], u, [5, 2]), [(3, 2)]),
    ("boolean_mask", lambda x: gf.boolean_mask(x, [[True, False, True], [False, True, True]]),
     [(2, 3)]),
    ("boolean_mask_axis", lambda x: gf.boolean_mask(x, [True, False, True], axis=1),
     [(2, 3, 2)]),
    ("boolean_mask_none", lambda x: gf.boolean_mask(x, [False, False]), [(2, 2)]),
]


@pytest.mark.parametrize("build,shapes", [c[1:] for c in GRADIENT_CASES],
                         ids=[c[0] for c in GRADIENT_CASES])
def test_gradient_matches_finite_differences(rng, build, shapes):
    inputs = [rng.standard_normal(s) for s in shapes]
    assert gradient_error(build, inputs) < 1e-7


SECOND_ORDER_CASES = ["getitem", "slice", "gather_axis0", "gather_axis1", "gather_batch",
                      "gather_nd", "gather_nd_rows", "scatter_nd", "boolean_mask"]


@pytest.mark.parametrize("name", SECOND_ORDER_CASES)
def test_second_order_through_the_adjoint_ops(rng, name):
    build, shapes = {c[0]: c[1:] for c in GRADIENT_CASES}[name]
    inputs = [rng.standard_normal(s) for s in shapes]
    assert second_order_error(lambda *xs: gf.square(build(*xs)), inputs) < 1e-6


def test_gather_and_gather_nd_rows_give_indexed_slices(sess):
    params = gf.placeholder(gf.float64, [3, 2])
    (by_gather,) = gf.gradients(gf.gather(params, [[2, 0], [2, 2]]), params)
    (by_rows,) = gf.gradients(gf.gather_nd(params, [[1], [1]]), params)
    (by_points,) = gf.gradients(gf.gather_nd(params, [[1, 0]]), params)
    (by_axis1,) = gf.gradients(gf.gather(params, [1], axis=1), params)
    assert isinstance(by_gather, gf.IndexedSlices) and isinstance(by_rows, gf.IndexedSlices)
    assert isinstance(by_points, gf.Tensor) and isinstance(by_axis1, gf.Tensor)
    value = sess.run(by_gather, {params: np.zeros((3, 2))})
    np.testing.assert_array_equal(value.indices, [2, 0, 2, 2])
    np.testing.assert_array_equal(value.dense_shape, [3, 2])
    np.testing.assert_array_equal(sess.run(gf.convert_to_tensor(by_rows),
                                           {params: np.zeros((3, 2))}), [[0, 0], [2, 2], [0, 0]])


def test_gradient_of_gather_of_gathered_rows(sess, rng):
    """A gather whose output gradient is itself IndexedSlices (nested gathers)."""
    value = rng.standard_normal((4, 3))
    build = [lambda x: gf.gather(gf.gather(x, [3, 1, 1]), [2, 0]),
             lambda x: gf.gather(gf.gather(x, [3, 1, 1]), [2, 0], axis=1 - 1)[:, ::-1],
             lambda x: gf.gather_nd(gf.gather(x, [0, 2]), [[1], [1]]),
             lambda x: gf.gather(gf.gather_nd(x, [[1], [0]]), [1, 1])]
    for fn in build:
        assert gradient_error(fn, [value]) < 1e-7
        x = gf.constant(value)
        (grad,) = gf.gradients(fn(x), x)
        assert not isinstance(getattr(grad, "values", None), gf.IndexedSlices)


def test_gather_gradient_with_unknown_shapes(sess, rng):
    value = rng.standard_normal((2, 3, 4))
    p = gf.placeholder(gf.float64, [None, 3, None])
    c = gf.constant(value)
    for build in (lambda x: gf.gather(x, [[0, 2]], axis=1),
                  lambda x: gf.gather(x, [[0, 2], [1, 1]], batch_dims=1, axis=2),
                  lambda x: gf.gather_nd(x, [[[1], [0]], [[2], [2]]], batch_dims=1),
                  lambda x: gf.slice(x, [1, 0, 1], [-1, 2, 2]), lambda x: x[:, 1:, ::-1],
                  lambda x: gf.boolean_mask(x, [True, False])):
        (dynamic,) = gf.gradients(gf.reduce_sum(gf.square(build(p))), p)
        (static,) = gf.gradients(gf.reduce_sum(gf.square(build(c))), c)
        np.testing.assert_allclose(sess.run(dynamic, {p: value}), sess.run(static))
    unknown_rank = gf.placeholder(gf.float64)
    (sparse,) = gf.gradients(gf.gather(unknown_rank, [1, 1]), unknown_rank)
    assert isinstance(sparse, gf.IndexedSlices)
    with pytest.raises(LookupError, match="known rank"):
        gf.gradients(gf.gather(unknown_rank, [1], axis=1), unknown_rank)


def test_index_and_mask_ops_are_not_differentiable():
    x = gf.placeholder(gf.float64, [3])
    ints = gf.cast(x, gf.int32)
    for t in (gf.one_hot(ints, 3), gf.sequence_mask(ints, 3, dtype=gf.float64),
              gf.unique(x).y, gf.unique_with_counts(x).y):
        assert gf.gradients(gf.reduce_sum(gf.cast(t, gf.float64)), x) == [None]
    on = gf.placeholder(gf.float64, [])
    assert gf.gradients(gf.one_hot([0, 1], 2, on_value=on, dtype=gf.float64), on) == [None]


def test_gather_with_a_run_time_axis_keeps_the_static_rank_as_tf1():
    params = gf.placeholder(gf.float32, [3, 4, 5])
    axis = gf.placeholder(gf.int32, [])
    gathered = gf.gather(params, [0, 1], axis=axis)
    assert gathered.shape.as_list() == [None, None, None]
    with gf.Session() as sess:
        value = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)
        np.testing.assert_array_equal(sess.run(gathered, {params: value, axis: 1}),
                                      value[:, [0, 1]])


def test_concat_gradient_with_a_negative_axis_on_inputs_of_unknown_rank():
    u, v = gf.placeholder(gf.float32), gf.placeholder(gf.float32)
    joined = gf.concat([u, v], axis=-1)
    upstream = np.arange(12.0, dtype=np.float32).reshape(2, 6)
    du, dv = gf.gradients(joined, [u, v], grad_ys=gf.constant(upstream))
    with gf.Session() as sess:
        got_u, got_v = sess.run([du, dv], {u: np.ones((2, 3)), v: np.ones((2, 3))})
    np.testing.assert_array_equal(got_u, upstream[:, :3])
    np.testing.assert_array_equal(got_v, upstream[:, 3:])
