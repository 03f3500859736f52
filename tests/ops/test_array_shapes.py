"""Array ops that reshape, join, repeat, pad and generate: values, shapes, errors, gradients."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error

X = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
B = np.arange(24, dtype=np.float64).reshape(2, 3, 4)

# (id, build from constants, expected NumPy value)
FORWARD_CASES = [
    ("reshape", lambda: gf.reshape(X, [2, -1]), X.reshape(2, 6)),
    ("reshape_scalar", lambda: gf.reshape([7.0], []), np.float32(7.0)),
    ("transpose_default", lambda: gf.transpose(B), B.transpose()),
    ("transpose_perm", lambda: gf.transpose(B, [1, 0, 2]), B.transpose(1, 0, 2)),
    ("expand_dims_neg", lambda: gf.expand_dims(X, -1), X[..., None]),
    ("squeeze_all", lambda: gf.squeeze(np.zeros((1, 3, 1))), np.zeros(3)),
    ("squeeze_axis", lambda: gf.squeeze(np.zeros((1, 3, 1)), [-1]), np.zeros((1, 3))),
    ("concat_neg_axis", lambda: gf.concat([X, X[:, :1]], -1), np.concatenate([X, X[:, :1]], 1)),
    ("stack_axis1", lambda: gf.stack([X, 2 * X], axis=1), np.stack([X, 2 * X], 1)),
    ("tile", lambda: gf.tile(X, [2, 3]), np.tile(X, (2, 3))),
    ("tile_zero", lambda: gf.tile(X, [0, 1]), np.zeros((0, 4), np.float32)),
    ("tile_scalar", lambda: gf.tile(np.float32(2.0), []), np.float32(2.0)),
    ("pad_constant", lambda: gf.pad(X, [[1, 0], [2, 1]]), np.pad(X, [(1, 0), (2, 1)])),
    ("pad_value", lambda: gf.pad(X, [[1, 0], [0, 1]], constant_values=7),
     np.pad(X, [(1, 0), (0, 1)], constant_values=7)),
    ("pad_reflect", lambda: gf.pad(X, [[2, 1], [3, 0]], "REFLECT"),
     np.pad(X, [(2, 1), (3, 0)], mode="reflect")),
    ("pad_symmetric", lambda: gf.pad(X, [[3, 0], [0, 4]], "symmetric"),
     np.pad(X, [(3, 0), (0, 4)], mode="symmetric")),
    ("pad_scalar", lambda: gf.pad(np.float32(3), np.zeros((0, 2), np.int32)), np.float32(3)),
    ("reverse", lambda: gf.reverse(B, [0, -1]), B[::-1, :, ::-1]),
    ("reverse_none", lambda: gf.reverse_v2(X, []), X),
    ("broadcast_to", lambda: gf.broadcast_to([1, 2], [3, 2]), np.array([[1, 2]] * 3, np.int32)),
    ("fill", lambda: gf.fill([2, 3], 1.5), np.full((2, 3), 1.5, np.float32)),
    ("zeros_like_dtype", lambda: gf.zeros_like(X, dtype=gf.int64), np.zeros((3, 4), np.int64)),
    ("ones_like_dtype", lambda: gf.ones_like(X, dtype=gf.float64), np.ones((3, 4))),
    ("range", lambda: gf.range(2, 9, 3), np.arange(2, 9, 3, dtype=np.int32)),
    ("range_float", lambda: gf.range(1.0, 2.0, 0.25), np.arange(1, 2, 0.25, dtype=np.float32)),
    ("range_negative_delta", lambda: gf.range(5, 1, -2), np.array([5, 3], np.int32)),
    ("range_limit_only", lambda: gf.range(4, dtype=gf.float64), np.arange(4.0)),
    ("range_empty", lambda: gf.range(3, 3), np.zeros(0, np.int32)),
    ("linspace", lambda: gf.linspace(0.0, 1.0, 5), np.linspace(0, 1, 5, dtype=np.float32)),
    ("linspace_one", lambda: gf.linspace(2.0, 3.0, 1), np.array([2.0], np.float32)),
    ("linspace_empty", lambda: gf.linspace(2.0, 3.0, 0), np.zeros(0, np.float32)),
    ("linspace_int", lambda: gf.lin_space(0, 1, 3), np.array([0.0, 0.5, 1.0])),
    ("linspace_axis", lambda: gf.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=1),
     np.array([[0, 0.5, 1], [1, 2, 3]], np.float32)),
    ("shape", lambda: gf.shape(B), np.array([2, 3, 4], np.int32)),
    ("shape_int64", lambda: gf.shape(B, out_type=gf.int64), np.array([2, 3, 4], np.int64)),
    ("size", lambda: gf.size(B), np.int32(24)),
    ("rank", lambda: gf.rank(B), np.int32(3)),
]


@pytest.mark.parametrize("build,expected", [c[1:] for c in FORWARD_CASES],
                         ids=[c[0] for c in FORWARD_CASES])
def test_forward_values_and_static_shapes(sess, build, expected):
    t = build()
    value = sess.run(t)
    assert t.shape.as_list() == list(np.shape(expected))
    assert value.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(value, expected, rtol=1e-6)


def test_split_by_sizes_count_and_inferred_size(sess):
    by_sizes = gf.split(X, [1, -1, 1], axis=1)
    by_count = gf.split(X, 3)
    assert [t.shape.as_list() for t in by_sizes] == [[3, 1], [3, 2], [3, 1]]
    for got, want in zip(sess.run(by_sizes), np.split(X, [1, 3], axis=1)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(sess.run(by_count), np.split(X, 3)):
        np.testing.assert_array_equal(got, want)
    (whole,) = gf.split(X, 1)
    np.testing.assert_array_equal(sess.run(whole), X)


def test_split_of_unknown_dimension_checks_divisibility_at_run_time(sess):
    p = gf.placeholder(gf.float32, [None, 4])
    parts = gf.split(p, 2)
    assert parts[0].shape.as_list() == [None, 4]
    np.testing.assert_array_equal(sess.run(parts[1], {p: X[:2]}), X[1:2])
    with pytest.raises(gf.errors.InvalidArgumentError, match="split"):
        sess.run(parts[0], {p: X})


def test_unstack_stack_and_identity_n(sess):
    rows = gf.unstack(B, axis=1)
    assert len(rows) == 3 and rows[0].shape.as_list() == [2, 4]
    np.testing.assert_array_equal(sess.run(rows[2]), B[:, 2])
    (single,) = gf.unstack(B[:1])
    np.testing.assert_array_equal(sess.run(single), B[0])
    a, b = gf.identity_n([X, [1, 2]])
    assert (a.dtype, b.dtype) == (gf.float32, gf.int32)
    np.testing.assert_array_equal(sess.run(b), [1, 2])
    assert gf.stack(gf.constant(X)).shape.as_list() == [3, 4]


def test_shape_n_and_meshgrid(sess):
    shapes = gf.shape_n([X, B])
    np.testing.assert_array_equal(sess.run(shapes[1]), [2, 3, 4])
    x, y = gf.meshgrid([1, 2, 3], [4, 5])
    ix, iy = gf.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    want_x, want_y = np.meshgrid([1, 2, 3], [4, 5])
    want_ix, want_iy = np.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    assert x.shape.as_list() == [2, 3] and ix.shape.as_list() == [3, 2]
    for got, want in zip(sess.run([x, y, ix, iy]), [want_x, want_y, want_ix, want_iy]):
        np.testing.assert_array_equal(got, want)


def test_partially_known_shapes_propagate():
    p = gf.placeholder(gf.float32, [None, 3, None])
    s = gf.shape(p)
    assert gf.reshape(p, gf.concat([[-1], s[1:]], 0)).shape.as_list() == [None, 3, None]
    assert gf.reshape(p, [s[0], 3, -1]).shape.as_list() == [None, 3, None]
    assert gf.tile(p, [2, 2, 1]).shape.as_list() == [None, 6, None]
    assert gf.pad(p, [[1, 1], [0, 2], [0, 0]]).shape.as_list() == [None, 5, None]
    assert gf.broadcast_to(gf.constant([1.0, 2.0]), gf.stack([s[0], 2])).shape.as_list() == \
        [None, 2]
    assert gf.zeros(gf.shape(p)[1:2]).shape.as_list() == [3]
    assert gf.tile(gf.placeholder(gf.float32), [2, 2]).shape.as_list() == [None, None]


BAD_INPUT_CASES = [
    ("reshape_count", lambda: gf.reshape(X, [5, -1]), ValueError, "12 elements"),
    ("reshape_two_unknown", lambda: gf.reshape(X, [-1, -1]), ValueError, "one dimension"),
    ("reshape_float_shape", lambda: gf.reshape(X, gf.constant([12.0])), TypeError, "shape"),
    ("transpose_perm", lambda: gf.transpose(X, [0, 0]), ValueError, "permutation"),
    ("expand_dims_axis", lambda: gf.expand_dims(X, 3), ValueError, r"\[-3, 2\]"),
    ("expand_dims_none", lambda: gf.expand_dims(X), ValueError, "axis"),
    ("squeeze_non_one", lambda: gf.squeeze(X, [0]), ValueError, "Can not squeeze dim"),
    ("concat_rank", lambda: gf.concat([X, B.astype(np.float32)], 0), ValueError, "rank"),
    ("concat_dims", lambda: gf.concat([X, X[:, :2]], 0), ValueError, "Dimension 1"),
    ("concat_dtypes", lambda: gf.concat([X, B[0]], 0), TypeError, "don't all match"),
    ("split_uneven", lambda: gf.split(X, 3, axis=1), ValueError, "evenly divisible by 3"),
    ("split_sizes", lambda: gf.split(X, [1, 1], axis=1), ValueError, "size 4"),
    ("stack_shapes", lambda: gf.stack([X, X[:2]]), ValueError, "must match"),
    ("unstack_num", lambda: gf.unstack(gf.placeholder(gf.float32, [None])), ValueError, "num"),
    ("tile_length", lambda: gf.tile(X, [2]), ValueError, "one entry per dimension"),
    ("tile_negative", lambda: gf.tile(X, [-1, 1]), ValueError, r"multiples\[0\] >= 0"),
    ("pad_mode", lambda: gf.pad(X, [[1, 0], [0, 1]], "WRAP"), ValueError, "REFLECT"),
    ("pad_negative", lambda: gf.pad(X, [[-1, 0], [0, 1]]), ValueError, "non-negative"),
    ("pad_shape", lambda: gf.pad(X, [[1, 0]]), ValueError, r"\[2, 2\]"),
    ("pad_reflect_size", lambda: gf.pad(X, [[3, 0], [0, 0]], "REFLECT"), ValueError,
     "less than the dimension size"),
    ("pad_symmetric_size", lambda: gf.pad(X, [[4, 0], [0, 0]], "SYMMETRIC"), ValueError,
     "no greater than"),
    ("pad_value_dtype", lambda: gf.pad(X, [[1, 0], [0, 1]], constant_values=gf.constant(1)),
     TypeError, "constant_values"),
    ("reverse_repeat", lambda: gf.reverse(X, [1, -1]), ValueError, "more than once"),
    ("reverse_range", lambda: gf.reverse(X, [2]), ValueError, "out of valid range"),
    ("broadcast_to", lambda: gf.broadcast_to([1, 2], [3, 3]), ValueError, "2 and 3"),
    ("broadcast_to_rank", lambda: gf.broadcast_to(X, [4]), ValueError, "lower-rank"),
    ("fill_value_rank", lambda: gf.fill([2], [1, 2]), ValueError, "scalar"),
    ("range_delta", lambda: gf.range(1, 5, 0), ValueError, "delta"),
    ("linspace_dtypes", lambda: gf.linspace(0.0, gf.constant(1.0, gf.float64), 3), TypeError,
     "one dtype"),
    ("linspace_num", lambda: gf.linspace(0.0, 1.0, -1), ValueError, "non-negative"),
    ("meshgrid_indexing", lambda: gf.meshgrid([1], indexing="xx"), ValueError, "'xy' or 'ij'"),
    ("meshgrid_keyword", lambda: gf.meshgrid([1], foo=1), TypeError, "invalid keyword"),
]


@pytest.mark.parametrize("build,error,message", [c[1:] for c in BAD_INPUT_CASES],
                         ids=[c[0] for c in BAD_INPUT_CASES])
def test_bad_input_is_rejected_at_build_time(build, error, message):
    with pytest.raises(error, match=message):
        build()


RUN_TIME_ERROR_CASES = [
    ("reshape", lambda p: gf.reshape(p, [5, -1]), X, "reshape"),
    ("tile", lambda p: gf.tile(p, gf.placeholder_with_default([2], [None])), X, "multiples"),
    ("pad_reflect", lambda p: gf.pad(p, [[3, 0], [0, 0]], "REFLECT"), X, "less than"),
    ("pad_negative", lambda p: gf.pad(p, gf.placeholder_with_default([[0, -1], [0, 0]],
                                                                     [2, 2])), X, "non-negative"),
    ("fill", lambda p: gf.fill(gf.shape(p) - 5, 1.0), X, "negative"),
]


@pytest.mark.parametrize("build,value,message", [c[1:] for c in RUN_TIME_ERROR_CASES],
                         ids=[c[0] for c in RUN_TIME_ERROR_CASES])
def test_run_time_errors_name_the_op(sess, build, value, message):
    p = gf.placeholder(gf.float32)
    t = build(p)
    with pytest.raises(gf.errors.InvalidArgumentError, match=message) as info:
        sess.run(t, {p: value})
    assert info.value.op is not None


# (id, build from placeholders, input shapes); every input is differentiated
GRADIENT_CASES = [
    ("reshape", lambda x: gf.reshape(x, [-1]), [(2, 3)]),
    ("reshape_empty", lambda x: gf.reshape(x, [3, 0]), [(0, 3)]),
    ("transpose", lambda x: gf.transpose(x, [2, 0, 1]), [(2, 3, 2)]),
    ("expand_dims", lambda x: gf.expand_dims(x, 1), [(2, 3)]),
    ("squeeze", lambda x: gf.squeeze(x, [1]), [(2, 1, 3)]),
    ("concat", lambda x, y: gf.concat([x, y], 1), [(2, 1), (2, 3)]),
    ("concat_empty_part", lambda x, y: gf.concat([x, y], 0), [(0, 2), (1, 2)]),
    ("transpose_size_one", lambda x: gf.transpose(x), [(1, 1, 2)]),
    ("stack_one", lambda x: gf.stack([x], axis=-1), [(2, 1)]),
    ("split_sizes", lambda x: gf.split(x, [1, -1], axis=1)[1], [(2, 3)]),
    ("split_count", lambda x: gf.split(x, 2, axis=0)[0] * gf.split(x, 2, axis=0)[1], [(4, 1)]),
    ("stack", lambda x, y: gf.stack([x, y], axis=1), [(2,), (2,)]),
    ("unstack", lambda x: gf.unstack(x, axis=1)[2], [(2, 3)]),
    ("identity_n", lambda x, y: gf.multiply(*gf.identity_n([x, y])), [(3,), (3,)]),
    ("tile", lambda x: gf.tile(x, [2, 3]), [(2, 3)]),
    ("tile_size_one", lambda x: gf.tile(x, [3, 1]), [(1, 1)]),
    ("tile_zero_multiple", lambda x: gf.tile(x, [0, 2]), [(2, 2)]),
    ("pad", lambda x: gf.pad(x, [[1, 2], [0, 1]]), [(2, 3)]),
    ("pad_value", lambda x, c: gf.pad(x, [[1, 0], [1, 1]], constant_values=c), [(2, 2), ()]),
    ("pad_reflect", lambda x: gf.pad(x, [[2, 1], [1, 2]], "REFLECT"), [(3, 3)]),
    ("pad_symmetric", lambda x: gf.pad(x, [[2, 2], [1, 0]], "SYMMETRIC"), [(2, 3)]),
    ("pad_size_one", lambda x: gf.pad(x, [[1, 1]], "SYMMETRIC"), [(1,)]),
    ("reverse", lambda x: gf.reverse(x, [0, -1]), [(3, 2)]),
    ("reverse_size_one", lambda x: gf.reverse(x, [1]), [(2, 1)]),
    ("reverse_empty", lambda x: gf.reverse(x, [0]), [(0, 2)]),
    ("broadcast_to", lambda x: gf.broadcast_to(x, [2, 3]), [(3,)]),
    ("broadcast_to_size_one", lambda x: gf.broadcast_to(x, [2, 1, 3]), [(1, 1)]),
    ("linspace", lambda a, b: gf.linspace(a, b, 4), [(), ()]),
    ("linspace_one", lambda a, b: gf.linspace(a, b, 1), [(), ()]),
    ("linspace_vector", lambda a, b: gf.linspace(a, b, 3, axis=-1), [(2,), ()]),
    ("meshgrid", lambda a, b: gf.multiply(*gf.meshgrid(a, b)), [(3,), (2,)]),
    ("fill", lambda v: gf.fill([2, 2], v), [()]),
]


@pytest.mark.parametrize("build,shapes", [c[1:] for c in GRADIENT_CASES],
                         ids=[c[0] for c in GRADIENT_CASES])
def test_gradient_matches_finite_differences(rng, build, shapes):
    inputs = [rng.standard_normal(s) for s in shapes]
    assert gradient_error(build, inputs) < 1e-7


SECOND_ORDER_CASES = ["reshape", "transpose", "concat", "split_sizes", "stack", "unstack",
                      "tile", "pad", "pad_value", "pad_reflect", "reverse", "broadcast_to",
                      "linspace_vector"]


@pytest.mark.parametrize("name", SECOND_ORDER_CASES)
def test_second_order_through_the_adjoint_ops(rng, name):
    build, shapes = {c[0]: c[1:] for c in GRADIENT_CASES}[name]
    inputs = [rng.standard_normal(s) for s in shapes]
    assert second_order_error(lambda *xs: gf.square(build(*xs)), inputs) < 1e-6


def test_gradients_with_unknown_shapes_match_static_ones(sess, rng):
    value = rng.standard_normal((2, 3, 4))
    builds = [lambda x: gf.tile(x, [2, 1, 3]), lambda x: gf.pad(x, [[1, 0], [0, 2], [1, 1]]),
              lambda x: gf.pad(x, [[1, 0], [0, 2], [1, 1]], "REFLECT"),
              lambda x: gf.reshape(x, [-1, 4]), lambda x: gf.concat([x, 2 * x], 1)]
    for build in builds:
        for shape in ([None, 3, None], None):
            p = gf.placeholder(gf.float64, shape)
            (dynamic,) = gf.gradients(gf.reduce_sum(gf.square(build(p))), p)
            c = gf.constant(value)
            (static,) = gf.gradients(gf.reduce_sum(gf.square(build(c))), c)
            assert static.shape.as_list() == [2, 3, 4]
            np.testing.assert_allclose(sess.run(dynamic, {p: value}), sess.run(static))


def test_shape_queries_and_generators_are_not_differentiable():
    x = gf.placeholder(gf.float64, [2, 3])
    for t in (gf.shape(x), gf.size(x), gf.rank(x), gf.zeros_like(x), gf.ones_like(x)):
        y = gf.reduce_sum(gf.cast(t, gf.float64))
        assert gf.gradients(y, x) == [None]
    start = gf.placeholder(gf.int32, [])
    assert gf.gradients(gf.cast(gf.range(start, 5), gf.float32), start) == [None]
