"""gf.TensorArray: every method against NumPy, TF1's errors, loops and gradients."""
import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.tensor_array import TensorArray
from gradcheck import gradient_error, second_order_error


def run(fetches, feed=None):
    with gf.Session() as s:
        return s.run(fetches, feed)


def f64(values):
    return gf.constant(np.asarray(values, dtype=np.float64))


# ---------------------------------------------------------------------- forward
def test_write_read_stack_size_and_properties():
    ta = TensorArray(gf.float32, size=3, clear_after_read=False)  # index 0 read twice
    assert ta.dtype is gf.float32 and ta.flow.dtype is gf.variant and ta.handle is ta.flow
    assert ta.flow.shape.as_list() == [] and not ta.dynamic_size
    assert ta.element_shape.ndims is None
    written = ta.write(0, [1.0, 2.0]).write(2, gf.constant([5.0, 6.0]))
    assert written.element_shape.as_list() == [2] and ta.element_shape.as_list() == [2]
    stacked, first, size = written.stack(), written.read(0), written.size()
    assert stacked.shape.as_list() == [3, 2] and first.shape.as_list() == [2]
    assert size.dtype is gf.int32
    s, r, n = run([stacked, first, size])
    np.testing.assert_array_equal(s, [[1, 2], [0, 0], [5, 6]])  # unwritten: zeros
    assert s.dtype == np.float32 and r.tolist() == [1, 2] and n == 3


def test_writes_make_new_values_and_leave_the_old_ones_alone():
    ta = TensorArray(gf.float64, size=2, clear_after_read=False).write(0, 1.0)
    left, right = ta.write(1, 2.0), ta.write(1, 3.0)
    a, b, c = run([left.stack(), right.stack(), ta.size()])
    assert a.tolist() == [1, 2] and b.tolist() == [1, 3] and c == 2


def test_unstack_gather_scatter():
    value = np.arange(12.0).reshape(4, 3)
    ta = TensorArray(gf.float64, size=4).unstack(value)
    assert ta.element_shape.as_list() == [3]
    gathered = ta.gather([3, 0, 3])
    assert gathered.shape.as_list() == [3, 3]
    scattered = TensorArray(gf.float64, size=5, element_shape=[3]).scatter([4, 1], value[:2])
    g, s, r = run([gathered, scattered.stack(), ta.read(2)])
    np.testing.assert_array_equal(g, value[[3, 0, 3]])
    np.testing.assert_array_equal(s, [np.zeros(3), value[1], np.zeros(3), np.zeros(3), value[0]])
    np.testing.assert_array_equal(r, value[2])


def test_concat_and_split_with_ragged_elements():
    ta = TensorArray(gf.float32, size=3, infer_shape=False, clear_after_read=False)
    ta = ta.split(np.arange(10.0, dtype=np.float32).reshape(5, 2), [2, 0, 3])
    concat = ta.concat()
    assert concat.shape.ndims is None  # infer_shape=False: nothing known about elements
    c, last, middle = run([concat, ta.read(2), ta.read(1)])
    np.testing.assert_array_equal(c, np.arange(10.0).reshape(5, 2))
    np.testing.assert_array_equal(last, [[4, 5], [6, 7], [8, 9]])
    assert middle.shape == (0, 2)
    equal = TensorArray(gf.float32, size=2).split([1.0, 2.0, 3.0, 4.0], [2, 2])
    assert equal.element_shape.as_list() == [2]


def test_dynamic_size_grows_and_fills_holes_with_zeros():
    ta = TensorArray(gf.float32, size=0, dynamic_size=True).write(3, 1.5).write(1, 2.0)
    assert ta.dynamic_size
    stacked = ta.stack()
    assert stacked.shape.as_list() == [None]
    s, n = run([stacked, ta.size()])
    assert s.tolist() == [0, 2, 0, 1.5] and n == 4


def test_empty_arrays_with_known_element_shape():
    ta = TensorArray(gf.float64, size=0, element_shape=[2])
    stacked = ta.stack()
    assert stacked.shape.as_list() == [0, 2]
    s, c = run([stacked, TensorArray(gf.float64, size=0, element_shape=[None, 2]).concat()])
    assert s.shape == (0, 2) and c.shape == (0, 2)


