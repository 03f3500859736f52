"""Math ops: elementwise functions, comparisons, selection, reductions, scans, sorting and
matrix products.

Binary ops broadcast like NumPy; their gradients go through :func:`reduce_to_shape_of`,
the one place that sums a gradient back to the shape of a broadcast input. Rules skip
inputs that need no gradient (``gradient_needed``), so e.g. a weight multiplied by a
constant does not build a gradient for the constant.

Complex gradients follow TensorFlow's convention: for a real loss L and z = a + ib the
gradient is dL/da + i dL/db, so a holomorphic ``y = f(z)`` passes ``grad * conj(f'(z))``
back. Rules write that as ``grad * conj(...)``; ``conj`` of a real tensor adds no op.
"""
from __future__ import annotations

import builtins
from typing import Callable, Optional

import numpy as np
from scipy import special

from gradflow.framework import dtypes
from gradflow.framework.constant import (constant, constant_value, convert_to_tensor,
                                         foldable, register_static_value)
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import (NotDifferentiable, RegisterGradient, define_op,
                                         gradient_needed)
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import (FLOATING, NUMERIC, REAL_NUMERIC, TRAINABLE, apply_op,
                                 as_tensor, binary_operands, broadcast_shape, check_dtype_in,
                                 check_same_dtype, graph_for, static_axes, static_ints)

__all__ = [
    # casts
    "cast", "to_float", "to_double", "to_int32", "to_int64",
    # unary elementwise
    "negative", "square", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "sigmoid", "log_sigmoid", "erf", "erfc", "lgamma", "lbeta", "digamma", "floor",
    "ceil", "round", "rint",
    "abs", "sign", "is_nan", "is_inf", "is_finite", "logical_not",
    # complex numbers
    "real", "imag", "conj", "angle", "complex",
    # binary elementwise
    "add", "subtract", "multiply", "divide", "truediv", "realdiv", "div", "div_no_nan",
    "floordiv", "floor_div", "floormod", "mod", "truncatediv", "truncatemod", "pow",
    "maximum", "minimum", "squared_difference", "atan2", "polygamma", "clip_by_value",
    "scalar_mul",
    # comparisons, logic, selection
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "where", "where_v2", "select", "select_v2",
    # reductions, scans, sorting
    "reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min", "reduce_any",
    "reduce_all", "reduce_logsumexp", "count_nonzero", "is_non_decreasing",
    "is_strictly_increasing", "argmax", "argmin", "cumsum", "cumprod", "sort", "argsort",
    # sums and products of tensors
    "range", "add_n", "accumulate_n", "matmul", "reduce_to_shape_of",
]

_COMPLEX = (dtypes.complex64, dtypes.complex128)
_SIGNED_INTEGERS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
_REAL_SIGNED = FLOATING + _SIGNED_INTEGERS
_SIGNED = _REAL_SIGNED + _COMPLEX
_INDEX = (dtypes.int32, dtypes.int64)
_ALL_TYPES = NUMERIC + (dtypes.bool, dtypes.string)


def _same(dtype: dtypes.DType) -> dtypes.DType:
    return dtype


def _to_bool(dtype: dtypes.DType) -> dtypes.DType:
    return dtypes.bool


def _real_part(dtype: dtypes.DType) -> dtypes.DType:
    return dtype.real_dtype


def _elementwise_kernel(fn: Callable, result_dtype: Callable = _same) -> Callable:
    """``fn`` with NumPy's floating-point warnings off (inf and nan are answers here, as in
    TensorFlow) and its result in the op's dtype (SciPy computes float16 in float64)."""
    def kernel(x, *rest):
        with np.errstate(all="ignore"):
            result = fn(x, *rest)
        target = x.dtype if result_dtype is _same else \
            result_dtype(dtypes.as_dtype(x.dtype)).as_numpy_dtype
        return np.asarray(result).astype(target, copy=False)
    return kernel


def _register_gradient(op_type: str, rule: Optional[Callable]) -> None:
    """Registers ``rule``, or declares the op not differentiable when it is None."""
    if rule is None:
        NotDifferentiable(op_type)
    else:
        RegisterGradient(op_type)(rule)


# ----------------------------------------------------------------------------- cast
def _infer_cast(inputs, attrs):
    return [(attrs["DstT"], inputs[0].shape)]


def _cast_kernel(x, *, SrcT, DstT, Truncate=False):  # noqa: N803 - TF attr names
    if x.dtype.kind == "c" and not DstT.is_complex:
        x = x.real
    return x.astype(DstT.as_numpy_dtype, copy=False)


define_op("Cast", infer=_infer_cast, kernel=_cast_kernel)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    source, target = op.get_attr("SrcT"), op.get_attr("DstT")
    if source.is_trainable and target.is_trainable:
        return cast(grad, source)
    return None


def cast(x, dtype, name: Optional[str] = None) -> Tensor:
    """Converts ``x`` to ``dtype`` (complex to real keeps the real part)."""
    target = dtypes.as_dtype(dtype)
    x = convert_to_tensor(x)
    if x.dtype is target:
        return x
    return apply_op("Cast", [x], name=name or "Cast", SrcT=x.dtype, DstT=target,
                    Truncate=False)


