"""``gf.linalg``: the linear-algebra ops under their ``tf.linalg`` names."""
from gradflow.ops.array import diag as tensor_diag
from gradflow.ops.array import diag_part as tensor_diag_part
from gradflow.ops.array import eye
from gradflow.ops.array import matrix_band_part as band_part
from gradflow.ops.array import matrix_diag as diag
from gradflow.ops.array import matrix_diag_part as diag_part
from gradflow.ops.array import matrix_set_diag as set_diag
from gradflow.ops.linalg import (adjoint, cholesky, cholesky_solve, einsum, expm, logdet,
                                 matrix_transpose, matvec, norm, qr, svd, tensordot, trace)
from gradflow.ops.linalg import log_matrix_determinant as slogdet
from gradflow.ops.linalg import matrix_determinant as det
from gradflow.ops.linalg import matrix_inverse as inv
from gradflow.ops.linalg import matrix_solve as solve
from gradflow.ops.linalg import matrix_solve_ls as lstsq
from gradflow.ops.linalg import matrix_transpose as transpose
from gradflow.ops.linalg import matrix_triangular_solve as triangular_solve
from gradflow.ops.linalg import self_adjoint_eig as eigh
from gradflow.ops.linalg import self_adjoint_eigvals as eigvalsh
from gradflow.ops.clip import global_norm
from gradflow.ops.math import matmul

__all__ = [
    "adjoint", "band_part", "cholesky", "cholesky_solve", "det", "diag", "diag_part", "eigh",
    "eigvalsh", "einsum", "expm", "eye", "global_norm", "inv", "logdet", "lstsq", "matmul",
    "matrix_transpose", "matvec", "norm", "qr", "set_diag", "slogdet", "solve", "svd",
    "tensor_diag", "tensor_diag_part", "tensordot", "trace", "transpose", "triangular_solve",
]
from gradflow.ops.extra_math import cross  # noqa: F401
