"""Every fast kernel (runtime/fast_kernels.py) gives exactly its op's kernel's result.

Same type, dtype, shape, memory layout and bits (NaN payloads and signed zeros
included), for fresh results and for results written into an input's buffer, on
C-ordered, Fortran-ordered and strided inputs full of special values.
"""
import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.common import apply_op
from gradflow.ops.math import elementwise
from gradflow.ops.state import VariableRef
from gradflow.runtime import executor, fast_kernels

RNG = np.random.default_rng(7)
LARGE = (64, 80)   # above the in-place threshold
SMALL = (3, 5)
LAYOUTS = ["C", "F", "strided"]


def special_values(shape, dtype) -> np.ndarray:
    """Random normals salted with NaN (a payload one too), infinities and both zeros."""
    values = RNG.standard_normal(shape).astype(dtype)
    flat = values.reshape(-1)
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30][: flat.size - 1]
    flat[: len(specials)] = specials
    if dtype in (np.float32, np.float64):
        bits = np.int32 if dtype == np.float32 else np.int64
        flat[len(specials)] = (np.array(np.nan, dtype).view(bits) | 5).view(dtype)  # payload
    RNG.shuffle(flat)
    return values


def laid_out(values: np.ndarray, layout: str) -> np.ndarray:
    if layout == "F":
        return np.asfortranarray(values)
    if layout == "strided":
        padded = np.zeros((values.shape[0], values.shape[1] * 2), values.dtype)
        padded[:, ::2] = values
        return padded[:, ::2]
    return np.ascontiguousarray(values)


def assert_identical(got, want):
    assert type(got) is type(want)
    assert executor.same_bits(got, want), f"{got!r} != {want!r}"
    if isinstance(want, np.ndarray):
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == \
            (want.flags.c_contiguous, want.flags.f_contiguous)


def reference(op, arrays):
    kernel = op.op_def.kernel
    attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
    with np.errstate(all="ignore"):
        return kernel(*arrays, **attrs)


def check_entry(op, arrays):
    """The fast kernel matches the kernel, fresh and written into each allowed input."""
    fast = fast_kernels.lookup(op)
    assert fast is not None, f"no fast kernel for {op.type} here"
    want = reference(op, [a.copy(order="K") for a in arrays])
    with np.errstate(all="ignore"):
        got = fast.fn(*[a.copy(order="K") for a in arrays])
    assert_results_match(got, want)
    for position in fast.out_inputs:
        inputs = [a.copy(order="K") for a in arrays]
        if inputs[position].shape != np.shape(want) or not inputs[position].flags.c_contiguous:
            continue  # the executor only hands over C-ordered buffers of the output's shape
        if not all(a.flags.c_contiguous for a in inputs):
            continue
        with np.errstate(all="ignore"):
            got = fast.fn(*inputs, out=inputs[position])
        assert_identical(got, want)
        assert np.shares_memory(got, inputs[position])


