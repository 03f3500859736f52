"""Special functions from SciPy under TF's op types: ``zeta`` (Hurwitz), ``igamma`` and
``igammac`` (the regularized incomplete gamma functions P and Q), ``betainc`` (the
regularized incomplete beta function), the modified Bessel functions ``bessel_i0``,
``bessel_i1`` and their exponentially scaled forms, and ``erfcinv``.

Gradients follow TF: ``Zeta`` has one in ``q`` only, ``Betainc`` in ``x`` only; the
incomplete gammas have both, the derivative in ``a`` being the ``IgammaGradA`` op.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from scipy import special

from gradflow.framework import dtypes
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import math as math_ops
from gradflow.ops.array import ones_like
from gradflow.ops.extra_math import xlog1py
from gradflow.ops.common import (apply_op, as_tensor, binary_operands, broadcast_shape,
                                 check_dtype_in, constructor)

__all__ = ["zeta", "igamma", "igammac", "betainc", "igamma_grad_a", "log_gamma_density",
           "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "erfcinv"]

_REAL = (dtypes.float32, dtypes.float64)


def _binary_infer(op_type: str):
    def infer(inputs, attrs):
        x, y = inputs
        check_dtype_in(x, _REAL, op_type, "x" if op_type == "Zeta" else "a")
        return [(x.dtype, broadcast_shape(x.shape, y.shape, lambda: f"'{op_type}'"))]
    return infer


def _elementwise(fn):
    def kernel(*arrays):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*arrays), dtype=arrays[0].dtype)
    return kernel


def log_gamma_density(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log of d/dx P(a, x) = x^(a-1) exp(-x) / Gamma(a), on arrays."""
    return -x + special.xlogy(a - 1, x) - special.gammaln(a)


def igamma_grad_a(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d/da of P(a, x) by a fourth-order central difference in float64 (SciPy has no
    closed form; the step is relative to ``a``, so the error is ~1e-10 relative)."""
    a64, x64 = np.asarray(a, np.float64), np.asarray(x, np.float64)
    h = 1e-3 * np.maximum(np.abs(a64), 1e-2)
    h = np.minimum(h, 0.5 * a64)  # stay inside a > 0
    values = [special.gammainc(a64 + k * h, x64) for k in (-2, -1, 1, 2)]
    return (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)


define_op("Zeta", infer=_binary_infer("Zeta"), kernel=_elementwise(special.zeta))
define_op("Igamma", infer=_binary_infer("Igamma"), kernel=_elementwise(special.gammainc))
define_op("Igammac", infer=_binary_infer("Igammac"), kernel=_elementwise(special.gammaincc))
define_op("IgammaGradA", infer=_binary_infer("IgammaGradA"),
          kernel=_elementwise(igamma_grad_a))


def _infer_betainc(inputs, attrs):
    a, b, x = inputs
    check_dtype_in(a, _REAL, "Betainc", "a")
    for t, arg in ((b, "b"), (x, "x")):
        if t.dtype is not a.dtype:
            raise TypeError(f"Input '{arg}' of 'Betainc' Op has type {t.dtype.name} that does "
                            f"not match type {a.dtype.name} of argument 'a'.")
    shape = TensorShape(None)
    merged = None
    for t in inputs:
        if t.shape.ndims == 0:
            continue
        if merged is not None and not merged.is_compatible_with(t.shape):
            raise ValueError(f"Shapes of a, b and x are inconsistent: {a.shape} vs. {b.shape} "
                             f"vs. {x.shape}")
        merged = t.shape if merged is None else merged.merge_with(t.shape)
    shape = merged if merged is not None else TensorShape([])
    return [(a.dtype, shape)]


define_op("Betainc", infer=_infer_betainc, kernel=_elementwise(special.betainc))


def _log_density(a: Tensor, x: Tensor) -> Tensor:
    """log of d/dx P(a, x) = x^(a-1) exp(-x) / Gamma(a)."""
    return -x + math_ops.xlogy(a - 1, x) - math_ops.lgamma(a)


@RegisterGradient("Igamma")
def _igamma_grad(op, grad):
    a, x = op.inputs
    da = math_ops.reduce_to_shape_of(grad * apply_op("IgammaGradA", [a, x],
                                                     name="IgammaGradA"), a) \
        if gradient_needed(a) else None
    dx = math_ops.reduce_to_shape_of(grad * math_ops.exp(_log_density(a, x)), x) \
        if gradient_needed(x) else None
    return da, dx


@RegisterGradient("Igammac")
def _igammac_grad(op, grad):
    """Q = 1 - P: the gradients of ``Igamma``, negated."""
    da, dx = _igamma_grad(op, grad)
    return (None if da is None else math_ops.negative(da),
            None if dx is None else math_ops.negative(dx))


def _no_gradient(op, grad):
    """TF defines no gradient here; asking for one is its LookupError."""
    raise LookupError(f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                      "In general every operation must have an associated "
                      "`@tf.RegisterGradient` for correct autodiff, which this op is lacking. "
                      "If you want to pretend this operation is a constant in your program, "
                      "you may insert `tf.stop_gradient`.")


RegisterGradient("IgammaGradA")(_no_gradient)


@RegisterGradient("Zeta")
def _zeta_grad(op, grad):
    """d/dq zeta(x, q) = -x zeta(x + 1, q); TF defines none in ``x``."""
    x, q = op.inputs
    if not gradient_needed(q):
        return None, None
    return None, math_ops.reduce_to_shape_of(grad * -x * zeta(x + 1, q), q)


@RegisterGradient("Betainc")
def _betainc_grad(op, grad):
    """d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b); TF defines none in a and b."""
    a, b, x = op.inputs
    log_beta = math_ops.lgamma(a) + math_ops.lgamma(b) - math_ops.lgamma(a + b)
    density = math_ops.exp(xlog1py(b - 1, -x) + math_ops.xlogy(a - 1, x) - log_beta)
    return None, None, math_ops.reduce_to_shape_of(grad * density, x)


def _binary(op_type: str, x, y, names: tuple[str, str], name: Optional[str]) -> Tensor:
    x, y = binary_operands(x, y, op_type, names)
    return apply_op(op_type, [x, y], name=name or op_type)


@constructor("Zeta", "x", "q")
def zeta(x, q, name: Optional[str] = None) -> Tensor:
    """The Hurwitz zeta function: the sum over n >= 0 of ``(n + q) ** -x``."""
    return _binary("Zeta", x, q, ("x", "q"), name)


@constructor("Igamma", "a", "x")
def igamma(a, x, name: Optional[str] = None) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _binary("Igamma", a, x, ("a", "x"), name)


@constructor("Igammac", "a", "x")
def igammac(a, x, name: Optional[str] = None) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _binary("Igammac", a, x, ("a", "x"), name)


@constructor("Betainc", "a", "b", "x")
def betainc(a, b, x, name: Optional[str] = None) -> Tensor:
    """The regularized incomplete beta function I_x(a, b) (``a``, ``b``, ``x`` of one
    shape, or scalars)."""
    first = next((v for v in (a, b, x) if isinstance(v, Tensor)), None)
    a = as_tensor(a, name="a", dtype=None if first is None or isinstance(a, Tensor)
                  else first.dtype, like=first)
    b = as_tensor(b, name="b", dtype=None if isinstance(b, Tensor) else a.dtype, like=a)
    x = as_tensor(x, name="x", dtype=None if isinstance(x, Tensor) else a.dtype, like=a)
    return apply_op("Betainc", [a, b, x], name=name or "Betainc")


# ------------------------------------------------------------ Bessel functions
def _unary_infer(op_type: str):
    def infer(inputs, attrs):
        check_dtype_in(inputs[0], (dtypes.float16, dtypes.float32, dtypes.float64), op_type,
                       "x")
        return [(inputs[0].dtype, inputs[0].shape)]
    return infer


for _op_type, _fn in (("BesselI0", special.i0), ("BesselI0e", special.i0e),
                      ("BesselI1", special.i1), ("BesselI1e", special.i1e)):
    define_op(_op_type, infer=_unary_infer(_op_type), kernel=_elementwise(_fn))


@RegisterGradient("BesselI0")
def _bessel_i0_grad(op, grad):
    """I0' = I1."""
    return grad * bessel_i1(op.inputs[0])