def to_float(x, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> Tensor:
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> Tensor:
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> Tensor:
    return cast(x, dtypes.int64, name=name)


# ------------------------------------------------------------ unary elementwise ops
def _unary(op_type: str, kernel: Callable, allowed, derivative: Optional[Callable] = None,
           gradient: Optional[Callable] = None, result_dtype: Callable = _same) -> Callable:
    """Defines an elementwise op ``y = f(x)`` and returns its public constructor.

    ``derivative(x, y)`` builds f'(x) from the op's input and output, making the rule
    ``grad * conj(f'(x))``; a whole rule ``gradient(op, grad)`` may be given instead.
    With neither, the op is not differentiable.
    """
    define_op(op_type, kernel=_elementwise_kernel(kernel, result_dtype),
              infer=lambda inputs, attrs: [(result_dtype(inputs[0].dtype), inputs[0].shape)])
    rule = gradient
    if derivative is not None:
        def rule(op, grad):
            return multiply(grad, conj(derivative(op.inputs[0], op.outputs[0])))
    _register_gradient(op_type, rule)

    def constructor(x, name: Optional[str] = None) -> Tensor:
        x = convert_to_tensor(x, name="x")
        check_dtype_in(x, allowed, op_type)
        return apply_op(op_type, [x], name=name or op_type)

    constructor.__name__ = op_type.lower()
    constructor.__doc__ = f"Elementwise ``{op_type}`` of ``x``."
    return constructor


def _sigmoid_kernel(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # exp of a non-positive number only: no overflow at either extreme.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _digamma_kernel(x):
    poles = (x <= 0) & (x == np.floor(x))  # nan at the poles, as TensorFlow gives
    return np.where(poles, np.nan, special.psi(x))


_TWO_OVER_SQRT_PI = 2 / np.sqrt(np.pi)
_SQRT_PI_OVER_TWO = np.sqrt(np.pi) / 2
_SQRT_TWO_PI = np.sqrt(2 * np.pi)

# op type, NumPy kernel, accepted dtypes, and f'(x) built from (x, y = f(x)).
negative = _unary("Neg", np.negative, _SIGNED, gradient=lambda op, grad: negative(grad))
square = _unary("Square", np.square, NUMERIC, lambda x, y: 2 * x)
sqrt = _unary("Sqrt", np.sqrt, TRAINABLE, lambda x, y: 0.5 / y)
rsqrt = _unary("Rsqrt", lambda x: 1 / np.sqrt(x), TRAINABLE,
               lambda x, y: -0.5 * y * square(y))
reciprocal = _unary("Reciprocal", np.reciprocal, TRAINABLE, lambda x, y: -square(y))
exp = _unary("Exp", np.exp, TRAINABLE, lambda x, y: y)
expm1 = _unary("Expm1", np.expm1, TRAINABLE, lambda x, y: exp(x))
log = _unary("Log", np.log, TRAINABLE, lambda x, y: reciprocal(x))
log1p = _unary("Log1p", np.log1p, TRAINABLE, lambda x, y: reciprocal(1 + x))
sin = _unary("Sin", np.sin, TRAINABLE, lambda x, y: cos(x))
cos = _unary("Cos", np.cos, TRAINABLE, lambda x, y: -sin(x))
tan = _unary("Tan", np.tan, TRAINABLE, lambda x, y: 1 + square(y))
asin = _unary("Asin", np.arcsin, TRAINABLE, lambda x, y: rsqrt(1 - square(x)))
acos = _unary("Acos", np.arccos, TRAINABLE, lambda x, y: -rsqrt(1 - square(x)))
atan = _unary("Atan", np.arctan, TRAINABLE, lambda x, y: reciprocal(1 + square(x)))
sinh = _unary("Sinh", np.sinh, TRAINABLE, lambda x, y: cosh(x))
cosh = _unary("Cosh", np.cosh, TRAINABLE, lambda x, y: sinh(x))
asinh = _unary("Asinh", np.arcsinh, TRAINABLE, lambda x, y: reciprocal(cosh(y)))
acosh = _unary("Acosh", np.arccosh, TRAINABLE, lambda x, y: reciprocal(sinh(y)))
atanh = _unary("Atanh", np.arctanh, TRAINABLE, lambda x, y: reciprocal(1 - square(x)))
erf = _unary("Erf", special.erf, FLOATING,
             lambda x, y: _TWO_OVER_SQRT_PI * exp(-square(x)))
erfc = _unary("Erfc", special.erfc, FLOATING,
              lambda x, y: -_TWO_OVER_SQRT_PI * exp(-square(x)))
erfinv = _unary("Erfinv", special.erfinv, FLOATING,
                lambda x, y: _SQRT_PI_OVER_TWO * exp(square(y)))
ndtri = _unary("Ndtri", special.ndtri, FLOATING,
               lambda x, y: _SQRT_TWO_PI * exp(square(y) / 2))
lgamma = _unary("Lgamma", special.gammaln, FLOATING, lambda x, y: digamma(x))
digamma = _unary("Digamma", _digamma_kernel, FLOATING, lambda x, y: polygamma(1, x))
_softplus = _unary("Softplus", lambda x: np.logaddexp(0, x), FLOATING,
                   lambda x, y: sigmoid(x))
_softsign = _unary("Softsign", lambda x: x / (1 + np.abs(x)), FLOATING,
                   lambda x, y: reciprocal(square(1 + _abs(x))))
_abs = _unary("Abs", np.abs, _REAL_SIGNED, lambda x, y: sign(x))
# Sign, like TensorFlow's, passes back zeros; rounding ops pass back nothing.
_sign = _unary("Sign", np.sign, _REAL_SIGNED,
               gradient=lambda op, grad: array.zeros_like(op.inputs[0]))
floor = _unary("Floor", np.floor, FLOATING)
ceil = _unary("Ceil", np.ceil, FLOATING)
rint = _unary("Rint", np.rint, FLOATING)
_round = _unary("Round", np.round, FLOATING)  # NumPy, like TF, rounds half to even
is_nan = _unary("IsNan", np.isnan, FLOATING, result_dtype=_to_bool)
is_inf = _unary("IsInf", np.isinf, FLOATING, result_dtype=_to_bool)
is_finite = _unary("IsFinite", np.isfinite, FLOATING, result_dtype=_to_bool)
logical_not = _unary("LogicalNot", np.logical_not, (dtypes.bool,))


def softplus(features, name: Optional[str] = None) -> Tensor:
    """``log(1 + exp(features))``, computed without overflow."""
    return _softplus(features, name=name)


def softsign(features, name: Optional[str] = None) -> Tensor:
    """``features / (1 + |features|)``."""
    return _softsign(features, name=name)


def sign(x, name: Optional[str] = None) -> Tensor:
    """-1, 0 or 1 by the sign of ``x``; for complex ``x``, ``x / |x|`` (0 at 0).

    As in TensorFlow, the real sign passes back a zero gradient while the complex one is
    composed of differentiable ops.
    """
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_complex:
        return _sign(x, name=name)
    with name_scope(name, "Sign", [x]):
        return div_no_nan(x, cast(abs(x), x.dtype))


def round(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's public name
    """Rounds half to even (banker's rounding); integer tensors are returned as they are."""
    x = convert_to_tensor(x, name="x")
    return x if x.dtype.is_integer else _round(x, name=name)


# ------------------------------------------------- tanh and sigmoid: fused gradients
def _fused_grad_op(op_type: str, kernel: Callable, gradient: Callable) -> None:
    """A ``XxxGrad(y, dy)`` op: one op per backward step instead of a chain of three."""
    define_op(op_type, infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
              kernel=kernel)
    RegisterGradient(op_type)(gradient)


def _tanh_grad_grad(op, grad):
    """TanhGrad(a, b) = b (1 - a^2): d/da = -2ab, d/db = 1 - a^2."""
    a, b = op.inputs
    return (scalar_mul(-2, grad) * conj(a) * conj(b),
            apply_op("TanhGrad", [conj(a), grad], name="TanhGrad"))


def _sigmoid_grad_grad(op, grad):
    """SigmoidGrad(a, b) = b a (1 - a): d/da = b (1 - 2a), d/db = a (1 - a)."""
    a, b = op.inputs
    return (grad * conj(b) * (1 - 2 * conj(a)),
            apply_op("SigmoidGrad", [conj(a), grad], name="SigmoidGrad"))


_fused_grad_op("TanhGrad", lambda a, b: b * (1 - a * a), _tanh_grad_grad)
_fused_grad_op("SigmoidGrad", lambda a, b: b * a * (1 - a), _sigmoid_grad_grad)

tanh = _unary("Tanh", np.tanh, TRAINABLE, gradient=lambda op, grad: apply_op(
    "TanhGrad", [conj(op.outputs[0]), grad], name="TanhGrad"))
sigmoid = _unary("Sigmoid", _sigmoid_kernel, TRAINABLE, gradient=lambda op, grad: apply_op(
    "SigmoidGrad", [conj(op.outputs[0]), grad], name="SigmoidGrad"))


# ----------------------------------------------------------------- complex numbers
def _complex_abs_grad(op, grad):
    """grad * z / |z|, zero where z is zero."""
    z = op.inputs[0]
    return div_no_nan(cast(grad, z.dtype) * z, cast(op.outputs[0], z.dtype))


def _angle_grad(op, grad):
    """d angle(a + ib) = (-b da + a db) / |z|^2, i.e. -grad / (b + ia)."""
    z = op.inputs[0]
    return -cast(grad, z.dtype) * reciprocal(complex(imag(z), real(z)))


_complex_abs = _unary("ComplexAbs", np.abs, _COMPLEX, gradient=_complex_abs_grad,
                      result_dtype=_real_part)
_real = _unary("Real", np.real, _COMPLEX, result_dtype=_real_part,
               gradient=lambda op, grad: complex(grad, array.zeros_like(grad)))
_imag = _unary("Imag", np.imag, _COMPLEX, result_dtype=_real_part,
               gradient=lambda op, grad: complex(array.zeros_like(grad), grad))
_angle = _unary("Angle", np.angle, _COMPLEX, gradient=_angle_grad, result_dtype=_real_part)
_conj = _unary("Conj", np.conj, _COMPLEX, gradient=lambda op, grad: conj(grad))


def abs(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's public name
    """Elementwise absolute value (the magnitude, a real tensor, for complex ``x``)."""
    x = convert_to_tensor(x, name="x")
    return (_complex_abs if x.dtype.is_complex else _abs)(x, name=name or "Abs")


def real(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The real part of a complex tensor; a real tensor is returned as it is."""
    x = convert_to_tensor(input, name="input")
    return _real(x, name=name) if x.dtype.is_complex else x


def imag(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The imaginary part of a complex tensor; zeros for a real one."""
    x = convert_to_tensor(input, name="input")
    return _imag(x, name=name) if x.dtype.is_complex else array.zeros_like(x, name=name)


def angle(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The argument of a complex tensor; for a real one, pi where negative, else 0."""
    x = convert_to_tensor(input, name="input")
    if x.dtype.is_complex:
        return _angle(x, name=name)
    check_dtype_in(x, FLOATING, "Angle", "input")
    with name_scope(name, "Angle", [x]):
        return where_v2(x < 0, np.pi * array.ones_like(x), array.zeros_like(x))


def conj(x, name: Optional[str] = None) -> Tensor:
    """Complex conjugate; a real numeric tensor is returned as it is (no op added)."""
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_complex:
        return _conj(x, name=name)
    if not x.dtype.is_numeric:
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r} "
                        f"({x.name}).")
    return x


def _infer_complex(inputs, attrs):
    re, im = inputs
    result = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
    if re.dtype is not im.dtype or re.dtype not in result:
        raise TypeError(f"The `real` and `imag` components have incorrect types: "
                        f"{re.dtype.name} ({re.name}) and {im.dtype.name} ({im.name}). They "
                        f"must be consistent, and one of [float32, float64]")
    return [(result[re.dtype], broadcast_shape(re.shape, im.shape, f"{re.name} and {im.name}"))]


def _complex_kernel(re, im):
    # Assigning the parts (not re + 1j * im) keeps infinite parts from becoming nan.
    out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im
    return out


define_op("Complex", infer=_infer_complex, kernel=_complex_kernel)


@RegisterGradient("Complex")
def _complex_grad(op, grad):
    return _binary_grads(op, lambda: real(grad), lambda: imag(grad))


def complex(real, imag, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's name
    """The complex tensor ``real + i imag`` (float32 gives complex64, float64 complex128)."""
    re, im = binary_operands(real, imag, "Complex")
    return apply_op("Complex", [re, im], name=name or "Complex")


# ----------------------------------------------------------- binary elementwise ops
def _binary(op_type: str, kernel: Callable, default_name: str, allowed=NUMERIC,
            result_dtype: Callable = _same) -> Callable:
    """Defines a broadcasting binary op and returns its public constructor."""
    def infer(inputs, attrs):
        x, y = inputs
        check_same_dtype(x, y, op_type)
        return [(result_dtype(x.dtype), broadcast_shape(x.shape, y.shape,
                                                        lambda: f"{x.name} and {y.name}"))]

    define_op(op_type, infer=infer, kernel=kernel)

    def constructor(x, y, name: Optional[str] = None) -> Tensor:
        x, y = binary_operands(x, y, op_type)
        check_dtype_in(x, allowed, op_type)
        return apply_op(op_type, [x, y], name=name or default_name)

    constructor.__name__ = default_name
    constructor.__doc__ = f"Elementwise ``{op_type}`` of ``x`` and ``y``, with broadcasting."
    return constructor


def _integer_division(fn: Callable) -> Callable:
    """A division-like kernel; dividing integers by zero is an error, as in TensorFlow."""
    def kernel(x, y):
        if y.dtype.kind in "iu" and not np.all(y):
            raise ZeroDivisionError("Integer division by zero")
        return fn(x, y)
    return _elementwise_kernel(kernel)


def _floor_divide(x, y):
    # floats: floor of the rounded quotient, as TensorFlow (NumPy's // can be one less)
    return np.floor_divide(x, y) if x.dtype.kind in "iu" else np.floor(x / y)


def _truncate_divide(x, y):
    if x.dtype.kind not in "iu":
        return np.trunc(x / y)
    quotient = np.floor_divide(x, y)
    # floor and truncation differ where the division is inexact and the signs differ
    return quotient + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))


def _squared_difference_kernel(x, y):
    d = x - y
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


def _div_no_nan_kernel(x, y):
    zero = y == 0
    return np.where(zero, 0, x / np.where(zero, 1, y))


def _polygamma_kernel(a, x):
    """nan where the order ``a`` is not a non-negative integer, as in TensorFlow."""
    valid = (a >= 0) & (a == np.floor(a))
    return np.where(valid, special.polygamma(np.where(valid, a, 0).astype(np.int64), x), np.nan)


def _zero_where_zero(fn: Callable, operand: int) -> Callable:
    """``fn(x, y)``, but exactly 0 where input ``operand`` is 0, even if ``fn`` is inf or
    nan there (MulNoNan: y; Xlogy, Xdivy: x)."""
    def kernel(x, y):
        return np.where((x, y)[operand] == 0, 0, fn(x, y))
    return _elementwise_kernel(kernel)


_SQUARED_DIFFERENCE_TYPES = FLOATING + (dtypes.int32, dtypes.int64) + _COMPLEX

add = _binary("AddV2", np.add, "add")
subtract = _binary("Sub", np.subtract, "sub")
multiply = _binary("Mul", np.multiply, "mul")
realdiv = _binary("RealDiv", _elementwise_kernel(np.true_divide), "truediv", TRAINABLE)
div_no_nan = _binary("DivNoNan", _elementwise_kernel(_div_no_nan_kernel), "div_no_nan",
                     TRAINABLE)
floordiv = _binary("FloorDiv", _integer_division(_floor_divide), "floordiv", REAL_NUMERIC)
floormod = _binary("FloorMod", _integer_division(np.mod), "mod", REAL_NUMERIC)
truncatediv = _binary("TruncateDiv", _integer_division(_truncate_divide), "truncatediv",
                      REAL_NUMERIC)
truncatemod = _binary("TruncateMod", _integer_division(np.fmod), "truncatemod", REAL_NUMERIC)
pow = _binary("Pow", _elementwise_kernel(np.power), "Pow", _SIGNED)  # noqa: A001 - TF's name
maximum = _binary("Maximum", np.maximum, "Maximum", REAL_NUMERIC)
minimum = _binary("Minimum", np.minimum, "Minimum", REAL_NUMERIC)
squared_difference = _binary("SquaredDifference",
                             _elementwise_kernel(_squared_difference_kernel),
                             "SquaredDifference", _SQUARED_DIFFERENCE_TYPES)
_atan2 = _binary("Atan2", np.arctan2, "Atan2", FLOATING)
multiply_no_nan = _binary("MulNoNan", _zero_where_zero(np.multiply, 1), "MulNoNan",
                          TRAINABLE)
xlogy = _binary("Xlogy", _zero_where_zero(lambda x, y: x * np.log(y), 0), "Xlogy", TRAINABLE)
xdivy = _binary("Xdivy", _zero_where_zero(np.true_divide, 0), "Xdivy", TRAINABLE)
_polygamma = _binary("Polygamma", _elementwise_kernel(_polygamma_kernel), "Polygamma",
                     (dtypes.float32, dtypes.float64))
less = _binary("Less", np.less, "Less", REAL_NUMERIC, _to_bool)
less_equal = _binary("LessEqual", np.less_equal, "LessEqual", REAL_NUMERIC, _to_bool)
greater = _binary("Greater", np.greater, "Greater", REAL_NUMERIC, _to_bool)
greater_equal = _binary("GreaterEqual", np.greater_equal, "GreaterEqual", REAL_NUMERIC,
                        _to_bool)
equal = _binary("Equal", np.equal, "Equal", _ALL_TYPES, _to_bool)
not_equal = _binary("NotEqual", np.not_equal, "NotEqual", _ALL_TYPES, _to_bool)
logical_and = _binary("LogicalAnd", np.logical_and, "LogicalAnd", (dtypes.bool,))
logical_or = _binary("LogicalOr", np.logical_or, "LogicalOr", (dtypes.bool,))
mod = floormod
floor_div = floordiv
# Comparisons, logic and the integer-valued divisions have no gradient (as in TF).
for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
                 "LogicalAnd", "LogicalOr", "FloorDiv", "TruncateDiv"):
    NotDifferentiable(_op_type)


def atan2(y, x, name: Optional[str] = None) -> Tensor:
    """The angle of the point (x, y): ``arctan(y / x)`` in the right quadrant."""
    return _atan2(y, x, name=name)


def polygamma(a, x, name: Optional[str] = None) -> Tensor:
    """The ``a``-th derivative of digamma at ``x`` (``a`` a non-negative integer value)."""
    return _polygamma(a, x, name=name)


def logical_xor(x, y, name: str = "LogicalXor") -> Tensor:
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def truediv(x, y, name: Optional[str] = None) -> Tensor:
    """``x / y``; integer operands are first cast to floating point, as in TF1."""
    x, y = binary_operands(x, y, "RealDiv")
    if x.dtype.is_integer:
        target = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return realdiv(x, y, name=name or "truediv")


def divide(x, y, name: Optional[str] = None) -> Tensor:
    return truediv(x, y, name=name or "truediv")


def div(x, y, name: Optional[str] = None) -> Tensor:
    """TF1 ``div``: floor division for integers, true division for floats."""
    x, y = binary_operands(x, y, "Div")
    if x.dtype.is_integer:
        return floordiv(x, y, name=name or "div")
    return realdiv(x, y, name=name or "div")


def clip_by_value(t, clip_value_min, clip_value_max, name: Optional[str] = None) -> Tensor:
    """``t`` clipped to [clip_value_min, clip_value_max]; no gradient reaches ``t`` where
    it was clipped. The bounds may not broadcast ``t`` to a larger shape."""
    with graph_for([t, clip_value_min, clip_value_max]).atomic(), \
            name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert_to_tensor(t, name="t")
        clipped = maximum(minimum(values, clip_value_max), clip_value_min, name=scope)
        if not values.shape.is_compatible_with(clipped.shape):
            raise ValueError(f"clip_by_value: the bounds would broadcast {values.name} of "
                             f"shape {values.shape} to shape {clipped.shape}")
        return clipped


def reciprocal_no_nan(x, name: Optional[str] = None) -> Tensor:
    """``1 / x``, and 0 where ``x`` is 0."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        return div_no_nan(1, x, name=scope)


def log_sigmoid(x, name: Optional[str] = None) -> Tensor:
    """``log(sigmoid(x))`` as ``-softplus(-x)``: finite for large negative ``x``."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "LogSigmoid", [x]) as scope:
        return negative(softplus(-x), name=scope)


def scalar_mul(scalar, x, name: Optional[str] = None):
    """``scalar * x`` for a 0-d ``scalar``; ``x`` may be IndexedSlices (scales the values)."""
    if isinstance(x, IndexedSlices):
        return IndexedSlices(scalar_mul(scalar, x.values, name), x.indices, x.dense_shape)
    x = convert_to_tensor(x, name="x")
    factor = as_tensor(scalar, dtype=None if isinstance(scalar, Tensor) else x.dtype,
                       name="scalar", like=x)
    if factor.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {factor.shape} "
                         f"({factor.name})")
    return multiply(factor, x, name=name or "mul")


# ------------------------------------------------------------- binary op gradients
def reduce_to_shape_of(grad: Tensor, x: Tensor) -> Tensor:
    """Sums ``grad`` over the axes along which ``x`` was broadcast to ``grad``'s shape."""
    g_dims, x_dims = grad.shape.as_tuple(), x.shape.as_tuple()
    if g_dims == x_dims and grad.shape.is_fully_defined():
        return grad
    if grad.shape.is_fully_defined() and x.shape.is_fully_defined():
        lead = len(g_dims) - len(x_dims)
        axes = list(builtins.range(lead)) + [lead + i for i, d in enumerate(x_dims)
                                             if d == 1 and g_dims[lead + i] != 1]
        summed = reduce_sum(grad, axes) if axes else grad
        return summed if summed.shape.as_tuple() == x_dims else array.reshape(summed, x_dims)
    x_shape = array.shape(x)
    axes, _ = array.broadcast_gradient_args(x_shape, array.shape(grad))
    return array.reshape(reduce_sum(grad, axes), x_shape)


def _binary_grads(op, gx: Optional[Callable], gy: Optional[Callable]):
    """Applies the per-input rules only where a gradient is needed, then unbroadcasts."""
    x, y = op.inputs
    dx = reduce_to_shape_of(gx(), x) if gx is not None and gradient_needed(x) else None
    dy = reduce_to_shape_of(gy(), y) if gy is not None and gradient_needed(y) else None
    return dx, dy


def _real_grad(grad: Tensor) -> Tensor:
    """The part of ``grad`` that acts on a real-valued output stored as complex numbers:
    its imaginary part meets an output whose imaginary part never changes."""
    return cast(real(grad), grad.dtype) if grad.dtype.is_complex else grad


@RegisterGradient("AddV2")
def _add_grad(op, grad):
    return _binary_grads(op, lambda: grad, lambda: grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return _binary_grads(op, lambda: grad, lambda: -grad)


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: grad * conj(y), lambda: conj(x) * grad)


@RegisterGradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: realdiv(grad, conj(y)),
                         lambda: grad * conj(realdiv(realdiv(-x, y), y)))


@RegisterGradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: div_no_nan(grad, conj(y)),
                         lambda: grad * conj(div_no_nan(div_no_nan(-x, y), y)))


@RegisterGradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: grad, lambda: grad * -floordiv(x, y))


@RegisterGradient("TruncateMod")
def _truncatemod_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: grad, lambda: grad * -truncatediv(x, y))


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    """d(x^y) = y x^(y-1) dx + x^y log(x) dy, taking log(x) as 0 where it is not defined
    (x = 0, and real x < 0) so that neither term is nan there."""
    x, y = op.inputs

    def grad_y():
        defined = not_equal(x, 0) if x.dtype.is_complex else greater(x, 0)
        safe_x = where_v2(defined, x, array.ones_like(x))
        log_x = where_v2(defined, log(safe_x), array.zeros_like(x))
        return grad * conj(op.outputs[0] * log_x)

    return _binary_grads(op, lambda: grad * conj(y * pow(x, y - 1)), grad_y)


def _min_max_grad(op, grad, x_wins: Callable):
    x, y = op.inputs
    mask = x_wins(x, y)
    zeros = array.zeros_like(grad)
    return _binary_grads(op, lambda: where_v2(mask, grad, zeros),
                         lambda: where_v2(mask, zeros, grad))


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _min_max_grad(op, grad, greater_equal)


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _min_max_grad(op, grad, less_equal)


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    dx = scalar_mul(2, _real_grad(grad)) * (x - y)
    return _binary_grads(op, lambda: dx, lambda: -dx)


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    """atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)."""
    y, x = op.inputs
    scaled = grad / (square(x) + square(y))
    return _binary_grads(op, lambda: x * scaled, lambda: -y * scaled)


@RegisterGradient("MulNoNan")
def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, lambda: multiply_no_nan(grad, conj(y)),
                         lambda: multiply_no_nan(conj(x), grad))


def _indicator_of_nonzero(x: Tensor) -> Tensor:
    return cast(not_equal(x, 0), x.dtype)


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    """d/dx = log y (0 where x = 0), d/dy = x / y (0 where x = 0)."""
    x, y = op.inputs
    return _binary_grads(op, lambda: grad * conj(xlogy(_indicator_of_nonzero(x), y)),
                         lambda: grad * conj(xdivy(x, y)))


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    """d/dx = 1 / y (0 where x = 0), d/dy = -x / y^2 (0 where x = 0)."""
    x, y = op.inputs
    return _binary_grads(op, lambda: grad * conj(xdivy(_indicator_of_nonzero(x), y)),
                         lambda: grad * conj(xdivy(-x, square(y))))


@RegisterGradient("Polygamma")
def _polygamma_grad(op, grad):
    """Only ``x`` has a gradient: the derivative in the order ``a`` is not defined."""
    a, x = op.inputs
    return _binary_grads(op, None, lambda: grad * polygamma(a + 1, x))


# ------------------------------------------------------------------------ selection
def _check_select_operands(cond: Tensor, x: Tensor, y: Tensor) -> None:
    if cond.dtype is not dtypes.bool:
        raise TypeError(f"condition of where/select must be bool, got {cond.dtype.name} "
                        f"({cond.name})")
    if x.dtype is not y.dtype:
        raise TypeError(f"x and y of where/select must have one dtype, got {x.dtype.name} "
                        f"({x.name}) and {y.dtype.name} ({y.name})")


def _infer_select(inputs, attrs):
    """TF1 ``Select``: x and y of one shape; the condition a scalar, of that shape, or a
    vector along their first dimension."""
    cond, x, y = inputs
    _check_select_operands(cond, x, y)
    if not x.shape.is_compatible_with(y.shape):
        raise ValueError(f"x and y of where/select must have the same shape, got {x.shape} "
                         f"({x.name}) and {y.shape} ({y.name}); where_v2 broadcasts them")
    shape = x.shape.merge_with(y.shape)
    c = cond.shape
    along_rows = c.ndims == 1 and shape.ndims is not None and shape.ndims > 1
    if c.ndims != 0 and not c.is_compatible_with(shape[:1] if along_rows else shape):
        raise ValueError(f"condition {cond.name} of where/select has shape {c}; it must be a "
                         f"scalar, have the shape {shape} of x and y, or be a vector as long "
                         f"as their first dimension")
    if c.ndims != 0 and not along_rows:
        shape = shape.merge_with(c)
    return [(x.dtype, shape)]


def _select_kernel(cond, x, y):
    if cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return np.where(cond, x, y)


define_op("Select", infer=_infer_select, kernel=_select_kernel)


@RegisterGradient("Select")
def _select_grad(op, grad):
    cond, x, y = op.inputs
    zeros = array.zeros_like(grad)
    dx = apply_op("Select", [cond, grad, zeros], name="Select") if gradient_needed(x) else None
    dy = apply_op("Select", [cond, zeros, grad], name="Select") if gradient_needed(y) else None
    return None, dx, dy


def _infer_select_v2(inputs, attrs):
    cond, x, y = inputs
    _check_select_operands(cond, x, y)
    out = broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape,
                          f"where_v2({cond.name}, {x.name}, {y.name})")
    return [(x.dtype, out)]