def assert_results_match(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_identical(g, w)
    else:
        assert_identical(got, want)


def placeholders(*arrays):
    return [gf.placeholder(gf.as_dtype(a.dtype), shape=a.shape) for a in arrays]


# --------------------------------------------------------------------------- cases
UNARY = {"Neg": gf.negative, "Square": gf.square, "Sqrt": gf.sqrt, "Exp": gf.exp,
         "Log": gf.log, "Sin": gf.sin, "Cos": gf.cos, "Tanh": gf.tanh, "Abs": gf.abs,
         "Relu": gf.nn.relu}
BINARY = {"AddV2": gf.add, "Sub": gf.subtract, "Mul": gf.multiply, "RealDiv": gf.realdiv}
COVERED = set(UNARY) | set(BINARY) | {"TanhGrad", "Sigmoid", "SigmoidGrad", "AddN",
                                      "BiasAdd", "MatMul", "BiasAddGrad",
                                      "SparseSoftmaxCrossEntropyWithLogits",
                                      "ApplyGradientDescent"}


def test_every_entry_is_covered_here():
    assert set(fast_kernels.op_types()) == COVERED


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary(op_type, dtype, layout):
    for shape in (LARGE, SMALL):
        x = laid_out(special_values(shape, dtype), layout)
        (p,) = placeholders(x)
        op = UNARY[op_type](p).op
        if fast_kernels.lookup(op) is not None or shape == LARGE:
            check_entry(op, [x])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_binary(op_type, dtype, layout):
    if op_type == "RealDiv" and dtype == np.int32:
        return
    for y_shape in (LARGE, LARGE[1:], ()):
        with np.errstate(invalid="ignore"):  # NaN and infinities cast to int32 on purpose
            x = laid_out(special_values(LARGE, np.float64).astype(dtype), layout)
            y = special_values(y_shape, np.float64).astype(dtype) if y_shape else \
                np.asarray(2.5, dtype=dtype)
        px, py = placeholders(x, y)
        check_entry(BINARY[op_type](px, py).op, [x, y])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_gradient(dtype, layout):
    a = laid_out(special_values(LARGE, dtype), layout)
    b = special_values(LARGE, dtype)
    pa, pb = placeholders(a, b)
    check_entry(apply_op("TanhGrad", [pa, pb]).op, [a, b])
    check_entry(apply_op("TanhGrad", [pb, pa]).op, [b, a])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("salted", [False, True])
def test_float32_sigmoid(salted, layout):
    """Plain normals take the ufunc path; NaN and -1e30 (past the bound) the kernel's."""
    for shape in (LARGE, SMALL):
        values = special_values(shape, np.float32) if salted else \
            RNG.standard_normal(shape).astype(np.float32) * 8
        x = laid_out(values, layout)
        (p,) = placeholders(x)
        check_entry(gf.sigmoid(p).op, [x])


def test_sigmoid_bound_is_the_kernels():
    assert fast_kernels.SIGMOID_FLOAT32_CEILING == elementwise._SIGMOID_FLOAT32_CEILING


def test_sigmoid_of_other_dtypes_has_no_fast_kernel():
    assert fast_kernels.lookup(gf.sigmoid(gf.placeholder(gf.float64, [4, 3])).op) is None
    assert fast_kernels.lookup(gf.sigmoid(gf.placeholder(gf.float32, None)).op) is None


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_gradient(dtype, layout):
    a = laid_out(special_values(LARGE, dtype), layout)
    b = special_values(LARGE, dtype)
    pa, pb = placeholders(a, b)
    check_entry(apply_op("SigmoidGrad", [pa, pb]).op, [a, b])
    check_entry(apply_op("SigmoidGrad", [pb, pa]).op, [b, a])


@pytest.mark.parametrize("count", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_add_n(dtype, count):
    with np.errstate(invalid="ignore"):  # NaN and infinities cast to int32 on purpose
        arrays = [laid_out(special_values(LARGE, np.float64).astype(dtype), LAYOUTS[i % 3])
                  for i in range(count)]
    check_entry(gf.add_n(placeholders(*arrays)).op, arrays)


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_matmul(dtype, transpose_a, transpose_b):
    a = special_values((7, 5) if transpose_a else (5, 7), np.float64).astype(dtype)
    b = special_values((5, 7) if transpose_b else (7, 5), np.float64).astype(dtype)
    pa, pb = placeholders(a, b)
    check_entry(gf.matmul(pa, pb, transpose_a=transpose_a, transpose_b=transpose_b).op, [a, b])


@pytest.mark.parametrize("rows", [7, 8, 32, 48, 49])
def test_float32_matmul_of_few_rows_by_a_transposed_weight(rows):
    """Rows in the swapped range run as (b a^T)^T: the bits of a b^T all the same."""
    shapes = [(512, 256), (256, 512), (300, 129)] + \
        [tuple(int(d) for d in RNG.integers(1, 700, 2)) for _ in range(12)]
    for depth, width in shapes:
        a = RNG.standard_normal((rows, depth)).astype(np.float32)
        b = RNG.standard_normal((width, depth)).astype(np.float32)
        b[0, :3] = [np.nan, np.inf, -0.0][:depth]
        pa, pb = placeholders(a, b)
        check_entry(gf.matmul(pa, pb, transpose_b=True).op, [a, b])


@pytest.mark.parametrize("rows", [1, 37, 1023])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_add_gradient(dtype, rows):
    grad = special_values((rows, 9), dtype) if rows > 9 else RNG.standard_normal(
        (rows, 9)).astype(dtype)
    (pg,) = placeholders(grad)
    check_entry(apply_op("BiasAddGrad", [pg], data_format="NHWC").op, [grad])
    check_entry(apply_op("BiasAddGrad", [pg], data_format="NHWC").op,
                [laid_out(grad, "strided")])


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add(data_format):
    value = special_values((4, 6, 5, 7), np.float32)
    channels = value.shape[1] if data_format == "NCHW" else value.shape[-1]
    bias = special_values((channels,), np.float32)
    pv, pb = placeholders(value, bias)
    check_entry(gf.nn.bias_add(pv, pb, data_format=data_format).op, [value, bias])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_softmax_cross_entropy(dtype):
    logits = special_values((32, 10), dtype)
    logits[np.isnan(logits)] = 1.0
    labels = RNG.integers(0, 10, 32).astype(np.int32)
    pl, py = placeholders(logits, labels)
    op = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=py, logits=pl).op
    check_entry(op, [logits, labels])
    check_entry(op, [np.asfortranarray(logits), labels])


@pytest.mark.parametrize("bad_label", [4, -1])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy_reports_bad_labels_as_the_kernel_does(bad_label,
                                                                            label_dtype):
    logits = np.zeros((3, 4), np.float32)
    labels = np.array([0, bad_label, 1], label_dtype)
    pl, py = placeholders(logits, labels)
    op = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=py, logits=pl).op
    with pytest.raises(gf.errors.InvalidArgumentError) as want:
        reference(op, [logits, labels])
    with pytest.raises(gf.errors.InvalidArgumentError) as got:
        fast_kernels.lookup(op).fn(logits, labels)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("shape", [LARGE, (513, 517)])  # the second is updated in blocks
