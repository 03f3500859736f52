"""Array ops: sources, shapes, reshaping, joining, slicing, gathering and diagonals.

Each op is defined once: its inference function and kernel via ``define_op``, its
gradient right after it, then its public constructor. Linear ops come in adjoint
pairs (Pad/Slice, StridedSlice/StridedSliceGrad, BooleanMask/BooleanMaskGrad, ...):
the gradient of each is the other, so derivatives of any order exist.

The ops live in this package's modules
(``sources``, ``shapes``, ``indexing``, ``slicing``, ``construction``),
and ``gradflow.ops.primitives``; this module re-exports their public names.
"""
from gradflow.ops.primitives import (broadcast_gradient_args, broadcast_to, fill, rank, reshape,
                                     shape, stack, unstack, zeros, zeros_like)
from gradflow.ops.array.construction import (diag, diag_part, eye, lin_space, linspace,
                                             matrix_band_part, matrix_diag, matrix_diag_part,
                                             matrix_set_diag, meshgrid)
from gradflow.ops.array.indexing import (concat, gather, gather_nd, one_hot, scatter_nd,
                                         sequence_mask, split, unique, unique_with_counts,
                                         unsorted_segment_sum)
from gradflow.ops.array.shapes import (expand_dims, invert_permutation, shape_n, size, squeeze,
                                       transpose)
from gradflow.ops.array.slicing import (boolean_mask, pad, reverse, reverse_v2, slice,
                                        strided_slice, tile)
from gradflow.ops.array.sources import (identity, identity_n, ones, ones_like, placeholder,
                                        placeholder_with_default, prevent_gradient, stop_gradient)

# The family's other public names, which other modules use (not in ``__all__``).
from gradflow.ops.primitives import shape_of_input as shape_of_input
from gradflow.ops.array.indexing import (Unique as Unique, UniqueWithCounts as UniqueWithCounts,
                                         gather_dim as gather_dim,
                                         gather_segment_rows as gather_segment_rows,
                                         indexed_slices_to_tensor as indexed_slices_to_tensor,
                                         infer_unsorted_segment as infer_unsorted_segment,
                                         unsorted_segment_kernel as unsorted_segment_kernel,
                                         with_trailing_ones as with_trailing_ones)


__all__ = [
    "placeholder", "placeholder_with_default", "identity", "identity_n", "stop_gradient",
    "prevent_gradient", "fill", "zeros", "ones", "zeros_like", "ones_like", "shape", "shape_n",
    "size", "rank", "reshape", "expand_dims", "squeeze", "transpose", "concat", "split", "stack",
    "unstack", "tile", "pad", "reverse", "reverse_v2", "broadcast_to", "broadcast_gradient_args",
    "invert_permutation", "slice", "strided_slice", "gather", "gather_nd", "scatter_nd",
    "unsorted_segment_sum", "boolean_mask", "one_hot", "sequence_mask", "unique",
    "unique_with_counts", "linspace", "lin_space", "meshgrid", "diag", "diag_part", "matrix_diag",
    "matrix_diag_part", "matrix_set_diag", "matrix_band_part", "eye",
]