define_op("SelectV2", infer=_infer_select_v2, kernel=np.where)


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    cond, x, y = op.inputs
    zeros = array.zeros_like(grad)
    dx = reduce_to_shape_of(where_v2(cond, grad, zeros), x) if gradient_needed(x) else None
    dy = reduce_to_shape_of(where_v2(cond, zeros, grad), y) if gradient_needed(y) else None
    return None, dx, dy


define_op("Where", kernel=lambda x: np.argwhere(x).astype(np.int64),
          infer=lambda inputs, attrs: [(dtypes.int64, TensorShape([None, inputs[0].shape.ndims]))])
NotDifferentiable("Where")


def _true_coordinates(condition, name: Optional[str]) -> Tensor:
    """The coordinates of the true (non-zero) elements: int64 of shape [count, rank]."""
    cond = convert_to_tensor(condition, name="condition")
    check_dtype_in(cond, NUMERIC + (dtypes.bool,), "Where", "condition")
    return apply_op("Where", [cond], name=name or "Where")


def _branches(condition, x, y, op_type: str, name: Optional[str]) -> Tensor:
    x, y = binary_operands(x, y, op_type)
    cond = as_tensor(condition, name="condition", like=x)
    return apply_op(op_type, [cond, x, y], name=name or op_type)


def select(condition, x, y, name: Optional[str] = None) -> Tensor:
    """Elementwise ``x if condition else y`` (TF1 shape rule, see :func:`where`)."""
    return _branches(condition, x, y, "Select", name)


