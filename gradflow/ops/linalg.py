"""Linear algebra ops: inverses, determinants, solves, decompositions, einsum, norms.

Every matrix op works on the last two dimensions and batches over the leading ones, as
in TensorFlow. Gradient rules are the standard matrix-calculus results (those TF's
``linalg_grad`` uses), written as compositions of public ops so they differentiate
again. Complex gradients follow TF's convention: for a real loss L, the gradient of a
complex input Z is the Z-shaped G with dL = Re tr(G^H dZ); e.g. for C = A @ B,
dA = G_C @ B^H.
"""
from __future__ import annotations

import contextlib
import functools
import string
from collections import Counter
from typing import Iterator, Optional

import numpy as np
import scipy.linalg

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (NUMERIC, apply_op, as_tensor, binary_operands, broadcast_shape,
                                 check_dtype_in, constructor, static_ints)

__all__ = [
    "matrix_transpose", "matrix_inverse", "matrix_determinant", "log_matrix_determinant",
    "cholesky", "cholesky_solve", "matrix_solve", "matrix_triangular_solve", "matrix_solve_ls",
    "qr", "svd", "self_adjoint_eig", "self_adjoint_eigvals", "trace", "einsum", "tensordot",
    "norm",
]

_MATRIX_TYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


# ------------------------------------------------------------------ shared helpers
def _matrix_dims(t: Tensor, op_type: str, square: bool = False) -> Optional[tuple]:
    """``t``'s static dims after checking it is a (batch of) matrices; None if rank unknown.

    With ``square``, a size known for one of the last two dimensions fills in the other.
    """
    dims = t.shape.as_tuple()
    if dims is None:
        return None
    if len(dims) < 2:
        raise ValueError(f"Input {t.name} of {op_type} must be a matrix or a batch of "
                         f"matrices (rank >= 2), got shape {t.shape}")
    if not square:
        return dims
    rows, cols = dims[-2:]
    if None not in (rows, cols) and rows != cols:
        raise ValueError(f"Input {t.name} of {op_type} must be a square matrix or a batch "
                         f"of square matrices, got shape {t.shape} ({rows} x {cols})")
    size = rows if rows is not None else cols
    return dims[:-2] + (size, size)


def _infer_square(op_type: str):
    """Infer function of ops whose one output is shaped like their square-matrix input."""
    def infer(inputs, attrs):
        x = inputs[0]
        dims = _matrix_dims(x, op_type, square=True)
        return [(x.dtype, TensorShape(None) if dims is None else TensorShape(dims))]
    return infer


def _matrix_operand(value, op_type: str, arg: str = "input", like=None) -> Tensor:
    """Converts an input of a matrix op and checks its dtype."""
    t = as_tensor(value, name=arg, like=like)
    check_dtype_in(t, _MATRIX_TYPES, op_type, arg)
    return t


def _check_same_dtype(a: Tensor, b: Tensor, op_type: str) -> None:
    if a.dtype is not b.dtype:
        raise TypeError(f"Inputs of {op_type} must have one dtype: {a.name} is "
                        f"{a.dtype.name} but {b.name} is {b.dtype.name}")


