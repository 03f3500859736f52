"""``gf.sparse``: the SparseTensor ops under their ``tf.sparse`` names (names handed on)."""
from gradflow.framework.sparse_tensor import SparseTensor  # noqa: F401
from gradflow.ops.sparse_ops import (  # noqa: F401
    sparse_add as add, sparse_dense_matmul, sparse_dense_matmul as matmul,
    sparse_placeholder as placeholder, sparse_reduce_sum as reduce_sum,
    sparse_tensor_to_dense as to_dense)