def select_v2(condition, x, y, name: Optional[str] = None) -> Tensor:
    """Elementwise ``x if condition else y`` with broadcasting of all three."""
    return _branches(condition, x, y, "SelectV2", name)


def _check_both_or_neither(x, y) -> None:
    if (x is None) != (y is None):
        raise ValueError("x and y must both be non-None or both be None.")


def where(condition, x=None, y=None, name: Optional[str] = None) -> Tensor:
    """TF1 ``where``: with only ``condition``, the int64 coordinates of its true elements;
    with ``x`` and ``y``, elementwise selection where x and y have one shape and the
    condition is a scalar, has that shape, or is a vector picking whole rows."""
    _check_both_or_neither(x, y)
    if x is None:
        return _true_coordinates(condition, name)
    return select(condition, x, y, name=name)


def where_v2(condition, x=None, y=None, name: Optional[str] = None) -> Tensor:
    """Like :func:`where`, but condition, x and y broadcast against each other."""
    _check_both_or_neither(x, y)
    if x is None:
        return _true_coordinates(condition, name)
    return select_v2(condition, x, y, name=name)


# --------------------------------------------------------------------------- range
def _infer_range(inputs, attrs):
    start, limit, delta = (constant_value(t) for t in inputs)
    if start is None or limit is None or delta is None:
        return [(inputs[0].dtype, TensorShape([None]))]
    if delta == 0:
        raise ValueError("range requires delta != 0")
    count = builtins.max(0, int(np.ceil((limit - start) / delta)))
    return [(inputs[0].dtype, TensorShape([count]))]