def test_identity_close_and_wrapping_a_flow():
    ta = TensorArray(gf.float32, size=2).write(0, 1.0).write(1, 2.0)
    same = ta.identity()
    assert same.flow is not ta.flow and same.flow.op.type == "Identity"
    assert isinstance(ta.close(), gf.Operation)
    wrapped = TensorArray(gf.float32, flow=same.flow)
    assert wrapped.flow is same.flow
    assert run(wrapped.stack()).tolist() == [1, 2]


def test_while_loop_writes_then_stacks():
    x = gf.placeholder(gf.float32, shape=[2])
    n = gf.placeholder(gf.int32, shape=[])
    ta = TensorArray(gf.float32, size=n)

    def body(i, acc):
        return i + 1, acc.write(i, x * gf.cast(i, gf.float32))

    _, result = gf.while_loop(lambda i, _: i < n, body, [gf.constant(0), ta])
    assert isinstance(result, TensorArray)
    stacked = result.stack()
    assert stacked.shape.as_list() == [None, 2]
    out = run(stacked, {x: [1.0, -2.0], n: 4})
    np.testing.assert_allclose(out, np.arange(4.0)[:, None] * [1.0, -2.0])


def test_while_loop_reads_an_unstacked_array_into_a_dynamic_one():
    values = gf.placeholder(gf.float32, shape=[None, 3])
    source = TensorArray(gf.float32, size=gf.shape(values)[0]).unstack(values)
    target = TensorArray(gf.float32, size=0, dynamic_size=True)

    def body(i, out):
        return i + 1, out.write(i, 2.0 * source.read(i))

    _, out = gf.while_loop(lambda i, _: i < source.size(), body, [gf.constant(0), target])
    data = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    np.testing.assert_allclose(run(out.stack(), {values: data}), 2.0 * data)


# ----------------------------------------------------------------------- errors
def run_error(fetch, feed=None):
    with pytest.raises(gf.errors.OpError) as info:
        run(fetch, feed)
    return info.value


def test_writing_an_index_twice():
    ta = TensorArray(gf.float32, size=3).write(2, 1.0).write(2, 2.0)
    err = run_error(ta.stack())
    assert isinstance(err, gf.errors.InvalidArgumentError)
    assert "Could not write to TensorArray index 2 because it has already been written to." \
        in str(err)
    assert err.op.type == "TensorArrayWriteV3"


def test_writing_out_of_range():
    err = run_error(TensorArray(gf.float32, size=3).write(5, 1.0).stack())
    assert "Tried to write to index 5 but array is not resizeable and size is: 3" in str(err)
    err = run_error(TensorArray(gf.float32, size=3).write(-1, 1.0).stack())
    assert "Tried to write to index -1" in str(err)
    err = run_error(TensorArray(gf.float32, size=4).scatter([1, 7], [1.0, 2.0]).stack())
    assert "Max scatter index must be < array size (7 vs. 4)" in str(err)


