"""``gf.sparse``: the SparseTensor ops under their ``tf.sparse`` names (names handed on)."""
from gradflow.framework.sparse_tensor import SparseTensor  # noqa: F401
from gradflow.ops.sparse_ops import (  # noqa: F401
    sparse_add as add, sparse_dense_matmul, sparse_dense_matmul as matmul,
    sparse_placeholder as placeholder, sparse_reduce_sum as reduce_sum,
    sparse_tensor_to_dense as to_dense)
from gradflow.ops.sparse_more import (  # noqa: F401
    sparse_concat as concat, sparse_maximum as maximum, sparse_minimum as minimum,
    sparse_reorder as reorder, sparse_reshape as reshape, sparse_slice as slice,
    sparse_softmax as softmax, sparse_split as split)
from gradflow.ops.sparse_rows import (  # noqa: F401
    from_dense, sparse_expand_dims as expand_dims, sparse_eye as eye,
    sparse_fill_empty_rows as fill_empty_rows, sparse_merge as merge,
    sparse_reduce_max as reduce_max, sparse_reduce_max_sparse as reduce_max_sparse,
    sparse_reduce_sum_sparse as reduce_sum_sparse, sparse_reset_shape as reset_shape,
    sparse_retain as retain, sparse_to_indicator as to_indicator,
    sparse_transpose as transpose)
from gradflow.ops.array.partition import sparse_mask as mask  # noqa: F401
from gradflow.ops.segments import (  # noqa: F401
    sparse_segment_mean as segment_mean, sparse_segment_sqrt_n as segment_sqrt_n,
    sparse_segment_sum as segment_sum)