def _range_kernel(start, limit, delta):
    return np.arange(start, limit, delta, dtype=start.dtype)


define_op("Range", infer=_infer_range, kernel=_range_kernel)
NotDifferentiable("Range")


@register_static_value("Range")
def _range_static(op):
    if not foldable(op):
        return None
    bounds = [constant_value(t) for t in op.inputs]
    return None if any(b is None for b in bounds) else _range_kernel(*bounds)


def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> Tensor:  # noqa: A001
    """Numbers from ``start`` (default 0) up to ``limit`` by ``delta``, like Python's range."""
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    tensors = [v for v in values if isinstance(v, Tensor)]
    if dtype is None:
        candidates = [t.dtype for t in tensors] + [
            dtypes.float32 if isinstance(v, float) else dtypes.int32
            for v in values if not isinstance(v, Tensor)]
        order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
        dtype = builtins.max(candidates, key=order.index)
    dtype = dtypes.as_dtype(dtype)
    start_t, limit_t, delta_t = (cast(as_tensor(v, dtype=None if isinstance(v, Tensor) else dtype),
                                      dtype) for v in values)
    return apply_op("Range", [start_t, limit_t, delta_t], name=name)


# --------------------------------------------------------------------- reductions
def _axis_tensor(x: Tensor, axis) -> Tensor:
    if axis is None:
        if x.shape.ndims is not None:
            return constant(np.arange(x.shape.ndims, dtype=np.int32), name="Const")
        return range(0, array.rank(x))
    return as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32, like=x)


def _infer_reduction(inputs, attrs):
    x, axis = inputs
    if axis.dtype not in _INDEX:
        raise TypeError(f"Reduction axes {axis.name} must be int32 or int64, got "
                        f"{axis.dtype.name}")
    ndims = x.shape.ndims
    axes = static_axes(axis, ndims, f"input {x.name} of shape {x.shape}")
    keep = attrs["keep_dims"]
    if axes is None:
        if keep and ndims is not None:
            return [(x.dtype, TensorShape([None] * ndims))]
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_tuple()
    if keep:
        out = tuple(1 if i in axes else d for i, d in enumerate(dims))
    else:
        out = tuple(d for i, d in enumerate(dims) if i not in axes)
    return [(x.dtype, TensorShape.from_tuple(out))]


def _reduce_kernel(reduce: Callable) -> Callable:
    """A reduction kernel from ``reduce(x, axes, keepdims)``, answering in ``x``'s dtype."""
    def kernel(x, axis, *, keep_dims):
        with np.errstate(all="ignore"):
            result = reduce(x, tuple(int(a) for a in np.asarray(axis).reshape(-1)), keep_dims)
        return np.asarray(result).astype(x.dtype, copy=False)
    return kernel


def _accumulator(dtype: np.dtype):
    """The type sums are accumulated in: float16 in float32, as in TensorFlow."""
    return np.float32 if dtype == np.float16 else dtype


def _sum(x, axes, keepdims):
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x.dtype))


def _prod(x, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x.dtype))


def _mean(x, axes, keepdims):
    count = int(np.prod([x.shape[a] for a in axes]))
    if x.dtype.kind not in "iu":
        return np.sum(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x.dtype)) / count
    total = np.sum(x, axis=axes, keepdims=keepdims,
                   dtype=np.int64 if x.dtype.kind == "i" else np.uint64)
    quotient = np.abs(total) // builtins.max(count, 1)  # truncating toward zero, as TF does
    return np.where(total < 0, -quotient, quotient)


def _bound(dtype: np.dtype, upper: bool):
    """The identity of max (``upper`` False) or min: what an empty reduction returns."""
    if dtype.kind == "f":
        return np.inf if upper else -np.inf
    info = np.iinfo(dtype)
    return info.max if upper else info.min


def _max(x, axes, keepdims):
    return np.max(x, axis=axes, keepdims=keepdims, initial=_bound(x.dtype, upper=False))


def _min(x, axes, keepdims):
    return np.min(x, axis=axes, keepdims=keepdims, initial=_bound(x.dtype, upper=True))


def _euclidean_norm(x, axes, keepdims):
    magnitude = np.abs(x) if x.dtype.kind in "fc" else np.abs(x.astype(np.float64))
    # hypot rescales as it goes: no overflow for huge entries, no underflow for tiny ones
    return np.hypot.reduce(magnitude, axis=axes, keepdims=keepdims)


def _reduced_shape_kernel(input_shape, axes):
    out = np.array(input_shape, copy=True)
    out[np.asarray(axes, dtype=np.int64).reshape(-1) % builtins.max(len(out), 1)] = 1
    return out


define_op("ReducedShape", infer=lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)],
          kernel=_reduced_shape_kernel)
NotDifferentiable("ReducedShape")


def _keep_reduced_dims(op, t: Tensor) -> Tensor:
    """``t``, shaped like a reduction's output, reshaped to keep the reduced axes as 1s."""
    x, axis = op.inputs
    dims = x.shape.as_tuple()
    axes = static_axes(axis, None if dims is None else len(dims))
    if axes is not None:
        kept = tuple(1 if i in axes else d for i, d in enumerate(dims))
        if t.shape.as_tuple() == kept:
            return t
        if None not in kept:
            return array.reshape(t, kept)
    kept_shape = apply_op("ReducedShape", [array.shape(x), axis], name="ReducedShape")
    return array.reshape(t, kept_shape)


def _broadcast_reduction_grad(op, grad) -> Tensor:
    """Spreads the gradient of a reduction back over the reduced axes."""
    x = op.inputs[0]
    kept = _keep_reduced_dims(op, grad)
    if not x.shape.is_fully_defined():
        return array.broadcast_to(kept, array.shape(x))
    dims = x.shape.as_tuple()
    return kept if kept.shape.as_tuple() == dims else array.broadcast_to(kept, dims)


def _sum_grad(op, grad):
    return _broadcast_reduction_grad(op, grad), None


def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    spread = _broadcast_reduction_grad(op, grad)
    in_count, out_count = x.shape.num_elements(), y.shape.num_elements()
    if in_count is not None and out_count is not None:
        return spread * (out_count / builtins.max(in_count, 1)), None
    ratio = truediv(cast(array.size(y), dtypes.float64), cast(array.size(x), dtypes.float64))
    return spread * cast(ratio, spread.dtype), None


def _prod_layout_kernel(input_shape, axes):
    ndims = len(input_shape)
    reduced = np.unique(np.asarray(axes, dtype=np.int64).reshape(-1) % builtins.max(ndims, 1))
    others = np.setdiff1d(np.arange(ndims), reduced)
    sizes = [np.prod(input_shape[reduced]), np.prod(input_shape[others])]
    return (np.concatenate([reduced, others]).astype(np.int32),
            np.asarray(sizes, dtype=np.int32))


define_op("ProdLayout", kernel=_prod_layout_kernel,
          infer=lambda inputs, attrs: [(dtypes.int32, inputs[0].shape),
                                       (dtypes.int32, TensorShape([2]))])
NotDifferentiable("ProdLayout")


def _prod_layout(x: Tensor, axis: Tensor) -> tuple:
    """The permutation moving the reduced axes of ``x`` to the front, and the matrix shape
    [reduced count, other count] of ``x`` so permuted (constants when static)."""
    dims = x.shape.as_tuple()
    axes = static_axes(axis, None if dims is None else len(dims))
    if axes is None or not x.shape.is_fully_defined():
        return apply_op("ProdLayout", [array.shape(x), axis], name="ProdLayout")
    others = [i for i in builtins.range(len(dims)) if i not in axes]
    sizes = [int(np.prod([dims[i] for i in group])) for group in (axes, others)]
    return (constant(np.asarray(axes + others, np.int32), name="perm"),
            constant(np.asarray(sizes, np.int32), name="matrix_shape"))


def _prod_grad(op, grad):
    """d prod / d x_i is the product of the other entries reduced with x_i: the product of
    those before it times those after it (exclusive cumprods), so zeros need no care."""
    x, axis = op.inputs
    perm, matrix_shape = _prod_layout(x, axis)
    permuted = array.transpose(x, perm)
    matrix = array.reshape(permuted, matrix_shape)
    others = cumprod(matrix, 0, exclusive=True) * cumprod(matrix, 0, exclusive=True,
                                                           reverse=True)
    others = array.transpose(array.reshape(others, array.shape_of_input(permuted)),
                             array.invert_permutation(perm))
    return _broadcast_reduction_grad(op, grad) * conj(others), None