def test_dtype_and_static_shape_mismatches_fail_at_build_time():
    ta = TensorArray(gf.float32, size=3)
    with pytest.raises(TypeError, match="TensorArray dtype is float32 but Op is trying to "
                                        "write dtype int32"):
        ta.write(0, gf.constant(1, gf.int32))
    ta = ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        TensorArray(gf.float32, size=3, element_shape=[2]).write(0, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        TensorArray(gf.float32, size=4).scatter([1, 2, 3], [[1.0], [2.0]])
    with pytest.raises(ValueError, match="rank 0 but is rank 1"):
        TensorArray(gf.float32, size=4).write([0], 1.0)


def test_run_time_element_shape_mismatch():
    p = gf.placeholder(gf.float32, shape=[None])
    ta = TensorArray(gf.float32, size=3).write(0, p).write(1, p[:1])
    err = run_error(ta.stack(), {p: [1.0, 2.0]})
    assert ("Could not write to TensorArray index 1 because the value shape is [1] which is "
            "incompatible with the TensorArray's inferred element shape: [2]") in str(err)


def test_reading_errors():
    ta = TensorArray(gf.float32, size=3, infer_shape=False).write(0, 1.0)
    err = run_error(ta.read(1))
    assert "Could not read from TensorArray index 1.  Furthermore, the element shape is not " \
           "fully defined: <unknown>." in str(err)
    assert "Tried to read from index 4 but array size is: 3" in str(run_error(ta.read(4)))
    assert "Tried to read from index -1" in str(run_error(ta.gather([0, -1])))
    err = run_error(TensorArray(gf.float32, size=0).stack())
    assert isinstance(err, gf.errors.UnimplementedError)
    assert "TensorArray has size zero, but element shape <unknown> is not fully defined" \
        in str(err)


def test_stack_and_concat_shape_errors():
    ragged = TensorArray(gf.float32, size=2, infer_shape=False).write(0, [1.0, 2.0]).write(1, [1.0])
    assert "Index 0 has shape: [2] but index 1 has shape: [1]" in str(run_error(ragged.stack()))
    scalars = TensorArray(gf.float32, size=1).write(0, 1.0)
    assert "Concat saw a scalar shape at index 0" in str(run_error(scalars.concat()))
    mixed = TensorArray(gf.float32, size=2, infer_shape=False)
    mixed = mixed.write(0, [[1.0]]).write(1, [[1.0, 2.0]])
    assert ("Index 0 has (excepting dimension 0) shape: [1] but index 1 has (excepting "
            "dimension 0) shape: [2]") in str(run_error(mixed.concat()))


def test_split_and_scatter_run_time_errors():
    ta = TensorArray(gf.float32, size=3, infer_shape=False)
    assert ("Expected sum of lengths to be equal to values.shape[0], but sum of lengths is 4 "
            "and value's shape is: [5]") in str(run_error(ta.split(np.ones(5, np.float32),
                                                                   [2, 0, 2]).size()))
    assert ("TensorArray's size is not equal to the size of lengths (3 vs. 2)"
            in str(run_error(ta.split(np.ones(4, np.float32), [2, 2]).size())))
    indices = gf.placeholder(gf.int32, shape=[None])
    err = run_error(ta.scatter(indices, [[1.0], [2.0]]).size(), {indices: [0, 1, 2]})
    assert "Expected len(indices) == values.shape[0], but saw: 3 vs. 2" in str(err)


def test_constructor_arguments():
    with pytest.raises(ValueError, match="Argument `size` must be provided"):
        TensorArray(gf.float32)
    flow = TensorArray(gf.float32, size=1).flow
    with pytest.raises(ValueError, match="Cannot provide both a handle and size"):
        TensorArray(gf.float32, size=2, flow=flow)
    with pytest.raises(TypeError, match="must be a variant Tensor"):
        TensorArray(gf.float32, flow=gf.constant(1.0))


# -------------------------------------------------------------------- gradients
X3 = np.array([0.3, -1.2, 0.8])


def test_gradient_write_read_and_stack():
    def build(x):
        ta = TensorArray(gf.float64, size=3, clear_after_read=False).write(0, gf.sin(x)) \
            .write(2, x * x)
        return ta.stack() * ta.read(0)[0] + ta.read(2)  # index 0 read twice: summed

    assert gradient_error(build, [X3]) < 1e-7


def test_gradient_through_partially_written_array():
    def build(x):
        ta = TensorArray(gf.float64, size=3, element_shape=[3]).write(1, x * x)
        return ta.stack()

    assert gradient_error(build, [X3]) < 1e-7


def test_gradient_unstack_gather_scatter():
    def build(x):
        ta = TensorArray(gf.float64, size=4).unstack(gf.tanh(x))
        ta2 = TensorArray(gf.float64, size=5).scatter([4, 0, 2, 1], ta.gather([3, 1, 1, 0]) * 2.0)
        return ta2.gather([0, 4, 1, 1]) + ta2.read(2)

    assert gradient_error(build, [np.arange(8.0).reshape(4, 2) / 10]) < 1e-7


def test_gradient_concat_and_split():
    def build(x):
        ta = TensorArray(gf.float64, size=3, infer_shape=False).split(x * x, [1, 3, 1])
        doubled = TensorArray(gf.float64, size=3, infer_shape=False)
        doubled = doubled.write(0, ta.read(1)).write(1, ta.read(0) * 3.0).write(2, ta.read(2))
        return doubled.concat()

    assert gradient_error(build, [np.arange(10.0).reshape(5, 2) / 7]) < 1e-7


def _loop_of_writes(x, count):
    """ta[i] = sin(x * (i + 1)) + x * x for i < count (unknown when building), stacked."""
    n = gf.placeholder_with_default(count, shape=[])
    def body(i, ta):
        scale = gf.cast(i + 1, gf.float64)
        return i + 1, ta.write(i, gf.sin(x * scale) + x * x)

    _, ta = gf.while_loop(lambda i, _: i < n, body, [gf.constant(0), TensorArray(gf.float64, n)])
    return ta.stack()


def test_gradient_through_loop_writing_an_array():
    assert gradient_error(lambda x: _loop_of_writes(x, 4), [X3]) < 1e-7


def test_gradient_through_loop_reading_an_array():
    def build(x):
        source = TensorArray(gf.float64, size=3, clear_after_read=False).unstack(x)

        def body(i, total):
            return i + 1, total * source.read(i) + source.read(i)

        _, total = gf.while_loop(lambda i, _: i < 3, body, [gf.constant(0), f64([1.0, 1.0])])
        return total

    assert gradient_error(build, [np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 2.0]])]) < 1e-7


