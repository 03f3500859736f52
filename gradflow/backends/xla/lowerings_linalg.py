"""Lowerings of ``linalg`` and of the remaining elementwise math (see ``lowerings.py``).

Factorizations that fail on the NumPy backend (a singular matrix to invert or solve, a
Cholesky of a matrix that is not positive definite) give NaN or infinity under XLA;
their lowerings keep the kernels' errors through ``L.check``: where a result is not
finite but the input is, the run raises what the kernel raises. Decompositions whose
factors are unique only up to signs (QR, singular and eigen vectors) stay on NumPy.
"""
from __future__ import annotations

import numpy as np

from gradflow.backends.xla.lowerings import register

__all__ = ["SPECIAL_FUNCTIONS"]


def _adjoint(L, x):
    return L.jnp.conj(L.jnp.swapaxes(x, -1, -2))


def _check_finite(L, op, result, inputs: tuple) -> None:
    """The kernel's error where a result is not finite but its input matrix is."""
    axes = tuple(range(result.ndim - 2, result.ndim)) if result.ndim >= 2 else ()
    broke = ~L.jnp.all(L.jnp.isfinite(result), axis=axes)
    finite = L.jnp.all(L.jnp.isfinite(inputs[0]), axis=(-2, -1))
    L.check(op, broke & finite, inputs)


@register("MatrixInverse", checks=True)
def _inverse(L, op, x):
    inverse = L.jnp.linalg.inv(x)
    _check_finite(L, op, inverse, (x,))
    return _adjoint(L, inverse) if op._attrs.get("adjoint") else inverse


@register("Cholesky", checks=True)
def _cholesky(L, op, x):
    factor = L.jnp.linalg.cholesky(x)
    _check_finite(L, op, factor, (x,))
    return factor


@register("MatrixDeterminant")
def _determinant(L, op, x):
    return L.jnp.linalg.det(x)


@register("LogMatrixDeterminant")
def _log_determinant(L, op, x):
    sign, log_abs = L.jnp.linalg.slogdet(x)
    return sign.astype(x.dtype), log_abs.astype(x.dtype)


@register("MatrixSolve", checks=True)
def _solve(L, op, matrix, rhs):
    solution = L.jnp.linalg.solve(_adjoint(L, matrix) if op._attrs.get("adjoint") else matrix,
                                  rhs)
    _check_finite(L, op, solution, (matrix, rhs))
    return solution


@register("MatrixTriangularSolve", checks=True)
def _triangular_solve(L, op, matrix, rhs):
    lower = bool(op._attrs.get("lower", True))
    triangle = L.jnp.tril(matrix) if lower else L.jnp.triu(matrix)
    if op._attrs.get("adjoint"):
        triangle, lower = _adjoint(L, triangle), not lower
    solution = L.jax.scipy.linalg.solve_triangular(triangle, rhs, lower=lower)
    _check_finite(L, op, solution, (matrix, rhs))
    return solution


@register("MatrixExponential")
def _expm(L, op, x):
    return L.jax.scipy.linalg.expm(x)


# Eigenvectors and singular vectors are unique only up to signs (or phases), which
# JAX's factorizations choose otherwise than LAPACK's calls in the kernels: only the
# values lower, and decompositions returning vectors (and QR) stay on NumPy.
@register("SelfAdjointEigV2", accepts=lambda op: not op._attrs.get("compute_v", True))
def _eigvalsh(L, op, x):
    return L.jnp.linalg.eigvalsh(x, UPLO="L"), L.jnp.zeros((0,), x.dtype)


@register("Svd", accepts=lambda op: not op._attrs.get("compute_uv", True))
def _singular_values(L, op, x):
    empty = L.jnp.zeros((0,), x.dtype)
    return L.jnp.linalg.svd(x, compute_uv=False), empty, empty


@register("MatrixBandPart")
def _band_part(L, op, x, num_lower, num_upper):
    rows = L.jnp.arange(x.shape[-2])[:, None]
    cols = L.jnp.arange(x.shape[-1])[None, :]
    below, above = rows - cols, cols - rows
    keep = ((num_lower < 0) | (below <= num_lower)) & ((num_upper < 0) | (above <= num_upper))
    return L.jnp.where(keep, x, L.jnp.zeros_like(x))


@register("DiagPart")
def _diag_part(L, op, x):
    half = x.shape[:x.ndim // 2]
    n = int(np.prod(half))
    return L.jnp.reshape(L.jnp.diagonal(L.jnp.reshape(x, (n, n))), half)


@register("Diag")
def _diag(L, op, d):
    return L.jnp.reshape(L.jnp.diag(L.jnp.reshape(d, (-1,))), d.shape + d.shape)


@register("Cross")
def _cross(L, op, a, b):
    return L.jnp.cross(a, b)


# ------------------------------------------------------------------ elementwise
SPECIAL_FUNCTIONS = {"Erf": "erf", "Erfc": "erfc", "Lgamma": "gammaln", "Digamma": "digamma",
            "Erfinv": "erfinv", "Ndtri": "ndtri"}
_NUMPY = {"Acosh": "arccosh", "Asinh": "arcsinh", "Atanh": "arctanh", "Conj": "conj",
          "Real": "real", "Imag": "imag", "Angle": "angle", "ComplexAbs": "abs"}


def _special(name: str):
    return lambda L, op, x: getattr(L.jax.scipy.special, name)(x)


def _numpy(name: str):
    return lambda L, op, x: getattr(L.jnp, name)(x)


for _type, _name in SPECIAL_FUNCTIONS.items():
    register(_type)(_special(_name))
for _type, _name in _NUMPY.items():
    register(_type)(_numpy(_name))


@register("DivNoNan")
def _div_no_nan(L, op, x, y):
    zero = y == 0
    quotient = x / L.jnp.where(zero, L.jnp.ones_like(y), y)
    return L.jnp.where(zero, L.jnp.zeros_like(quotient), quotient)


@register("MulNoNan")
def _mul_no_nan(L, op, x, y):
    return L.jnp.where(y == 0, L.jnp.zeros_like(x * y), x * y)


@register("Xlogy")
def _xlogy(L, op, x, y):
    return L.jax.scipy.special.xlogy(x, y)


@register("Xlog1py")
def _xlog1py(L, op, x, y):
    return L.jax.scipy.special.xlog1py(x, y)


@register("Xdivy")
def _xdivy(L, op, x, y):
    return L.jnp.where(x == 0, L.jnp.zeros_like(x / y), x / y)


@register("TruncateDiv")
def _truncate_div(L, op, x, y):
    if L.jnp.issubdtype(x.dtype, L.jnp.integer):
        return L.lax.div(x, y)
    return L.jnp.trunc(x / y)


@register("TruncateMod")
def _truncate_mod(L, op, x, y):
    if L.jnp.issubdtype(x.dtype, L.jnp.integer):
        return L.lax.rem(x, y)
    return L.jnp.fmod(x, y)


@register("SigmoidCrossEntropyWithLogits")
def _sigmoid_xent(L, op, x, z):
    # max(x, 0) - x * z + log(1 + exp(-|x|)), TF's stable form
    return L.jnp.maximum(x, 0) - x * z + L.jnp.log1p(L.jnp.exp(-L.jnp.abs(x)))