def _extremum_grad(op, grad):
    """Max/Min: the gradient goes to the entries equal to the result, split among ties."""
    x, axis = op.inputs
    hits = cast(equal(x, _keep_reduced_dims(op, op.outputs[0])), grad.dtype)
    return hits / reduce_sum(hits, axis, keepdims=True) * _keep_reduced_dims(op, grad), None


def _euclidean_norm_grad(op, grad):
    """x / ||x|| per entry (nan where the norm is zero, as in TensorFlow)."""
    norm = _keep_reduced_dims(op, op.outputs[0])
    return op.inputs[0] * (_keep_reduced_dims(op, _real_grad(grad)) / norm), None


def _reduction_args(axis, reduction_indices, keepdims, keep_dims) -> tuple:
    """TF1's aliases: ``reduction_indices`` for ``axis``, ``keep_dims`` for ``keepdims``."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = keepdims if keepdims is not None else keep_dims
    return (reduction_indices if axis is None else axis), builtins.bool(keep)


def _reduction(op_type: str, reduce: Callable, allowed, gradient: Optional[Callable]) -> Callable:
    """Defines a reduction op and returns its ``reduce_xxx`` constructor (TF1 signature)."""
    define_op(op_type, infer=_infer_reduction, kernel=_reduce_kernel(reduce))
    _register_gradient(op_type, gradient)

    def constructor(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                    reduction_indices=None, keep_dims=None) -> Tensor:
        axis, keep = _reduction_args(axis, reduction_indices, keepdims, keep_dims)
        x = convert_to_tensor(input_tensor, name="input_tensor")
        check_dtype_in(x, allowed, op_type, "input")
        return apply_op(op_type, [x, _axis_tensor(x, axis)], name=name or op_type,
                        keep_dims=keep)

    constructor.__name__ = f"reduce_{op_type.lower()}"
    constructor.__doc__ = f"{op_type} of ``input_tensor`` over ``axis`` (all axes when None)."
    return constructor


reduce_sum = _reduction("Sum", _sum, NUMERIC, _sum_grad)
reduce_mean = _reduction("Mean", _mean, NUMERIC, _mean_grad)
reduce_prod = _reduction("Prod", _prod, NUMERIC, _prod_grad)
reduce_max = _reduction("Max", _max, REAL_NUMERIC, _extremum_grad)
reduce_min = _reduction("Min", _min, REAL_NUMERIC, _extremum_grad)
reduce_any = _reduction("Any", lambda x, axes, keep: np.any(x, axes, keepdims=keep),
                        (dtypes.bool,), None)
reduce_all = _reduction("All", lambda x, axes, keep: np.all(x, axes, keepdims=keep),
                        (dtypes.bool,), None)
_euclidean_norm_op = _reduction("EuclideanNorm", _euclidean_norm, NUMERIC,
                                _euclidean_norm_grad)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims: bool = False,
                          name: Optional[str] = None) -> Tensor:
    """``sqrt(sum(|x|^2))`` over ``axis``, without overflow for large entries."""
    return _euclidean_norm_op(input_tensor, axis, keepdims, name)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                     reduction_indices=None, keep_dims=None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum so nothing overflows."""
    axis, keep = _reduction_args(axis, reduction_indices, keepdims, keep_dims)
    x = convert_to_tensor(input_tensor, name="input_tensor")
    check_dtype_in(x, FLOATING, "ReduceLogSumExp", "input_tensor")
    with name_scope(name, "ReduceLogSumExp", [x]) as scope:
        peak = reduce_max(x, axis, keepdims=True)
        # The shift only keeps exp in range, so it carries no gradient; an infinite peak
        # would turn x - peak into nan, and is replaced by 0.
        shift = array.stop_gradient(where_v2(is_finite(peak), peak, array.zeros_like(peak)))
        total = log(reduce_sum(exp(x - shift), axis, keepdims=keep))
        if not keep:
            shift = array.reshape(shift, array.shape_of_input(total))
        return add(total, shift, name=scope)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64,
                  name: Optional[str] = None, reduction_indices=None, keep_dims=None,
                  input=None) -> Tensor:  # noqa: A002 - TF1's alias
    """The number of non-zero (true) entries of ``input_tensor`` over ``axis``."""
    if input_tensor is None and input is None:
        raise ValueError("count_nonzero needs input_tensor (or its alias input)")
    axis, keep = _reduction_args(axis, reduction_indices, keepdims, keep_dims)
    x = convert_to_tensor(input_tensor if input_tensor is not None else input,
                          name="input_tensor")
    with name_scope(name, "count_nonzero", [x]):
        nonzero = cast(not_equal(x, False if x.dtype.is_bool else 0), dtypes.int64)
        return cast(reduce_sum(nonzero, axis, keepdims=keep), dtype)


def _centered_squares(x: Tensor, axis) -> Tensor:
    """|x - mean(x)|^2 over ``axis``: the terms of the variance, real even for complex x."""
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"Input must be either real or complex. Received integer type "
                        f"{x.dtype.name} ({x.name}).")
    deviation = x - reduce_mean(x, axis, keepdims=True)
    return real(deviation * conj(deviation)) if x.dtype.is_complex else square(deviation)


def reduce_variance(input_tensor, axis=None, keepdims: bool = False,
                    name: Optional[str] = None) -> Tensor:
    """The (population) variance of ``input_tensor`` over ``axis``."""
    x = convert_to_tensor(input_tensor, name="input_tensor")
    with name_scope(name or "reduce_variance"):
        return reduce_mean(_centered_squares(x, axis), axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims: bool = False,
               name: Optional[str] = None) -> Tensor:
    """The (population) standard deviation of ``input_tensor`` over ``axis``."""
    x = convert_to_tensor(input_tensor, name="input_tensor")
    with name_scope(name or "reduce_std"):
        return sqrt(reduce_mean(_centered_squares(x, axis), axis, keepdims=keepdims))