def test_second_order_through_loop_writing_an_array():
    def build(x):
        return gf.reduce_sum(_loop_of_writes(x, 3) ** 2, axis=0)

    def first_gradient(x):
        y = build(x)
        (grad,) = gf.gradients(gf.reduce_sum(y * f64([1.0, -2.0, 0.5])), [x])
        return grad

    assert gradient_error(first_gradient, [X3]) < 1e-6
    assert second_order_error(lambda x: gf.reduce_sum(x * x) * TensorArray(
        gf.float64, size=1).write(0, gf.sin(x)).stack(), [X3]) < 1e-6


def test_second_order_through_split_concat_scatter_gather_read():
    def build(x):
        joined = TensorArray(gf.float64, size=3, infer_shape=False).split(x * x, [1, 3, 1]).concat()
        rows = TensorArray(gf.float64, size=5).unstack(gf.sin(joined))
        picked = TensorArray(gf.float64, size=3).scatter([2, 0], rows.gather([4, 0]))
        return gf.reshape(picked.gather([0, 2, 2]) * joined[:3] + rows.read(1), [3, 2])

    assert second_order_error(build, [np.arange(10.0).reshape(5, 2) / 7]) < 1e-6


# -------------------------------------------------------------- SPEC G17
A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0], [0.2, -0.7, 1.1]])


def _hessian_by_loop(x):
    """The user-written Hessian of sum(tanh(A x)^2): one gradient per loop iteration."""
    y = gf.reduce_sum(gf.square(gf.tanh(gf.reshape(gf.matmul(gf.constant(A),
                                                                gf.reshape(x, [3, 1])), [3]))))
    grad = gf.reshape(gf.gradients(y, x)[0], [-1])
    n = gf.size(x)
    _, hess = gf.while_loop(
        lambda j, _: j < n,
        lambda j, result: (j + 1, result.write(j, gf.gradients(grad[j], x)[0])),
        [gf.constant(0), TensorArray(x.dtype, n)])
    return y, gf.reshape(hess.stack(), gf.concat((gf.shape(x), gf.shape(x)), 0))


def test_G17_hessian_written_into_a_tensor_array_in_a_loop():
    x = gf.placeholder(gf.float64, shape=[3])
    y, hessian = _hessian_by_loop(x)
    (reference,) = gf.hessians(y, x)
    value = np.array([0.1, -0.4, 0.3])
    h, r = run([hessian, reference], {x: value})
    t = np.tanh(A @ value)
    sech2 = 1.0 - t ** 2
    closed_form = A.T @ np.diag(2.0 * sech2 ** 2 - 4.0 * t ** 2 * sech2) @ A
    np.testing.assert_allclose(h, closed_form, atol=1e-12)
    np.testing.assert_allclose(h, r, atol=1e-12)


def test_G17_hessian_by_loop_is_differentiable():
    weights = np.arange(9.0).reshape(3, 3) / 10.0

    def build(x):
        return gf.reduce_sum(_hessian_by_loop(x)[1] * gf.constant(weights))

    assert gradient_error(build, [np.array([0.1, -0.4, 0.3])]) < 1e-6