@RegisterGradient("BesselI0e")
def _bessel_i0e_grad(op, grad):
    """(e^-|x| I0)' = I1e - sign(x) I0e."""
    x, y = op.inputs[0], op.outputs[0]
    return grad * (bessel_i1e(x) - math_ops.sign(x) * y)


def _over_x(y: Tensor, x: Tensor) -> Tensor:
    """I1(x) / x (and I1e(x) / x), 1/2 at x = 0 (the limit)."""
    safe = math_ops.select_v2(math_ops.equal(x, 0), ones_like(x), x)
    half = math_ops.cast(0.5, x.dtype) * ones_like(x)
    return math_ops.select_v2(math_ops.equal(x, 0), half, y / safe)


@RegisterGradient("BesselI1")
def _bessel_i1_grad(op, grad):
    """I1' = I0 - I1 / x."""
    x, y = op.inputs[0], op.outputs[0]
    return grad * (bessel_i0(x) - _over_x(y, x))


@RegisterGradient("BesselI1e")
def _bessel_i1e_grad(op, grad):
    """(e^-|x| I1)' = I0e - I1e (sign(x) + 1 / x)."""
    x, y = op.inputs[0], op.outputs[0]
    return grad * (bessel_i0e(x) - math_ops.sign(x) * y - _over_x(y, x))


def _unary(op_type: str, default_name: str, x, name: Optional[str]) -> Tensor:
    with name_scope(name, default_name, [x]):
        x = as_tensor(x, name="x")
        return apply_op(op_type, [x], name=op_type)


def bessel_i0(x, name: Optional[str] = None) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return _unary("BesselI0", "bessel_i0", x, name)


def bessel_i0e(x, name: Optional[str] = None) -> Tensor:
    """``exp(-|x|) * bessel_i0(x)``, finite for large ``|x|``."""
    return _unary("BesselI0e", "bessel_i0e", x, name)


def bessel_i1(x, name: Optional[str] = None) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return _unary("BesselI1", "bessel_i1", x, name)


def bessel_i1e(x, name: Optional[str] = None) -> Tensor:
    """``exp(-|x|) * bessel_i1(x)``, finite for large ``|x|``."""
    return _unary("BesselI1e", "bessel_i1e", x, name)


def erfcinv(x, name: Optional[str] = None) -> Tensor:
    """The inverse of ``erfc`` on (0, 2): ``-ndtri(x / 2) / sqrt(2)``."""
    with name_scope(name, "erfcinv", [x]):
        x = as_tensor(x, name="x")
        check_dtype_in(x, (dtypes.float32, dtypes.float64), "erfcinv", "x")
        half = math_ops.multiply(math_ops.cast(0.5, x.dtype), x)
        return math_ops.negative(math_ops.ndtri(half)) * math_ops.cast(np.sqrt(0.5), x.dtype)