@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_gradient_descent(layout, shape):
    var_value = laid_out(special_values(shape, np.float32), layout)
    grad = special_values(shape, np.float32)
    v = gf.Variable(np.zeros(shape, np.float32), name="v")
    pg = gf.placeholder(gf.float32, shape)
    train = gf.train.GradientDescentOptimizer(0.25).apply_gradients([(pg, v)])
    (op,) = [c for c in train.control_inputs if c.type == "ApplyGradientDescent"]
    ref = VariableRef(v.op.get_attr("shared_name"))
    lr = np.asarray(0.25, np.float32)
    stores = []
    for fn in (op.op_def.kernel, fast_kernels.lookup(op).fn):
        context = executor.RunContext(None, {ref.key: var_value.copy(order="K")})
        result = fn(context, ref, lr, grad.copy())
        stores.append((result, context.pending[ref.key]))
    assert_identical(stores[1][0], stores[0][0])
    assert_identical(stores[1][1], stores[0][1])
    if layout == "C":
        context = executor.RunContext(None, {ref.key: var_value.copy()})
        buffer = grad.copy()
        result = fast_kernels.lookup(op).fn(context, ref, lr, buffer, out=buffer)
        assert result is buffer and executor.same_bits(result, stores[0][0])


def fresh_output_cases():
    """Ops of every FRESH_OUTPUT_TYPES type, degenerate windows included."""
    x = special_values((2, 5, 5, 3), np.float32)
    w = special_values((1, 1, 3, 3), np.float32)
    px, pw = placeholders(x, w)
    conv = gf.nn.conv2d(px, pw, strides=1, padding="VALID")
    dy = np.ones((2, 5, 5, 3), np.float32)
    (dx, dw) = gf.gradients(conv, [px, pw], grad_ys=gf.constant(dy))
    pool = gf.nn.max_pool2d(px, ksize=1, strides=1, padding="VALID")
    (dpool,) = gf.gradients(pool, [px], grad_ys=gf.constant(dy))
    a, b = special_values((2, 3, 4), np.float32), special_values((2, 4, 3), np.float32)
    pa, pb = placeholders(a, b)
    batch_matmul = gf.matmul(pa, pb)
    relu_grad = apply_op("ReluGrad", [px, px])
    return [conv, dx, dw, pool, dpool, batch_matmul, relu_grad], {px: x, pw: w, pa: a, pb: b}


def test_fresh_output_kernels_never_return_their_inputs_memory():
    outputs, feed = fresh_output_cases()
    covered = set()
    with gf.Session() as sess:
        inputs = sess.run([list(out.op.inputs) for out in outputs], feed)
    for out, arrays in zip(outputs, inputs):
        op = out.op
        result = reference(op, arrays)
        assert not any(np.shares_memory(result, a) for a in arrays if isinstance(a, np.ndarray))
        covered.add(op.type)
    assert covered == set(fast_kernels.FRESH_OUTPUT_TYPES)