def _np_adjoint(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


@contextlib.contextmanager
def _lapack_failure(message: str) -> Iterator[None]:
    """Turns a LAPACK failure inside a kernel into a ValueError with TF's message."""
    try:
        yield
    except np.linalg.LinAlgError as err:
        raise ValueError(message) from err


def _static_matrix_size(x: Tensor, what: str) -> tuple[int, int]:
    """The static (rows, cols) of ``x``; NotImplementedError when they are unknown."""
    dims = x.shape.as_tuple()
    if dims is None or len(dims) < 2 or None in dims[-2:]:
        raise NotImplementedError(f"{what} needs the matrix dimensions of {x.name} to be "
                                  f"known statically, got shape {x.shape}")
    return dims[-2], dims[-1]


def _triangle(x: Tensor, lower: bool) -> Tensor:
    """The lower (or upper) triangle of each matrix in ``x``, zeros elsewhere."""
    return array.matrix_band_part(x, -1, 0) if lower else array.matrix_band_part(x, 0, -1)


def _lower_half_diagonal(x: Tensor) -> Tensor:
    """The lower triangle of ``x`` with its diagonal halved (the Cholesky/eigh 'Phi')."""
    lower = _triangle(x, lower=True)
    return array.matrix_set_diag(lower, 0.5 * array.matrix_diag_part(lower))


def _dim(x: Tensor, axis: int):
    """The size of ``x``'s dimension ``axis``: an int when static, else an int32 tensor."""
    dims = x.shape.as_tuple()
    static = None if dims is None else dims[axis]
    return static if static is not None else array.shape(x)[axis]


def _row(v: Tensor) -> Tensor:
    """``v[..., None, :]``: multiplying a matrix by it scales columns, like ``@ diag(v)``."""
    return array.expand_dims(v, -2)


def _col(v: Tensor) -> Tensor:
    """``v[..., :, None]``: multiplying a matrix by it scales rows, like ``diag(v) @``."""
    return array.expand_dims(v, -1)


def _mm(a: Tensor, b: Tensor, adjoint_a: bool = False, adjoint_b: bool = False) -> Tensor:
    return math_ops.matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


def _conj(t: Tensor) -> Tensor:
    return math_ops.conj(t) if t.dtype.is_complex else t


def _real_part(t: Tensor) -> Tensor:
    """The real part of ``t`` in ``t``'s own dtype (``t`` itself when real)."""
    if not t.dtype.is_complex:
        return t
    return math_ops.cast(math_ops.cast(t, t.dtype.real_dtype), t.dtype)


def _safe_reciprocal(x: Tensor, epsilon: float = 1e-20) -> Tensor:
    """``1 / x`` that is 0 at 0 (and finite near it): ``x / (x^2 + eps)``."""
    return x / (x * x + epsilon)


def _unbroadcast(grad: Optional[Tensor], x: Tensor) -> Optional[Tensor]:
    return None if grad is None else math_ops.reduce_to_shape_of(grad, x)


# ------------------------------------------------------------------ transposes
@constructor("matrix_transpose", "a", "conjugate", single_op=False)
def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swaps the last two dimensions of ``a`` (conjugating too when ``conjugate``)."""
    x = convert_to_tensor(a, name="a")
    ndims = x.shape.ndims
    if ndims is None:
        rank = array.rank(x)
        perm = array.concat([math_ops.range(rank - 2), array.stack([rank - 1, rank - 2])], 0)
    elif ndims < 2:
        raise ValueError(f"Argument 'a' should be a (batch) matrix with rank >= 2. Found: "
                         f"{x.name} with shape {x.shape}")
    else:
        perm = list(range(ndims - 2)) + [ndims - 1, ndims - 2]
    return array.transpose(x, perm, name=name, conjugate=conjugate)


@constructor("adjoint", "matrix", single_op=False)
def adjoint(matrix, name: Optional[str] = None) -> Tensor:
    """The conjugate transpose of each matrix in ``matrix``."""
    return matrix_transpose(matrix, name=name or "adjoint", conjugate=True)


# ----------------------------------------------------------------- inverse
def _inverse_kernel(x, *, adjoint):
    with _lapack_failure("Input is not invertible."):
        inverse = np.linalg.inv(x)
    return (_np_adjoint(inverse) if adjoint else inverse).astype(x.dtype, copy=False)


define_op("MatrixInverse", infer=_infer_square("MatrixInverse"), kernel=_inverse_kernel)


@RegisterGradient("MatrixInverse")
def _inverse_grad(op, grad):
    """Y = A^-1 gives dY = -Y dA Y, so dA = -Y^H G Y^H; for Y = A^-H it is -Y G^H Y."""
    y = op.outputs[0]
    if op.get_attr("adjoint"):
        return -_mm(y, _mm(grad, y, adjoint_a=True))
    return -_mm(y, _mm(grad, y, adjoint_b=True), adjoint_a=True)


@constructor("MatrixInverse", "input", "adjoint", single_op=False)
def matrix_inverse(input, adjoint: bool = False,  # noqa: A002 - TF's argument name
                   name: Optional[str] = None) -> Tensor:
    """The inverse of each square matrix in ``input`` (of its adjoint when ``adjoint``)."""
    x = _matrix_operand(input, "MatrixInverse")
    return apply_op("MatrixInverse", [x], name=name or "MatrixInverse", adjoint=bool(adjoint))


# ------------------------------------------------------------- determinants
def _infer_determinant(op_type: str, outputs: int):
    def infer(inputs, attrs):
        x = inputs[0]
        dims = _matrix_dims(x, op_type, square=True)
        batch = TensorShape(None) if dims is None else TensorShape.from_tuple(dims[:-2])
        return [(x.dtype, batch)] * outputs
    return infer


def _determinant_kernel(x):
    return np.asarray(np.linalg.det(x), dtype=x.dtype)


def _log_determinant_kernel(x):
    sign, log_abs = np.linalg.slogdet(x)
    return np.asarray(sign, dtype=x.dtype), np.asarray(log_abs, dtype=x.dtype)


define_op("MatrixDeterminant", infer=_infer_determinant("MatrixDeterminant", 1),
          kernel=_determinant_kernel)
define_op("LogMatrixDeterminant", infer=_infer_determinant("LogMatrixDeterminant", 2),
          kernel=_log_determinant_kernel)


def _per_matrix(scale: Tensor) -> Tensor:
    """A batch of scalars shaped to multiply a batch of matrices."""
    return _col(_col(scale))


@RegisterGradient("MatrixDeterminant")
def _determinant_grad(op, grad):
    """d det(A) = det(A) tr(A^-1 dA), so dA = g conj(det A) A^-H."""
    a, det = op.inputs[0], op.outputs[0]
    return _per_matrix(grad * _conj(det)) * matrix_inverse(a, adjoint=True)


@RegisterGradient("LogMatrixDeterminant")
def _log_determinant_grad(op, grad_sign, grad_log_abs):
    """d log|det A| = Re tr(A^-1 dA), so dA = Re(g) A^-H; the sign has no gradient."""
    a = op.inputs[0]
    return _per_matrix(_real_part(grad_log_abs)) * matrix_inverse(a, adjoint=True)


@constructor("MatrixDeterminant", "input", single_op=False)
def matrix_determinant(input,  # noqa: A002 - TF's argument name
                       name: Optional[str] = None) -> Tensor:
    """The determinant of each square matrix in ``input``."""
    x = _matrix_operand(input, "MatrixDeterminant")
    return apply_op("MatrixDeterminant", [x], name=name or "MatrixDeterminant")


@constructor("LogMatrixDeterminant", "input", single_op=False)
def log_matrix_determinant(input,  # noqa: A002 - TF's argument name
                           name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """``(sign, log|det|)`` of each square matrix: the determinant without overflow."""
    x = _matrix_operand(input, "LogMatrixDeterminant")
    sign, log_abs = apply_op("LogMatrixDeterminant", [x],
                             name=name or "LogMatrixDeterminant")
    return sign, log_abs


@constructor("logdet", "matrix", single_op=False)
def logdet(matrix, name: Optional[str] = None) -> Tensor:
    """log(det(A)) of Hermitian positive definite matrices, through their Cholesky factor."""
    with name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        diagonal = math_ops.cast(array.matrix_diag_part(chol), chol.dtype.real_dtype)
        log_diagonal = math_ops.log(diagonal)
        return 2.0 * math_ops.reduce_sum(log_diagonal, -1)


# -------------------------------------------------------------------- cholesky
def _cholesky_kernel(x):
    with _lapack_failure("Cholesky decomposition was not successful. The input might "
                         "not be valid."):
        return np.linalg.cholesky(x).astype(x.dtype, copy=False)


define_op("Cholesky", infer=_infer_square("Cholesky"), kernel=_cholesky_kernel)


@RegisterGradient("Cholesky")
def _cholesky_grad(op, grad):
    """For A = L L^H: dA = sym(L^-H Phi(L^H G) L^-1), Phi = lower triangle, half diagonal.

    The kernel reads only the lower triangle, but A is taken to be Hermitian, so the
    gradient is spread symmetrically over both triangles, as in TF.
    """
    chol = op.outputs[0]
    middle = _lower_half_diagonal(_mm(chol, grad, adjoint_a=True))
    left = matrix_triangular_solve(chol, middle, adjoint=True)
    product_h = matrix_triangular_solve(chol, adjoint(left), adjoint=True)
    return 0.5 * (product_h + adjoint(product_h))


@constructor("Cholesky", "input", single_op=False)
def cholesky(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The lower-triangular L with L L^H = A, for Hermitian positive definite A.

    Only the lower triangle of ``input`` is read.
    """
    x = _matrix_operand(input, "Cholesky")
    return apply_op("Cholesky", [x], name=name or "Cholesky")


@constructor("cholesky_solve", "chol", "rhs", single_op=False)
def cholesky_solve(chol, rhs, name: Optional[str] = None) -> Tensor:
    """Solves A X = rhs given the Cholesky factor ``chol`` of A: two triangular solves."""
    with name_scope(name, "cholesky_solve", [chol, rhs]):
        half = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
        return matrix_triangular_solve(chol, half, lower=True, adjoint=True)


# ---------------------------------------------------------------------- solves
def _infer_solve(op_type: str):
    def infer(inputs, attrs):
        a, b = inputs[:2]
        _check_same_dtype(a, b, op_type)
        dims_a = _matrix_dims(a, op_type, square=True)
        dims_b = _matrix_dims(b, op_type)
        if dims_a is None or dims_b is None:
            return [(a.dtype, TensorShape(None))]
        if None not in (dims_a[-1], dims_b[-2]) and dims_a[-1] != dims_b[-2]:
            raise ValueError(f"{op_type}: the matrix {a.name} (shape {a.shape}) and the "
                             f"right-hand side {b.name} (shape {b.shape}) must have the "
                             f"same number of rows")
        rows = dims_a[-1] if dims_a[-1] is not None else dims_b[-2]
        batch = broadcast_shape(TensorShape(dims_a[:-2]), TensorShape(dims_b[:-2]),
                                f"the batch dimensions of {op_type}")
        return [(a.dtype, batch.concatenate([rows, dims_b[-1]]))]
    return infer


def _solve_kernel(matrix, rhs, *, adjoint):
    with _lapack_failure("Input matrix is not invertible."):
        solution = np.linalg.solve(_np_adjoint(matrix) if adjoint else matrix, rhs)
    return solution.astype(matrix.dtype, copy=False)


def _triangular_solve_kernel(matrix, rhs, *, lower, adjoint):
    triangle = np.tril(matrix) if lower else np.triu(matrix)
    return _solve_kernel(triangle, rhs, adjoint=adjoint)


define_op("MatrixSolve", infer=_infer_solve("MatrixSolve"), kernel=_solve_kernel)
define_op("MatrixTriangularSolve", infer=_infer_solve("MatrixTriangularSolve"),
          kernel=_triangular_solve_kernel)


def _solve_grads(op, grad, solver, structure=lambda t: t):
    """For X = A^-1 B: dB = A^-H G and dA = -dB X^H (-X dB^H when A enters as A^H)."""
    a, b = op.inputs
    x = op.outputs[0]
    flipped = op.get_attr("adjoint")
    grad_b = solver(a, grad, not flipped)
    grad_a = None
    if gradient_needed(a):
        grad_a = structure(-_mm(x, grad_b, adjoint_b=True) if flipped
                           else -_mm(grad_b, x, adjoint_b=True))
    return (_unbroadcast(grad_a, a),
            _unbroadcast(grad_b, b) if gradient_needed(b) else None)


@RegisterGradient("MatrixSolve")
def _solve_grad(op, grad):
    return _solve_grads(op, grad, lambda a, g, flip: matrix_solve(a, g, adjoint=flip))


@RegisterGradient("MatrixTriangularSolve")
def _triangular_solve_grad(op, grad):
    """As for MatrixSolve, keeping only the triangle the kernel reads."""
    lower = op.get_attr("lower")
    return _solve_grads(
        op, grad,
        lambda a, g, flip: matrix_triangular_solve(a, g, lower=lower, adjoint=flip),
        lambda grad_a: _triangle(grad_a, lower))


def _solve_operands(matrix, rhs, op_type: str) -> tuple[Tensor, Tensor]:
    """The (matrix, rhs) pair of a solve; a non-tensor rhs takes the matrix's dtype."""
    a = _matrix_operand(matrix, op_type, "matrix")
    if not isinstance(rhs, Tensor):
        rhs = as_tensor(rhs, dtype=a.dtype, name="rhs", like=a)
    return a, _matrix_operand(rhs, op_type, "rhs")


@constructor("MatrixSolve", "matrix", "rhs", "adjoint", single_op=False)
def matrix_solve(matrix, rhs, adjoint: bool = False, name: Optional[str] = None) -> Tensor:
    """Solves ``matrix @ X = rhs`` (``adjoint(matrix) @ X = rhs`` when ``adjoint``)."""
    a, b = _solve_operands(matrix, rhs, "MatrixSolve")
    return apply_op("MatrixSolve", [a, b], name=name or "MatrixSolve", adjoint=bool(adjoint))


@constructor("MatrixTriangularSolve", "matrix", "rhs", "lower", "adjoint", single_op=False)
def matrix_triangular_solve(matrix, rhs, lower: bool = True, adjoint: bool = False,
                            name: Optional[str] = None) -> Tensor:
    """Solves a triangular system; only the lower (or upper) triangle of ``matrix`` is read."""
    a, b = _solve_operands(matrix, rhs, "MatrixTriangularSolve")
    return apply_op("MatrixTriangularSolve", [a, b], name=name or "MatrixTriangularSolve",
                    lower=bool(lower), adjoint=bool(adjoint))


# --------------------------------------------------------------- least squares
def _infer_lstsq(inputs, attrs):
    a, b, regularizer = inputs
    _check_same_dtype(a, b, "MatrixSolveLs")
    if regularizer.shape.ndims not in (None, 0):
        raise ValueError(f"l2_regularizer of MatrixSolveLs must be a scalar, got "
                         f"{regularizer.name} with shape {regularizer.shape}")
    dims_a, dims_b = _matrix_dims(a, "MatrixSolveLs"), _matrix_dims(b, "MatrixSolveLs")
    if dims_a is None or dims_b is None:
        return [(a.dtype, TensorShape(None))]
    same_rows = TensorShape(dims_a[:-1]).is_compatible_with(TensorShape(dims_b[:-1]))
    if not same_rows:
        raise ValueError(f"MatrixSolveLs: the matrix {a.name} (shape {a.shape}) and the "
                         f"right-hand side {b.name} (shape {b.shape}) must have the same "
                         f"batch dimensions and number of rows")
    batch = TensorShape(dims_a[:-2]).merge_with(TensorShape(dims_b[:-2]))
    return [(a.dtype, batch.concatenate([dims_a[-1], dims_b[-1]]))]


def _lstsq_kernel(matrix, rhs, l2_regularizer):
    """Minimises |A x - b|^2 + l2 |x|^2 per batch entry, as one augmented least squares."""
    cols = matrix.shape[-1]
    if l2_regularizer > 0:
        batch = matrix.shape[:-2]
        damping = np.broadcast_to(np.sqrt(l2_regularizer) * np.eye(cols, dtype=matrix.dtype),
                                  batch + (cols, cols))
        matrix = np.concatenate([matrix, damping], axis=-2)
        rhs = np.concatenate([rhs, np.zeros(batch + (cols, rhs.shape[-1]), rhs.dtype)], -2)
    flat_a = matrix.reshape((-1,) + matrix.shape[-2:])
    flat_b = rhs.reshape((-1,) + rhs.shape[-2:])
    solutions = [np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(flat_a, flat_b)]
    out_shape = matrix.shape[:-2] + (cols, rhs.shape[-1])
    if not solutions:
        return np.zeros(out_shape, dtype=matrix.dtype)
    return np.stack(solutions).reshape(out_shape).astype(matrix.dtype, copy=False)


define_op("MatrixSolveLs", infer=_infer_lstsq, kernel=_lstsq_kernel)


@RegisterGradient("MatrixSolveLs")
def _lstsq_grad(op, grad):
    raise ValueError(f"Gradient not defined for fast=False (op '{op.name}'); use "
                     "matrix_solve_ls(..., fast=True) to differentiate a least-squares solve")


def _regularized_gramian(a: Tensor, l2_regularizer, gram_of_columns: bool) -> Tensor:
    """A^H A + l2 I (or A A^H + l2 I), the normal-equations matrix."""
    gram = _mm(a, a, adjoint_a=True) if gram_of_columns else _mm(a, a, adjoint_b=True)
    if isinstance(l2_regularizer, (int, float)) and l2_regularizer == 0:
        return gram
    regularizer = math_ops.cast(as_tensor(l2_regularizer, like=a), a.dtype)
    return gram + regularizer * array.eye(_dim(gram, -1), dtype=a.dtype)


@constructor("MatrixSolveLs", "matrix", "rhs", "l2_regularizer", "fast", single_op=False)
def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast: bool = True,
                    name: Optional[str] = None) -> Tensor:
    """The least-squares solution X of ``matrix @ X = rhs`` (minimum norm when wide).

    ``fast=True`` solves the regularized normal equations through a Cholesky
    factorization (differentiable; needs static matrix sizes and a full-rank matrix);
    ``fast=False`` uses an orthogonal factorization, robust to rank deficiency, and
    has no gradient, as in TF.
    """
    a, b = _solve_operands(matrix, rhs, "MatrixSolveLs")
    if not fast:
        regularizer = math_ops.cast(as_tensor(l2_regularizer, like=a), dtypes.float64)
        return apply_op("MatrixSolveLs", [a, b, regularizer], name=name or "MatrixSolveLs")
    with name_scope(name, "matrix_solve_ls", [a, b]):
        rows, cols = _static_matrix_size(a, "matrix_solve_ls with fast=True")
        if rows >= cols:
            chol = cholesky(_regularized_gramian(a, l2_regularizer, gram_of_columns=True))
            return cholesky_solve(chol, _mm(a, b, adjoint_a=True))
        chol = cholesky(_regularized_gramian(a, l2_regularizer, gram_of_columns=False))
        return _mm(a, cholesky_solve(chol, b), adjoint_a=True)