def lbeta(x, name: Optional[str] = None) -> Tensor:
    """log |B(x)| of the multivariate beta function over the last axis:
    sum(lgamma(x)) - lgamma(sum(x)); an empty last axis gives -inf."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "lbeta", [x]):
        return reduce_sum(lgamma(x), -1) - lgamma(reduce_sum(x, -1))


def zero_fraction(value, name: Optional[str] = None) -> Tensor:
    """The fraction of entries of ``value`` that are zero, as a float32 scalar."""
    x = convert_to_tensor(value, name="value")
    with name_scope(name, "zero_fraction", [x]):
        return reduce_mean(cast(equal(x, 0), dtypes.float32))


def _is_monotonic(x, in_order: Callable, name: Optional[str], default_name: str) -> Tensor:
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_numeric:
        raise TypeError(f"Expected x to be numeric, got {x.dtype.name} ({x.name})")
    with name_scope(name, default_name, [x]):
        flat = array.reshape(x, [-1])
        return reduce_all(in_order(flat[:-1], flat[1:]))


def is_non_decreasing(x, name: Optional[str] = None) -> Tensor:
    """Whether the entries of ``x``, in row-major order, never decrease."""
    return _is_monotonic(x, less_equal, name, "is_non_decreasing")


def is_strictly_increasing(x, name: Optional[str] = None) -> Tensor:
    """Whether the entries of ``x``, in row-major order, always increase."""
    return _is_monotonic(x, less, name, "is_strictly_increasing")


# ----------------------------------------------------------------- argmax, argmin
_ARG_OUTPUT_TYPES = (dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.int64)


def _infer_arg_reduction(inputs, attrs):
    x, dimension = inputs
    out = attrs["output_type"]
    if dimension.shape.ndims not in (None, 0):
        raise ValueError(f"The dimension of argmax/argmin must be a scalar, got "
                         f"{dimension.name} of shape {dimension.shape}")
    ndims = x.shape.ndims
    axis = static_ints(dimension)
    if ndims is None:
        return [(out, TensorShape(None))]
    if axis is None:
        return [(out, TensorShape([None] * builtins.max(ndims - 1, 0)))]
    a = axis[0]
    if not -ndims <= a < ndims:
        raise ValueError(f"Dimension ({a}) must be in the range [{-ndims}, {ndims}), where "
                         f"{ndims} is the number of dimensions in the input {x.name} of shape "
                         f"{x.shape}")
    dims = x.shape.as_tuple()
    return [(out, TensorShape.from_tuple(dims[:a % ndims] + dims[a % ndims + 1:]))]


def _arg_kernel(find: Callable) -> Callable:
    def kernel(x, dimension, *, output_type):
        a = int(dimension)
        if x.shape[a] == 0:
            raise ValueError(f"Reduction axis {a} is empty in shape {list(x.shape)}")
        return np.asarray(find(x, axis=a)).astype(output_type.as_numpy_dtype)
    return kernel


def _arg_reduction(op_type: str, find: Callable) -> Callable:
    """Defines ArgMax/ArgMin (index of the first extreme entry) and its TF1 constructor."""
    define_op(op_type, infer=_infer_arg_reduction, kernel=_arg_kernel(find))
    NotDifferentiable(op_type)

    def constructor(input, axis=None, name: Optional[str] = None, dimension=None,  # noqa: A002
                    output_type=dtypes.int64) -> Tensor:
        if axis is not None and dimension is not None:
            raise ValueError("Cannot specify both 'dimension' and 'axis'.")
        axis = 0 if axis is None and dimension is None else \
            (dimension if axis is None else axis)
        x = convert_to_tensor(input, name="input")
        check_dtype_in(x, REAL_NUMERIC + (dtypes.bool,), op_type, "input")
        out = dtypes.as_dtype(output_type)
        if out not in _ARG_OUTPUT_TYPES:
            names = ", ".join(d.name for d in _ARG_OUTPUT_TYPES)
            raise TypeError(f"Value passed to parameter 'output_type' has DataType {out.name} "
                            f"not in list of allowed values: {names}")
        dim = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32, like=x)
        check_dtype_in(dim, _INDEX, op_type, "dimension")
        return apply_op(op_type, [x, dim], name=name or op_type, output_type=out)

    constructor.__name__ = op_type.lower()
    constructor.__doc__ = (f"Index of the {op_type[3:].lower()}imum of ``input`` along ``axis`` "
                           "(default 0); the first one among ties.")
    return constructor


argmax = _arg_reduction("ArgMax", np.argmax)
argmin = _arg_reduction("ArgMin", np.argmin)


# -------------------------------------------------------------------------- scans
def _infer_scan(inputs, attrs):
    x, axis = inputs
    ndims = x.shape.ndims
    if ndims == 0:
        raise ValueError(f"cumsum/cumprod needs a tensor of rank >= 1, got the scalar {x.name}")
    if axis.shape.ndims not in (None, 0):
        raise ValueError(f"The axis of cumsum/cumprod must be a scalar, got {axis.name} of "
                         f"shape {axis.shape}")
    a = static_ints(axis)
    if a is not None and ndims is not None and not -ndims <= a[0] < ndims:
        raise ValueError(f"Expected scan axis in the range [{-ndims}, {ndims}), but got {a[0]} "
                         f"(input {x.name} of shape {x.shape})")
    return [(x.dtype, x.shape)]


def _scan_kernel(ufunc: np.ufunc) -> Callable:
    """Cumulative ``ufunc`` along an axis; ``exclusive`` leaves each entry out of its own
    result, ``reverse`` runs from the end."""
    def kernel(x, axis, *, exclusive, reverse):
        a = int(axis)
        values = np.flip(x, a) if reverse else x
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(values, axis=a, dtype=x.dtype)
        if exclusive and out.shape[a]:
            first = np.full_like(np.take(out, [0], axis=a), ufunc.identity)
            out = np.concatenate([first, np.delete(out, -1, axis=a)], axis=a)
        return np.flip(out, a) if reverse else out
    return kernel


def _scan(op_type: str, ufunc: np.ufunc, gradient: Callable) -> Callable:
    """Defines Cumsum/Cumprod and returns its TF1 constructor."""
    define_op(op_type, infer=_infer_scan, kernel=_scan_kernel(ufunc))
    RegisterGradient(op_type)(gradient)

    def constructor(x, axis=0, exclusive: bool = False, reverse: bool = False,
                    name: Optional[str] = None) -> Tensor:
        x = convert_to_tensor(x, name="x")
        check_dtype_in(x, NUMERIC, op_type)
        axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                           like=x)
        check_dtype_in(axis_t, _INDEX, op_type, "axis")
        return apply_op(op_type, [x, axis_t], name=name or op_type,
                        exclusive=builtins.bool(exclusive), reverse=builtins.bool(reverse))

    constructor.__name__ = op_type.lower()
    constructor.__doc__ = (f"Cumulative {'sum' if op_type == 'Cumsum' else 'product'} of "
                           "``x`` along ``axis``.")
    return constructor


def _cumsum_grad(op, grad):
    """Each entry reaches the outputs after it: sum the gradients the other way round."""
    return cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                  reverse=not op.get_attr("reverse")), None


def _cumprod_grad(op, grad):
    """x_i reaches the outputs y_k that include it, with dy_k/dx_i the product of y_k's
    other factors. Where x_i != 0 that is y_k / x_i. At the first zero in scan order it
    is a cumprod with that zero replaced by 1. After it, every such product holds that
    zero. (TensorFlow divides everywhere, giving zeros a zero gradient.) Second derivatives
    are exact too, except at zeros that follow another zero in the scan."""
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")

    def sum_over_reached_outputs(t):
        return cumsum(t, axis, exclusive=exclusive, reverse=not reverse)

    is_zero = equal(x, 0)
    zeros_before = cumsum(cast(is_zero, dtypes.int32), axis, exclusive=True, reverse=reverse)
    first_zero = logical_and(is_zero, equal(zeros_before, 0))
    skipping_it = cumprod(where_v2(first_zero, array.ones_like(x), x), axis,
                          exclusive=exclusive, reverse=reverse)
    at_first_zero = sum_over_reached_outputs(grad * conj(skipping_it))
    elsewhere = div_no_nan(sum_over_reached_outputs(grad * conj(op.outputs[0])), conj(x))
    return where_v2(first_zero, at_first_zero, elsewhere), None


cumsum = _scan("Cumsum", np.add, _cumsum_grad)
cumprod = _scan("Cumprod", np.multiply, _cumprod_grad)


# ------------------------------------------------------------------------ sorting
def _infer_argsort(inputs, attrs):
    x = inputs[0]
    ndims = x.shape.ndims
    a = attrs["axis"]
    if ndims == 0:
        raise ValueError(f"sort/argsort needs a tensor of rank >= 1, got the scalar {x.name}")
    if ndims is not None and not -ndims <= a < ndims:
        raise ValueError(f"sort/argsort axis {a} is out of range for {x.name} of shape "
                         f"{x.shape}")
    return [(dtypes.int32, x.shape)]


def _argsort_kernel(x, *, axis, descending):
    """A stable sort: ties keep their order, in either direction (as TensorFlow's)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int32)
    # Stable descending order: sort the reversed values ascending, then reverse back.
    last = x.shape[axis] - 1
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (last - np.flip(order, axis)).astype(np.int32)


define_op("ArgSort", infer=_infer_argsort, kernel=_argsort_kernel)
NotDifferentiable("ArgSort")


def _infer_permute(inputs, attrs):
    x, permutation = inputs
    return [(x.dtype, x.shape.merge_with(permutation.shape))]


# PermuteAlongAxis(x, p)[..., i, ...] = x[..., p[..., i, ...], ...] along ``axis``, where
# p holds permutations (an ArgSort result): then the inverse permutation undoes it.
define_op("PermuteAlongAxis", infer=_infer_permute,
          kernel=lambda x, permutation, *, axis: np.take_along_axis(x, permutation, axis))


@RegisterGradient("PermuteAlongAxis")
def _permute_grad(op, grad):
    permutation = op.inputs[1]
    axis = op.get_attr("axis")
    inverse = apply_op("ArgSort", [permutation], name="ArgSort", axis=axis, descending=False)
    return apply_op("PermuteAlongAxis", [grad, inverse], name="PermuteAlongAxis",
                    axis=axis), None


def _sort_args(values, axis, direction: str, op_name: str) -> tuple:
    """Validates sort/argsort arguments: a constant axis and a known direction."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    static = static_ints(axis) if isinstance(axis, Tensor) else \
        [int(a) for a in np.asarray(axis).reshape(-1)]
    if static is None or len(static) != 1:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis!r}.")
    x = convert_to_tensor(values, name="values")
    check_dtype_in(x, REAL_NUMERIC, op_name, "values")
    return x, static[0]


def argsort(values, axis=-1, direction: str = "ASCENDING", stable: bool = False,
            name: Optional[str] = None) -> Tensor:
    """The int32 indices that sort ``values`` along ``axis`` (ties keep their order)."""
    x, axis = _sort_args(values, axis, direction, "argsort")
    with name_scope(name, "argsort", [x]) as scope:
        return apply_op("ArgSort", [x], name=scope, axis=axis,
                        descending=direction == "DESCENDING")


def sort(values, axis=-1, direction: str = "ASCENDING", name: Optional[str] = None) -> Tensor:
    """``values`` sorted along ``axis``; the gradient is routed back through the permutation."""
    x, axis = _sort_args(values, axis, direction, "sort")
    with name_scope(name, "sort", [x]) as scope:
        order = apply_op("ArgSort", [x], name="ArgSort", axis=axis,
                         descending=direction == "DESCENDING")
        return apply_op("PermuteAlongAxis", [x, order], name=scope, axis=axis)


# ------------------------------------------------------------------------- add_n
def _infer_add_n(inputs, attrs):
    first = inputs[0]
    shape = first.shape
    for t in inputs[1:]:
        if t.dtype is not first.dtype:
            raise TypeError(f"All inputs of AddN must have one dtype, got "
                            f"{[x.dtype.name for x in inputs]}")
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"Shapes must be equal for AddN: {shape} vs {t.shape} "
                             f"({first.name}, {t.name})")
        shape = shape.merge_with(t.shape)
    return [(first.dtype, shape)]


def _add_n_kernel(*xs, **_):
    if len(xs) == 1:
        return xs[0]
    total = np.asarray(xs[0] + xs[1])  # a fresh array: safe to accumulate into in place
    for x in xs[2:]:
        np.add(total, x, out=total)
    return total


define_op("AddN", infer=_infer_add_n, kernel=_add_n_kernel)
define_op("AccumulateNV2", infer=_infer_add_n, kernel=_add_n_kernel)


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


RegisterGradient("AccumulateNV2")(_add_n_grad)


def _sum_inputs(inputs, what: str) -> list[Tensor]:
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(f"inputs to {what} must be a non-empty list of Tensors, got "
                         f"{inputs!r}")
    tensors = [convert_to_tensor(t) for t in inputs]
    return tensors


def add_n(inputs, name: Optional[str] = None) -> Tensor:
    """Sums a list of same-shaped tensors in one op."""
    tensors = _sum_inputs(inputs, "add_n")
    if len(tensors) == 1:
        return array.identity(tensors[0], name=name) if name else tensors[0]
    return apply_op("AddN", tensors, name=name or "AddN")


def accumulate_n(inputs, shape=None, tensor_dtype=None, name: Optional[str] = None) -> Tensor:
    """Like ``add_n``; the terms may be summed in any order, as soon as each is ready."""
    tensors = _sum_inputs(inputs, "accumulate_n")
    if tensor_dtype is not None and any(t.dtype is not dtypes.as_dtype(tensor_dtype)
                                        for t in tensors):
        raise TypeError(f"accumulate_n: inputs must all be {dtypes.as_dtype(tensor_dtype).name}")
    if len(tensors) == 1:
        return tensors[0]
    result = apply_op("AccumulateNV2", tensors, name=name or "AccumulateNV2",
                      shape=TensorShape(shape))
    if shape is not None:
        result.set_shape(shape)
    return result


# ------------------------------------------------------------------------ matmul
def _infer_matmul(inputs, attrs):
    a, b = inputs
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if a.dtype is not b.dtype:
        raise TypeError(f"Input 'b' of 'MatMul' Op has type {b.dtype.name} that does not match "
                        f"type {a.dtype.name} of argument 'a'. ({a.name}, {b.name})")
    sa, sb = a.shape.with_rank(2).as_tuple(), b.shape.with_rank(2).as_tuple()
    rows, inner_a = (sa[1], sa[0]) if ta else sa
    inner_b, cols = (sb[1], sb[0]) if tb else sb
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ValueError(f"Dimensions must be equal, but are {inner_a} and {inner_b} for "
                         f"MatMul of {a.name} with shape {a.shape} and {b.name} with shape "
                         f"{b.shape} (transpose_a={ta}, transpose_b={tb})")
    return [(a.dtype, TensorShape([rows, cols]))]


def _matmul_kernel(a, b, *, transpose_a, transpose_b):
    return np.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


define_op("MatMul", infer=_infer_matmul, kernel=_matmul_kernel)


def _infer_batch_matmul(inputs, attrs):
    a, b = inputs
    if a.dtype is not b.dtype:
        raise TypeError(f"Input 'y' of 'BatchMatMulV2' Op has type {b.dtype.name} that does not "
                        f"match type {a.dtype.name} of argument 'x'. ({a.name}, {b.name})")
    sa, sb = a.shape.as_tuple(), b.shape.as_tuple()
    if sa is None or sb is None:
        return [(a.dtype, TensorShape(None))]
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"BatchMatMul operands must have rank >= 2, got {a.shape} and "
                         f"{b.shape}")
    rows, inner_a = (sa[-1], sa[-2]) if attrs["adj_x"] else sa[-2:]
    inner_b, cols = (sb[-1], sb[-2]) if attrs["adj_y"] else sb[-2:]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ValueError(f"Dimensions must be equal, but are {inner_a} and {inner_b} for "
                         f"BatchMatMulV2 of {a.name} with shape {a.shape} and {b.name} with "
                         f"shape {b.shape}")
    batch = broadcast_shape(TensorShape(sa[:-2]), TensorShape(sb[:-2]), "batch dimensions")
    return [(a.dtype, batch.concatenate([rows, cols]))]


def _adjoint(x: np.ndarray) -> np.ndarray:
    swapped = np.swapaxes(x, -1, -2)
    return np.conj(swapped) if x.dtype.kind == "c" else swapped


def _batch_matmul_kernel(a, b, *, adj_x, adj_y):
    return np.matmul(_adjoint(a) if adj_x else a, _adjoint(b) if adj_y else b)


define_op("BatchMatMulV2", infer=_infer_batch_matmul, kernel=_batch_matmul_kernel)


def _matmul_grads(op, grad, a: Tensor, b: Tensor, flip_a: bool, flip_b: bool,
                  product: Callable):
    """Gradients of ``C = f(a) @ g(b)`` where f, g flip (transpose/adjoint) or not.

    da = grad @ g(b)^H, or its flip; db = f(a)^H @ grad, or its flip: two products.
    """
    da = db = None
    if gradient_needed(op.inputs[0]):
        da = product(b, grad, flip_b, True) if flip_a else product(grad, b, False, not flip_b)
    if gradient_needed(op.inputs[1]):
        db = product(grad, a, True, flip_a) if flip_b else product(a, grad, not flip_a, False)
    return da, db


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    """MatMul only transposes, so complex operands are conjugated explicitly."""
    def product(x, y, tx, ty):
        return apply_op("MatMul", [x, y], name="MatMul", transpose_a=tx, transpose_b=ty)
    a, b = op.inputs
    return _matmul_grads(op, grad, conj(a), conj(b), op.get_attr("transpose_a"),
                         op.get_attr("transpose_b"), product)


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    def product(x, y, adj_x, adj_y):
        return apply_op("BatchMatMulV2", [x, y], name="MatMul", adj_x=adj_x, adj_y=adj_y)
    a, b = op.inputs
    da, db = _matmul_grads(op, grad, a, b, op.get_attr("adj_x"), op.get_attr("adj_y"), product)
    return (None if da is None else reduce_to_shape_of(da, a),
            None if db is None else reduce_to_shape_of(db, b))


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: Optional[str] = None) -> Tensor:
    """Matrix product ``a @ b``, batched (with broadcasting) when either has rank > 2."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = binary_operands(a, b, "MatMul")
    check_dtype_in(a, NUMERIC, "MatMul", "a")
    ra, rb = a.shape.ndims, b.shape.ndims
    if ra == 2 and rb == 2:
        if adjoint_a:
            a = conj(a)
        if adjoint_b:
            b = conj(b)
        return apply_op("MatMul", [a, b], name=name or "MatMul",
                        transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b)
    if transpose_a and a.dtype.is_complex:
        a = conj(a)
    if transpose_b and b.dtype.is_complex:
        b = conj(b)
    return apply_op("BatchMatMulV2", [a, b], name=name or "MatMul",
                    adj_x=transpose_a or adjoint_a, adj_y=transpose_b or adjoint_b)


# -------------------------------------------------------------- Tensor operators
def _reverse(fn: Callable) -> Callable:
    return lambda self, other: fn(other, self)


def _install_operators() -> None:
    def truediv_op(x, y):
        return truediv(x, y, name="truediv")

    binary_ops = {
        "add": lambda x, y: add(x, y, name="add"),
        "sub": lambda x, y: subtract(x, y, name="sub"),
        "mul": lambda x, y: multiply(x, y, name="mul"),
        "truediv": truediv_op,
        "floordiv": lambda x, y: floordiv(x, y, name="floordiv"),
        "mod": lambda x, y: floormod(x, y, name="mod"),
        "pow": lambda x, y: pow(x, y, name="pow"),
        "matmul": lambda x, y: matmul(x, y, name="matmul"),
        "and": lambda x, y: logical_and(x, y, name="and"),
        "or": lambda x, y: logical_or(x, y, name="or"),
        "xor": lambda x, y: logical_xor(x, y, name="xor"),
    }
    for name, fn in binary_ops.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _reverse(fn))
    Tensor.__lt__ = lambda x, y: less(x, y)
    Tensor.__le__ = lambda x, y: less_equal(x, y)
    Tensor.__gt__ = lambda x, y: greater(x, y)
    Tensor.__ge__ = lambda x, y: greater_equal(x, y)
    Tensor.__neg__ = lambda x: negative(x, name="Neg")
    IndexedSlices.__neg__ = lambda x: IndexedSlices(negative(x.values), x.indices,
                                                    x.dense_shape)
    Tensor.__abs__ = lambda x: abs(x, name="Abs")
    Tensor.__invert__ = lambda x: logical_not(x, name="invert")
    Tensor.__pos__ = lambda x: x


_install_operators()