# -------------------------------------------------------------------------- QR
def _infer_qr(inputs, attrs):
    x = inputs[0]
    dims = _matrix_dims(x, "Qr")
    if dims is None:
        return [(x.dtype, TensorShape(None))] * 2
    batch, (rows, cols) = dims[:-2], dims[-2:]
    if attrs["full_matrices"]:
        inner = rows
    else:
        inner = None if None in (rows, cols) else min(rows, cols)
    return [(x.dtype, TensorShape(batch + (rows, inner))),
            (x.dtype, TensorShape(batch + (inner, cols)))]


def _qr_kernel(x, *, full_matrices):
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)


define_op("Qr", infer=_infer_qr, kernel=_qr_kernel)


def _times_inverse_r_adjoint(x: Tensor, r: Tensor) -> Tensor:
    """``x @ R^-H`` for upper-triangular R, by a triangular solve."""
    return adjoint(matrix_triangular_solve(r, adjoint(x), lower=False))


def _qr_grad_square_or_tall(q: Tensor, r: Tensor, grad_q: Tensor, grad_r: Tensor) -> Tensor:
    """The reduced QR gradient for rows >= cols (R square), after Liao et al. (2019)."""
    q_dq = _mm(q, grad_q, adjoint_a=True)
    r_dr = _mm(r, grad_r, adjoint_b=True)
    low = _triangle(q_dq - adjoint(q_dq) + r_dr - adjoint(r_dr), lower=True)
    grad = (_mm(q, grad_r + _times_inverse_r_adjoint(low, r))
            + _times_inverse_r_adjoint(grad_q - _mm(q, q_dq), r))
    if q.dtype.is_complex:
        # The imaginary part of diag(R dR^H - dQ^H Q) is not fixed by the real formula.
        diagonal = array.matrix_diag_part(r_dr - adjoint(q_dq))
        imaginary = array.matrix_diag(diagonal - _real_part(diagonal))
        grad = grad - _times_inverse_r_adjoint(_mm(q, imaginary), r)
    return grad


@RegisterGradient("Qr")
def _qr_grad(op, grad_q, grad_r):
    """Square and tall inputs directly; wide ones [X | Y] through the square part X."""
    q, r = op.outputs
    a = op.inputs[0]
    rows, cols = _static_matrix_size(a, "The gradient of qr")
    if rows > cols and op.get_attr("full_matrices"):
        raise NotImplementedError(f"The gradient of qr is not implemented for "
                                  f"full_matrices=True when rows > cols (op '{op.name}', "
                                  f"input shape {a.shape})")
    if rows >= cols:
        return _qr_grad_square_or_tall(q, r, grad_q, grad_r)
    rest, square_r = a[..., :, rows:], r[..., :, :rows]
    grad_square_r, grad_rest_r = grad_r[..., :, :rows], grad_r[..., :, rows:]
    grad_square = _qr_grad_square_or_tall(
        q, square_r, grad_q + _mm(rest, grad_rest_r, adjoint_b=True), grad_square_r)
    return array.concat([grad_square, _mm(q, grad_rest_r)], -1)


@constructor("Qr", "input", "full_matrices", single_op=False)
def qr(input, full_matrices: bool = False,  # noqa: A002 - TF's argument name
       name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """``(q, r)`` with ``input = q @ r``, q with orthonormal columns, r upper triangular."""
    x = _matrix_operand(input, "Qr")
    q, r = apply_op("Qr", [x], name=name or "Qr", full_matrices=bool(full_matrices))
    return q, r


# ------------------------------------------------------------------------- SVD
def _infer_svd(inputs, attrs):
    x = inputs[0]
    dims = _matrix_dims(x, "Svd")
    real = x.dtype.real_dtype
    if dims is None:
        unknown = TensorShape(None)
        return [(real, unknown), (x.dtype, unknown), (x.dtype, unknown)]
    batch, (rows, cols) = dims[:-2], dims[-2:]
    size = None if None in (rows, cols) else min(rows, cols)
    values = (real, TensorShape(batch + (size,)))
    if not attrs["compute_uv"]:
        return [values, (x.dtype, TensorShape([0])), (x.dtype, TensorShape([0]))]
    u_cols, v_cols = (rows, cols) if attrs["full_matrices"] else (size, size)
    return [values, (x.dtype, TensorShape(batch + (rows, u_cols))),
            (x.dtype, TensorShape(batch + (cols, v_cols)))]


def _svd_kernel(x, *, compute_uv, full_matrices):
    with _lapack_failure("SVD did not converge."):
        if not compute_uv:
            empty = np.zeros((0,), dtype=x.dtype)
            return np.linalg.svd(x, compute_uv=False), empty, empty
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return s, u.astype(x.dtype, copy=False), _np_adjoint(vh).astype(x.dtype, copy=False)


define_op("Svd", infer=_infer_svd, kernel=_svd_kernel)


def _svd_grad_wide(s, u, v, grad_s, grad_u, grad_v, full_matrices: bool) -> Tensor:
    """Gradient of A = U diag(s) V^H for rows m <= cols n (Townsend 2016, Giles 2008)."""
    m = _static_matrix_size(u, "The gradient of svd")[0]
    n = _static_matrix_size(v, "The gradient of svd")[0]
    v1, grad_v1 = (v[..., :, :m], grad_v[..., :, :m]) if full_matrices and n > m else (v, grad_v)
    squares = s * s
    f = _safe_reciprocal(_row(squares) - _col(squares))
    f_u = f * _mm(u, grad_u, adjoint_a=True)
    v_gv = _mm(v1, grad_v1, adjoint_a=True)
    f_v = f * v_gv
    inner = (f_u + adjoint(f_u)) * _row(s) + _col(s) * (f_v + adjoint(f_v))
    grad = _mm(u * _row(grad_s) + _mm(u, inner), v1, adjoint_b=True)
    inverse_s = _safe_reciprocal(s)
    if m < n:
        grad_v1_h = adjoint(grad_v1)
        outside = grad_v1_h - _mm(_mm(grad_v1_h, v1), v1, adjoint_b=True)
        if full_matrices:
            v2, grad_v2 = v[..., :, m:], grad_v[..., :, m:]
            outside = outside - _mm(_mm(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
        grad = grad + _mm(u * _row(inverse_s), outside)
    if s.dtype.is_complex:
        # The phase freedom of each singular pair leaves Im(diag(V^H dV)) to fix.
        phase = array.matrix_diag_part(v_gv)
        grad = grad + _mm(u * _row(0.5 * inverse_s * (_conj(phase) - phase)), v1,
                          adjoint_b=True)
    return grad


@RegisterGradient("Svd")
def _svd_grad(op, grad_s, grad_u, grad_v):
    """Needs distinct non-zero singular values (the vectors are not unique otherwise)."""
    a = op.inputs[0]
    grad_s = math_ops.cast(grad_s, a.dtype)
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, full_matrices=False)
        return _mm(u * _row(grad_s), v, adjoint_b=True)
    s, u, v = op.outputs
    s = math_ops.cast(s, a.dtype)
    rows, cols = _static_matrix_size(a, "The gradient of svd")
    full = op.get_attr("full_matrices")
    if full and abs(rows - cols) > 1:
        raise NotImplementedError(f"The gradient of svd is not implemented for "
                                  f"full_matrices=True when the matrix dimensions differ by "
                                  f"more than 1 (op '{op.name}', input shape {a.shape})")
    if rows <= cols:
        return _svd_grad_wide(s, u, v, grad_s, grad_u, grad_v, full)
    # A^H = V diag(s) U^H is wide: differentiate that and take the adjoint.
    return adjoint(_svd_grad_wide(s, v, u, grad_s, grad_v, grad_u, full))


@constructor("Svd", "tensor", "full_matrices", "compute_uv", single_op=False)
def svd(tensor, full_matrices: bool = False, compute_uv: bool = True,
        name: Optional[str] = None):
    """Singular values ``s`` (descending, real), and ``u``, ``v`` with A = U diag(s) V^H.

    Returns ``(s, u, v)`` in TF's order when ``compute_uv``, else ``s`` alone.
    """
    x = _matrix_operand(tensor, "Svd", "tensor")
    s, u, v = apply_op("Svd", [x], name=name or "Svd", compute_uv=bool(compute_uv),
                       full_matrices=bool(full_matrices))
    return (s, u, v) if compute_uv else s


# ---------------------------------------------------------- Hermitian eigensystems
def _infer_eigh(inputs, attrs):
    x = inputs[0]
    dims = _matrix_dims(x, "SelfAdjointEigV2", square=True)
    if dims is None:
        return [(x.dtype, TensorShape(None))] * 2
    size = dims[-1]
    values = (x.dtype, TensorShape(dims[:-2] + (size,)))
    vectors = TensorShape(dims[:-2] + (size, size)) if attrs["compute_v"] else TensorShape([0])
    return [values, (x.dtype, vectors)]


def _eigh_kernel(x, *, compute_v):
    with _lapack_failure("Self-adjoint eigen decomposition was not successful. The "
                         "input might not be valid."):
        if compute_v:
            values, vectors = np.linalg.eigh(x, UPLO="L")
        else:
            values, vectors = np.linalg.eigvalsh(x, UPLO="L"), np.zeros((0,), x.dtype)
    return values.astype(x.dtype), vectors.astype(x.dtype, copy=False)


define_op("SelfAdjointEigV2", infer=_infer_eigh, kernel=_eigh_kernel)


@RegisterGradient("SelfAdjointEigV2")
def _eigh_grad(op, grad_e, grad_v):
    """M = V (diag(g_e) + F * V^H g_V) V^H with F_ij = 1/(e_j - e_i); eigenvalues distinct.

    The kernel reads only the lower triangle, so the gradient is Phi(M + M^H). The
    eigenvalues are real even when stored as complex, so only Re(g_e) matters.
    """
    e = op.outputs[0]
    grad_e = _real_part(grad_e)
    if op.get_attr("compute_v"):
        v = op.outputs[1]
        f = _safe_reciprocal(_row(e) - _col(e))
        scaled = v * _row(grad_e) + _mm(v, f * _mm(v, grad_v, adjoint_a=True))
    else:
        _, v = self_adjoint_eig(op.inputs[0])
        scaled = v * _row(grad_e)
    middle = _mm(scaled, v, adjoint_b=True)
    return _lower_half_diagonal(middle + adjoint(middle))


@constructor("SelfAdjointEigV2", "tensor", single_op=False)
def self_adjoint_eig(tensor, name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """``(e, v)``: ascending eigenvalues and eigenvectors (columns) of Hermitian matrices.

    Only the lower triangle is read.
    """
    x = _matrix_operand(tensor, "SelfAdjointEigV2", "tensor")
    e, v = apply_op("SelfAdjointEigV2", [x], name=name or "SelfAdjointEigV2", compute_v=True)
    return e, v


@constructor("SelfAdjointEigV2", "tensor", single_op=False)
def self_adjoint_eigvals(tensor, name: Optional[str] = None) -> Tensor:
    """The ascending eigenvalues of Hermitian matrices (lower triangle read)."""
    x = _matrix_operand(tensor, "SelfAdjointEigV2", "tensor")
    e, _ = apply_op("SelfAdjointEigV2", [x], name=name or "SelfAdjointEigV2", compute_v=False)
    return e


# ------------------------------------------------------------------ matrix exponential
define_op("MatrixExponential", infer=_infer_square("MatrixExponential"),
          kernel=lambda x: scipy.linalg.expm(x).astype(x.dtype, copy=False))


@RegisterGradient("MatrixExponential")
def _expm_grad(op, grad):
    """The Frechet derivative of expm at A^H in direction G.

    It is the top-right block of expm([[A^H, G], [0, A^H]]) (Mathias 1996), so the
    rule is one more MatrixExponential and differentiates again.
    """
    a_h = adjoint(op.inputs[0])
    size = _dim(a_h, -1)
    block = array.concat([array.concat([a_h, grad], -1),
                          array.concat([array.zeros_like(a_h), a_h], -1)], -2)
    return expm(block)[..., :size, size:]


@constructor("MatrixExponential", "input", single_op=False)
def expm(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The matrix exponential of each square matrix in ``input``."""
    x = _matrix_operand(input, "MatrixExponential")
    return apply_op("MatrixExponential", [x], name=name or "MatrixExponential")


# ----------------------------------------------------------------------- einsum
_ELLIPSIS = "."  # an equation's "..." as one character, so subscripts are plain strings
_LABELS = string.ascii_letters


class _Equation:
    """A parsed einsum equation: input subscripts and the explicit output subscripts."""

    def __init__(self, inputs: tuple[str, ...], output: str):
        self.inputs = inputs
        self.output = output

    def __str__(self) -> str:
        return ",".join(self.inputs).replace(_ELLIPSIS, "...") + "->" + \
            self.output.replace(_ELLIPSIS, "...")


def _parse_subscripts(text: str, equation: str) -> str:
    subscripts = text.replace("...", _ELLIPSIS)
    bad = set(subscripts) - set(_LABELS) - {_ELLIPSIS}
    if bad or subscripts.count(_ELLIPSIS) > 1:
        raise ValueError(f"Invalid einsum equation '{equation}': subscripts '{text}' must be "
                         "letters and at most one '...'")
    return subscripts


@functools.lru_cache(maxsize=256)
def _parse_equation(equation: str, num_inputs: int) -> _Equation:
    """Parses ``equation``; an implicit output is the once-used labels, sorted."""
    compact = equation.replace(" ", "")
    left, arrow, right = compact.partition("->")
    inputs = tuple(_parse_subscripts(part, equation) for part in left.split(","))
    if len(inputs) != num_inputs:
        raise ValueError(f"Invalid einsum equation '{equation}': it has {len(inputs)} input "
                         f"subscripts but {num_inputs} operands were given")
    counts = Counter(label for sub in inputs for label in sub if label != _ELLIPSIS)
    if arrow:
        output = _parse_subscripts(right, equation)
        repeated = [label for label, n in Counter(output).items() if n > 1]
        unknown = set(output) - set(counts) - {_ELLIPSIS}
        if repeated or unknown:
            raise ValueError(f"Invalid einsum equation '{equation}': output labels must be "
                             f"distinct and appear in an input")
    else:
        ellipsis = _ELLIPSIS if any(_ELLIPSIS in sub for sub in inputs) else ""
        output = ellipsis + "".join(sorted(label for label, n in counts.items() if n == 1))
    return _Equation(inputs, output)


def _split_dims(subscripts: str, dims: tuple) -> tuple[dict, Optional[tuple]]:
    """Pairs each label with its dims (a list: labels may repeat) and finds the ellipsis dims."""
    labels = subscripts.replace(_ELLIPSIS, "")
    if _ELLIPSIS not in subscripts:
        if len(dims) != len(labels):
            raise ValueError(f"has rank {len(dims)} but subscripts '{subscripts}'")
        ellipsis, labelled = (), dims
    else:
        if len(dims) < len(labels):
            raise ValueError(f"has rank {len(dims)}, less than its {len(labels)} labels")
        start = subscripts.index(_ELLIPSIS)
        end = len(dims) - (len(subscripts) - start - 1)
        ellipsis, labelled = dims[start:end], dims[:start] + dims[end:]
    sizes: dict = {}
    for label, size in zip(labels, labelled):
        sizes.setdefault(label, []).append(size)
    return sizes, ellipsis


def _merge_label_sizes(sizes: dict, found: dict, where: str) -> None:
    """Adds one operand's label sizes to ``sizes``; ValueError when two known sizes differ."""
    for label, operand_sizes in found.items():
        for size in operand_sizes:
            known = sizes.get(label)
            if known is not None and size is not None and known != size:
                raise ValueError(f"{where}: label '{label}' has size {known} elsewhere but "
                                 f"{size} here")
            sizes[label] = known if known is not None else size


def _infer_einsum(inputs, attrs):
    equation = _parse_equation(attrs["equation"], len(inputs))
    sizes: dict = {}
    ellipsis: Optional[TensorShape] = TensorShape([])
    for position, (subscripts, t) in enumerate(zip(equation.inputs, inputs)):
        if t.dtype is not inputs[0].dtype:
            raise TypeError(f"All einsum operands must have one dtype: {inputs[0].name} is "
                            f"{inputs[0].dtype.name} but {t.name} is {t.dtype.name}")
        dims = t.shape.as_tuple()
        if dims is None:
            ellipsis = None if _ELLIPSIS in subscripts else ellipsis
            continue
        where = f"einsum '{equation}': operand {position} ({t.name}, shape {t.shape})"
        try:
            operand_sizes, operand_ellipsis = _split_dims(subscripts, dims)
        except ValueError as err:
            raise ValueError(f"{where} {err}") from None
        if operand_ellipsis and _ELLIPSIS not in equation.output:
            raise ValueError(f"{where} has dimensions under '...' but the output has no "
                             "'...' to keep them")
        _merge_label_sizes(sizes, operand_sizes, where)
        if ellipsis is not None:
            ellipsis = broadcast_shape(ellipsis, TensorShape(operand_ellipsis),
                                       f"the '...' dimensions of einsum '{equation}'")
    if ellipsis is None and _ELLIPSIS in equation.output:
        return [(inputs[0].dtype, TensorShape(None))]
    out: list = []
    for label in equation.output:
        out.extend(ellipsis.as_tuple() if label == _ELLIPSIS else [sizes.get(label)])
    return [(inputs[0].dtype, TensorShape(out))]


def _einsum_kernel(*operands, equation):
    return np.asarray(np.einsum(equation, *operands), dtype=operands[0].dtype)


define_op("Einsum", infer=_infer_einsum, kernel=_einsum_kernel)


def _label_axis(subscripts: str, index: int) -> int:
    """The axis of the label at ``index``: counted from the end after an ellipsis."""
    if _ELLIPSIS in subscripts and index > subscripts.index(_ELLIPSIS):
        return index - len(subscripts)
    return index


def _einsum_operand_grad(op, grad: Tensor, equation: _Equation, position: int) -> Tensor:
    """One einsum for operand ``position``: the output gradient contracted with the others.

    A label repeated in the operand (a diagonal) gets a fresh label tied to the first by
    an identity matrix; a label summed away in the forward pass (in no other operand
    nor the output) is broadcast back by a vector of ones.
    """
    x = op.inputs[position]
    subscripts = equation.inputs[position]
    operands = [grad] + [_conj(t) for i, t in enumerate(op.inputs) if i != position]
    operand_subscripts = [equation.output] + [s for i, s in enumerate(equation.inputs)
                                              if i != position]
    fresh = iter(label for label in _LABELS if label not in str(equation))
    target = ""
    for index, label in enumerate(subscripts):
        if label in target and label != _ELLIPSIS:
            twin = next(fresh)
            operands.append(array.eye(_dim(x, _label_axis(subscripts, index)), dtype=x.dtype))
            operand_subscripts.append(label + twin)
            label = twin
        target += label
    present = set("".join(operand_subscripts))
    if _ELLIPSIS in present and _ELLIPSIS not in target:
        target = _ELLIPSIS + target  # the other operands' '...' dims, summed below
    for index, label in enumerate(subscripts):
        if label not in present and label != _ELLIPSIS:
            operands.append(array.ones([_dim(x, _label_axis(subscripts, index))],
                                       dtype=x.dtype))
            operand_subscripts.append(label)
            present.add(label)
    grad_x = einsum(str(_Equation(tuple(operand_subscripts), target)), *operands)
    if _ELLIPSIS in target:
        grad_x = _sum_broadcast_ellipsis(grad_x, x, target.index(_ELLIPSIS), len(target) - 1)
    return grad_x


def _sum_broadcast_ellipsis(grad: Tensor, x: Tensor, start: int, labels: int) -> Tensor:
    """Sums ``grad`` over the '...' dimensions (from axis ``start``) ``x`` was broadcast in.

    ``x`` has ``labels`` labelled dimensions around its '...' ones (none if it has no '...').
    """
    if grad.shape.is_fully_defined() and x.shape.is_fully_defined():
        grad_dims, x_dims = grad.shape.as_tuple(), x.shape.as_tuple()
        if grad_dims == x_dims:
            return grad
        grad_ellipsis = grad_dims[start:len(grad_dims) - labels]
        x_ellipsis = x_dims[start:len(x_dims) - labels]
        padded = (None,) * (len(grad_ellipsis) - len(x_ellipsis)) + x_ellipsis
        axes = [start + i for i, (g, d) in enumerate(zip(grad_ellipsis, padded))
                if d is None or (d == 1 and g != 1)]
        return array.reshape(math_ops.reduce_sum(grad, axes), x_dims)
    grad_ellipsis = array.shape(grad)[start:array.rank(grad) - labels]
    x_ellipsis = array.shape(x)[start:array.rank(x) - labels]
    axes, _ = array.broadcast_gradient_args(x_ellipsis, grad_ellipsis)
    summed = math_ops.reduce_sum(grad, axes + start)
    return array.reshape(summed, array.shape_of_input(x))


@RegisterGradient("Einsum")
def _einsum_grad(op, grad):
    equation = _parse_equation(op.get_attr("equation"), len(op.inputs))
    return [_einsum_operand_grad(op, grad, equation, i) if gradient_needed(t) else None
            for i, t in enumerate(op.inputs)]


def einsum(equation: str, *inputs, **kwargs) -> Tensor:
    """Einstein summation over ``inputs`` as described by ``equation`` (NumPy's syntax).

    Supports any number of operands, repeated labels (diagonals), implicit outputs and
    '...' broadcasting. Accepts ``name`` as a keyword.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"invalid keyword arguments for this function: "
                        f"{', '.join(sorted(kwargs))}")
    if not isinstance(equation, str):
        raise TypeError(f"einsum equation must be a string, got {equation!r}")
    if not inputs:
        raise ValueError("einsum needs at least one operand")
    first = next((t for t in inputs if isinstance(t, Tensor)), None)
    dtype = None if first is None else first.dtype
    operands = [as_tensor(t, dtype=None if isinstance(t, Tensor) else dtype, like=first)
                for t in inputs]
    check_dtype_in(operands[0], NUMERIC, "Einsum", "inputs")
    parsed = _parse_equation(equation, len(operands))
    return apply_op("Einsum", operands, name=name or "einsum", equation=str(parsed))


# -------------------------------------------------------------- products built on einsum
def _tensordot_axes(axes, rank_a: int, rank_b: int) -> tuple[list[int], list[int]]:
    """Normalises ``axes`` (an int N, or a pair of axis lists) to two lists of axes."""
    if isinstance(axes, Tensor):
        values = static_ints(axes)
        if values is None:
            raise ValueError(f"tensordot needs 'axes' known at graph construction, got "
                             f"{axes.name}")
        axes = values[0] if axes.shape.ndims == 0 else np.reshape(values, (2, -1)).tolist()
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"'axes' must be at least 0, got {axes}.")
        if axes > min(rank_a, rank_b):
            raise ValueError(f"'axes' must not be larger than the number of dimensions of "
                             f"the tensors (ranks {rank_a} and {rank_b}), got {axes}.")
        return list(range(rank_a - axes, rank_a)), list(range(axes))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"'axes' must be an integer or have length 2, got {axes!r}.")
    pair = [[int(a)] if np.ndim(a) == 0 else [int(v) for v in a] for a in axes]
    if len(pair[0]) != len(pair[1]):
        raise ValueError(f"Different number of contraction axes `a` and `b`, "
                         f"{len(pair[0])} != {len(pair[1])}.")
    for axis_list, rank in zip(pair, (rank_a, rank_b)):
        if any(not -rank <= a < rank for a in axis_list):
            raise ValueError(f"tensordot axes {axis_list} out of range for rank {rank}")
    return [a % rank_a for a in pair[0]], [b % rank_b for b in pair[1]]


@constructor("Tensordot", "a", "b", "axes", single_op=False)
def tensordot(a, b, axes, name: Optional[str] = None) -> Tensor:
    """Contracts ``a``'s ``axes[0]`` with ``b``'s ``axes[1]`` (or a's last N with b's first N)."""
    x, y = binary_operands(a, b, "Tensordot")
    rank_a, rank_b = x.shape.ndims, y.shape.ndims
    if rank_a is None or rank_b is None:
        raise ValueError(f"tensordot needs operands of known rank, got {x.name} with shape "
                         f"{x.shape} and {y.name} with shape {y.shape}")
    axes_a, axes_b = _tensordot_axes(axes, rank_a, rank_b)
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError(f"tensordot axes must not repeat, got {axes_a} and {axes_b}")
    sub_a = _LABELS[:rank_a]
    spare = iter(_LABELS[rank_a:])
    sub_b = "".join(sub_a[axes_a[axes_b.index(j)]] if j in axes_b else next(spare)
                    for j in range(rank_b))
    dims_a, dims_b = x.shape.as_tuple(), y.shape.as_tuple()
    for i, j in zip(axes_a, axes_b):
        if None not in (dims_a[i], dims_b[j]) and dims_a[i] != dims_b[j]:
            raise ValueError(f"tensordot: dimension {i} of {x.name} (shape {x.shape}) and "
                             f"dimension {j} of {y.name} (shape {y.shape}) must be equal")
    output = "".join(sub_a[i] for i in range(rank_a) if i not in axes_a) + \
        "".join(sub_b[j] for j in range(rank_b) if j not in axes_b)
    return einsum(f"{sub_a},{sub_b}->{output}", x, y, name=name or "Tensordot")


@constructor("MatVec", "a", "b", "transpose_a", "adjoint_a", "a_is_sparse", "b_is_sparse",
             single_op=False)
def matvec(a, b, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: Optional[str] = None) -> Tensor:
    """Matrix-vector product ``a @ b`` over the last dimension of ``b``, batched."""
    with name_scope(name, "MatVec", [a, b]):
        x, y = binary_operands(a, b, "MatVec")
        product = math_ops.matmul(x, array.expand_dims(y, -1), transpose_a=transpose_a,
                                  adjoint_a=adjoint_a)
        return array.squeeze(product, -1)


@constructor("Trace", "x", single_op=False)
def trace(x, name: Optional[str] = None) -> Tensor:
    """The sum of the main diagonal of each matrix in ``x``."""
    with name_scope(name, "Trace", [x]):
        t = convert_to_tensor(x, name="x")
        _matrix_dims(t, "Trace")
        return math_ops.reduce_sum(array.matrix_diag_part(t), -1)


# ------------------------------------------------------------------------- norms
_VECTOR_NORMS = ("euclidean", 1, 2, np.inf)
_MATRIX_NORMS = ("euclidean", "fro", 1, 2, np.inf)


def _norm_axes(order, axis) -> tuple[Optional[tuple], bool]:
    """Validates norm's ``ord`` and ``axis``: returns the axes and whether it is a matrix norm."""
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique "
                             f"integers, got {axis}")
        if isinstance(order, bool) or order not in _MATRIX_NORMS:
            raise ValueError(f"'ord' must be a supported matrix norm in "
                             f"{list(_MATRIX_NORMS)}, got {order}")
        return tuple(axis), True
    if not (axis is None or isinstance(axis, int)):
        raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, "
                         f"got {axis}")
    positive_power = isinstance(order, (int, float)) and not isinstance(order, bool) and order > 0
    if not (positive_power or order == "euclidean"):
        raise ValueError(f"'ord' must be a supported vector norm, got {order}")
    return (None if axis is None else (axis,)), False


def _safe_sqrt(x: Tensor) -> Tensor:
    """sqrt of x >= 0 whose gradient at 0 is 0 rather than inf (hence NaN downstream)."""
    positive = math_ops.greater(x, 0.0)
    safe = math_ops.select_v2(positive, x, array.ones_like(x))
    return math_ops.select_v2(positive, math_ops.sqrt(safe), array.zeros_like(x))


def _spectral_norm(x: Tensor, axes: tuple) -> Tensor:
    """The largest singular value over ``axes``, with those axes kept as size 1."""
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"norm with ord=2 over two axes needs {x.name} of known rank")
    matrix_axes = [a % rank for a in axes]
    perm = [i for i in range(rank) if i not in matrix_axes] + matrix_axes
    largest = svd(array.transpose(x, perm), compute_uv=False)[..., :1]
    return array.transpose(array.expand_dims(largest, -1), np.argsort(perm).tolist())


def _norm_value(x: Tensor, order, axes: Optional[tuple], is_matrix: bool) -> Tensor:
    """The norm of ``x`` over ``axes`` (every axis when None), keeping them as size 1."""
    if order in ("euclidean", "fro") or (order == 2 and not is_matrix):
        squares = math_ops.square(math_ops.abs(x) if x.dtype.is_complex else x)
        return _safe_sqrt(math_ops.reduce_sum(squares, axes, keepdims=True))
    if order == 2:
        return _spectral_norm(x, axes)
    magnitude = math_ops.abs(x)
    if order == 1:
        column_sums = math_ops.reduce_sum(magnitude, None if axes is None else axes[0],
                                          keepdims=True)
        return math_ops.reduce_max(column_sums, axes[1], keepdims=True) if is_matrix \
            else column_sums
    if order == np.inf:
        if is_matrix:
            magnitude = math_ops.reduce_sum(magnitude, axes[1], keepdims=True)
        return math_ops.reduce_max(magnitude, None if axes is None else axes[0],
                                   keepdims=True)
    powered = math_ops.reduce_sum(math_ops.pow(magnitude, float(order)), axes, keepdims=True)
    return math_ops.pow(powered, 1.0 / order)


@constructor("norm", "tensor", "ord", "axis", "keepdims", "keep_dims", single_op=False)
def norm(tensor, ord="euclidean", axis=None, keepdims=None,  # noqa: A002 - TF's names
         name: Optional[str] = None, keep_dims=None) -> Tensor:
    """Vector norms (over all entries, or ``axis``) and matrix norms (``axis`` a pair).

    ``ord``: 'euclidean', 1, 2, np.inf or any p > 0 for vectors; 'fro'/'euclidean', 1,
    2 (largest singular value) or np.inf for matrices. The result is real for complex
    input. The Euclidean/Frobenius norm has gradient 0 at the zero tensor (a valid
    subgradient) instead of NaN.
    """
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes, is_matrix = _norm_axes(ord, axis)
    with name_scope(name, "norm", [tensor]):
        x = convert_to_tensor(tensor, name="tensor")
        check_dtype_in(x, _MATRIX_TYPES + (dtypes.float16, dtypes.bfloat16), "norm", "tensor")
        result = _norm_value(x, ord, axes, is_matrix)
        if keep:
            return result
        return array.squeeze(result, list(axes)) if axes is not None else \
            array.reshape(result, [])
