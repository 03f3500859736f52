"""``TensorArray`` (TF1 ``tf.TensorArray``) as functional values.

A TensorArray is carried by its *flow*, a scalar ``variant`` tensor. At run time a flow
holds an immutable ``TensorArrayValue``: the elements written so far (None where not
yet written) and what the array knows about them. Ops that change an array (write,
scatter, split) return a new value and leave their input alone, so a TensorArray is an
ordinary ``while_loop`` variable, and recorded loop states stay valid for gradients.

Gradients are functional values too. The gradient of a flow is a
``TensorArrayCotangent``: element gradients by index, a missing one meaning zero (and,
as for every variant, ``None`` as a whole meaning no gradient). Two linear ops move
between cotangents and dense tensors:

- ``TensorArrayCotangentGather`` reads elements of a cotangent into a dense tensor
  (zeros where missing); with ``remove`` it also returns the cotangent without them.
- ``TensorArrayCotangentScatter`` adds the slices of a dense tensor into a cotangent;
  with ``replace`` it first drops the entries at those indices.

Each is the other's adjoint (``remove`` pairs with ``replace``), so the gradients of
TensorArray ops, built from these two, can be differentiated again to any order:

==========================  ============================================================
forward op                  gradient
==========================  ============================================================
Write, Scatter, Split       CotangentGather(remove): the written slices' gradients, and
                            the flow's gradient without them
Read, Gather, Concat        CotangentScatter: the output gradient placed at the indices
==========================  ============================================================

As in TF1, with ``clear_after_read`` (the default) an element may be read once per
run: a second read op (``read``, ``gather``, ``stack``, ``concat``) of the same index
raises InvalidArgumentError. The same op running again (a loop body, or the recomputed
forward pass of a gradient) is not a second read. Unlike TF1's stateful arrays, two
writes to the same index of one flow, on separate branches, are independent values
rather than an error. Arrays made by ``grad()`` add up repeated writes to an index.
"""
from __future__ import annotations

from typing import Optional, Sequence

import itertools

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops import array, math
from gradflow.ops.primitives import static_shape_of as _static_shape_of
from gradflow.ops.common import apply_op
from gradflow.ops.variants import zeros_like_any

__all__ = ["TensorArray"]

_FLOW_SPEC = (dtypes.variant, TensorShape([]))
_reader_ids = itertools.count(1)  # tells read ops apart, for clear_after_read
_array_ids = itertools.count()  # run-time arrays are named <tensor_array_name>_<n>, as TF's


# ------------------------------------------------------------------ run-time values
def _dims_text(dims: Optional[tuple]) -> str:
    """A shape as TF's run-time messages print it: ``[2,?]``, or ``<unknown>``."""
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _check_consistent(values: list, indices: Sequence[int], dims_of, what: str) -> None:
    """All ``dims_of(value)`` must agree (TF's "inconsistent shapes" error)."""
    first = dims_of(values[0])
    for index, value in zip(indices[1:], values[1:]):
        if dims_of(value) != first:
            raise _invalid(f"TensorArray has inconsistent shapes.  Index {indices[0]} has "
                           f"{what}shape: {_dims_text(first)} but index {index} has "
                           f"{what}shape: {_dims_text(dims_of(value))}")


class TensorArrayValue:
    """What a TensorArray flow holds at run time. Immutable: writes return new values."""

    __slots__ = ("elements", "dtype", "element_shape", "dynamic_size", "infer_shape", "name",
                 "clear_after_read", "aggregate", "reads")

    def __init__(self, elements: tuple, dtype: dtypes.DType, element_shape: TensorShape,
                 dynamic_size: bool, infer_shape: bool, name: str,
                 clear_after_read: bool = False, aggregate: bool = False,
                 reads: Optional[dict] = None):
        self.elements = elements
        self.dtype = dtype
        self.element_shape = element_shape
        self.dynamic_size = dynamic_size
        self.infer_shape = infer_shape
        self.name = name
        self.clear_after_read = clear_after_read
        self.aggregate = aggregate  # a gradient array: repeated writes add up
        # index -> the read op that consumed it this run; shared by the values that
        # later writes derive from this one (the run's one array, as in TF1)
        self.reads = {} if reads is None else reads

    def consume(self, indices: Sequence[int], reader: int) -> None:
        """Records a read op of ``indices``; a second reader of an index is an error."""
        if not self.clear_after_read or not reader:
            return
        for index in indices:
            if self.reads.setdefault(index, reader) != reader:
                raise self._error(f"Could not read index {index} twice because it was cleared "
                                  "after a previous read (perhaps try setting "
                                  "clear_after_read = false?).")

    def __len__(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        written = sum(e is not None for e in self.elements)
        return f"<TensorArrayValue {self.name}: {written} of {len(self)} elements written>"

    def _error(self, message: str) -> errors.InvalidArgumentError:
        return _invalid(f"TensorArray {self.name}: {message}")

    def written(self, indices: Sequence[int], values: Sequence) -> "TensorArrayValue":
        """A new value with ``values`` written at ``indices`` (each index at most once)."""
        elements = list(self.elements)
        shape = self.element_shape
        for index, value in zip(indices, values):
            value = np.asarray(value, dtype=self.dtype.as_numpy_dtype) \
                if self.dtype is dtypes.string else value
            self._check_write(index, value, elements, shape)
            if index >= len(elements):
                elements.extend([None] * (index + 1 - len(elements)))
            previous = elements[index]
            elements[index] = value if previous is None else previous + value
            if self.infer_shape and np.shape(value) != shape.as_tuple():
                shape = TensorShape(np.shape(value))
        return TensorArrayValue(tuple(elements), self.dtype, shape, self.dynamic_size,
                                self.infer_shape, self.name, self.clear_after_read,
                                self.aggregate, self.reads)

    def _check_write(self, index: int, value, elements: list, shape: TensorShape) -> None:
        size = len(elements)
        if index < 0 and self.dynamic_size:
            raise self._error(f"Tried to write to index {index} but indices must be >= 0")
        if index < 0 or (index >= size and not self.dynamic_size):
            raise self._error(f"Tried to write to index {index} but array is not resizeable "
                              f"and size is: {size}")
        if value.dtype != self.dtype.as_numpy_dtype:
            raise self._error(f"TensorArray dtype is {self.dtype.name} but Op is trying to "
                              f"write dtype {dtypes.as_dtype(value.dtype).name}.")
        dims = np.shape(value)
        # the common case, a value of exactly the known element shape, builds no shape
        if dims != shape.as_tuple() and not shape.is_compatible_with(TensorShape(dims)):
            raise self._error(f"Could not write to TensorArray index {index} because the value "
                              f"shape is {_dims_text(dims)} which is incompatible "
                              f"with the TensorArray's inferred element shape: "
                              f"{_dims_text(shape.as_tuple())} (consider setting "
                              "infer_shape=False).")
        if index < size and elements[index] is not None and not self.aggregate:
            raise self._error(f"Could not write to TensorArray index {index} because it has "
                              "already been written to.")

    def _known_shape(self, hint: TensorShape) -> TensorShape:
        """The element shape learnt at run time, else the static one the op was built with."""
        return self.element_shape if self.element_shape.is_fully_defined() else hint

    def element(self, index: int, hint: TensorShape):
        """Element ``index``; zeros if unwritten and the element shape is fully known."""
        size = len(self.elements)
        if not 0 <= index < size:
            raise _invalid(f"Tried to read from index {index} but array size is: {size}")
        value = self.elements[index]
        if value is not None:
            return value
        shape = self._known_shape(hint)
        if not shape.is_fully_defined():
            raise self._error(f"Could not read from TensorArray index {index}.  Furthermore, "
                              "the element shape is not fully defined: "
                              f"{_dims_text(self.element_shape.as_tuple())}.  If you set the "
                              "full element_shape property on the TensorArray, the proper "
                              "all-zeros tensor will be returned instead of incurring this "
                              "error.")
        return np.zeros(shape.as_tuple(), self.dtype.as_numpy_dtype)

    def gathered(self, indices: Sequence[int], hint: TensorShape) -> np.ndarray:
        """The elements at ``indices`` stacked along a new first axis."""
        values = [self.element(i, hint) for i in indices]
        if not values:
            shape = self._known_shape(hint)
            if not shape.is_fully_defined():
                raise errors.UnimplementedError(
                    None, None, f"TensorArray has size zero, but element shape "
                    f"{_dims_text(shape.as_tuple())} is not fully defined. Currently only "
                    "static shapes are supported when packing zero-size TensorArrays.")
            return np.zeros((0,) + shape.as_tuple(), self.dtype.as_numpy_dtype)
        _check_consistent(values, indices, np.shape, "")
        return np.stack(values)

    def concatenated(self, hint_except0: TensorShape) -> tuple:
        """All elements joined along their first axis, and each one's length (int64)."""
        indices = list(range(len(self)))
        values = [self.element(i, TensorShape(None)) for i in indices]
        if not values:
            return self._empty_concatenation(hint_except0)
        for index, value in zip(indices, values):
            if np.ndim(value) == 0:
                raise _invalid(f"Concat saw a scalar shape at index {index} but requires at "
                               "least vectors.  Did you mean to call pack?")
        _check_consistent(values, indices, lambda v: np.shape(v)[1:],
                          "(excepting dimension 0) ")
        lengths = np.asarray([np.shape(v)[0] for v in values], dtype=np.int64)
        return np.concatenate(values), lengths

    def _empty_concatenation(self, hint_except0: TensorShape) -> tuple:
        dims = self.element_shape.as_tuple()
        except0 = TensorShape(dims[1:]) if dims else TensorShape(None)
        except0 = except0 if except0.is_fully_defined() else hint_except0
        if not except0.is_fully_defined():
            raise errors.UnimplementedError(
                None, None, f"TensorArray has size zero, but element_shape_except0 "
                f"{_dims_text(except0.as_tuple())} is not fully defined. Currently only static "
                "shapes are supported when concatenating zero-size TensorArrays.")
        return (np.zeros((0,) + except0.as_tuple(), self.dtype.as_numpy_dtype),
                np.zeros([0], np.int64))


class TensorArrayCotangent:
    """A gradient of a TensorArray value: element gradients by index; missing ones are 0."""

    __slots__ = ("entries",)

    def __init__(self, entries: dict):
        self.entries = entries

    def __add__(self, other: "TensorArrayCotangent") -> "TensorArrayCotangent":
        # copy the larger, walk the smaller (x + y is y + x, bit for bit): a loop adds
        # one step's entry to the sum of all the others
        larger, smaller = (self, other) if len(self.entries) >= len(other.entries) else \
            (other, self)
        merged = dict(larger.entries)
        for index, grad in smaller.entries.items():
            mine = merged.get(index)
            merged[index] = grad if mine is None else mine + grad
        return TensorArrayCotangent(merged)

    def __repr__(self) -> str:
        return f"<TensorArrayCotangent at indices {sorted(self.entries)}>"


# ----------------------------------------------------------------- static checks
def _check_flow(t: Tensor, op_type: str) -> None:
    if t.dtype is not dtypes.variant:
        raise TypeError(f"Input 'flow_in' of '{op_type}' Op must be a variant TensorArray "
                        f"flow, got {t.name} of dtype {t.dtype.name}")


def _check_index(t: Tensor, op_type: str, ranks: Sequence[int], what: str = "index",
                 dtype: dtypes.DType = dtypes.int32) -> None:
    if t.dtype is not dtype:
        raise TypeError(f"Input '{what}' of '{op_type}' Op must be {dtype.name}, got {t.name} "
                        f"of dtype {t.dtype.name}")
    if t.shape.ndims is not None and t.shape.ndims not in ranks:
        raise ValueError(f"Shape must be rank {' or '.join(map(str, ranks))} but is rank "
                         f"{t.shape.ndims} for '{what}' of '{op_type}' Op ({t.name})")


def _check_at_least_vector(t: Tensor, op_type: str) -> None:
    if t.shape.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for 'value' of "
                         f"'{op_type}' Op ({t.name})")


def _check_vector_value(value, what: str) -> None:
    if np.ndim(value) == 0:
        raise _invalid(f"Expected {what} to be at least a vector, but received shape: []")


# ------------------------------------------------------------ creating an array
def _infer_new(inputs, attrs):
    _check_index(inputs[0], "TensorArrayV3", [0], what="size")
    return [_FLOW_SPEC]


def _new_kernel(size, *, dtype, element_shape, dynamic_size, identical_element_shapes,
                tensor_array_name, clear_after_read=False):
    if size < 0:
        raise _invalid(f"Size should be >= 0, got {size}")
    return TensorArrayValue((None,) * int(size), dtype, element_shape, dynamic_size,
                            identical_element_shapes, f"{tensor_array_name}_{next(_array_ids)}",
                            clear_after_read)


define_op("TensorArrayV3", infer=_infer_new, kernel=_new_kernel)
NotDifferentiable("TensorArrayV3")


def _grad_array_kernel(ta: TensorArrayValue, *, source):
    """An empty array shaped as ``ta`` whose repeated writes to an index add up."""
    return TensorArrayValue((None,) * len(ta), ta.dtype, ta.element_shape, ta.dynamic_size,
                            ta.infer_shape, f"{ta.name}@{source}", aggregate=True)


define_op("TensorArrayGradV3", infer=lambda inputs, attrs: [_FLOW_SPEC],
          kernel=_grad_array_kernel)
NotDifferentiable("TensorArrayGradV3")


# ------------------------------------------------------------------------ writes
def _infer_write(inputs, attrs):
    flow, index, _ = inputs
    _check_flow(flow, "TensorArrayWriteV3")
    _check_index(index, "TensorArrayWriteV3", [0])
    return [_FLOW_SPEC]


define_op("TensorArrayWriteV3", infer=_infer_write,
          kernel=lambda ta, index, value: ta.written([int(index)], [value]))


@RegisterGradient("TensorArrayWriteV3")
@RegisterGradient("TensorArrayScatterV3")
def _write_grad(op, grad):
    """The written slices' gradients, and the flow's gradient without them."""
    _, indices, value = op.inputs
    d_value, d_flow = _cotangent_gather(grad, indices, value, remove=True)
    return d_flow, None, d_value


def _infer_scatter(inputs, attrs):
    flow, indices, value = inputs
    _check_flow(flow, "TensorArrayScatterV3")
    _check_index(indices, "TensorArrayScatterV3", [1], what="indices")
    _check_at_least_vector(value, "TensorArrayScatterV3")
    count = indices.shape.as_tuple()
    rows = value.shape.as_tuple()
    if count is not None and rows is not None and None not in (count[0], rows[0]) \
            and count[0] != rows[0]:
        raise ValueError(f"Dimensions must be equal, but are {count[0]} and {rows[0]} for "
                         f"'TensorArrayScatterV3' Op: indices {indices.name} has shape "
                         f"{indices.shape} but value {value.name} has shape {value.shape}")
    return [_FLOW_SPEC]


def _scatter_kernel(ta: TensorArrayValue, indices, value) -> TensorArrayValue:
    _check_vector_value(value, "value")
    if len(indices) != np.shape(value)[0]:
        raise _invalid(f"Expected len(indices) == values.shape[0], but saw: {len(indices)} vs. "
                       f"{np.shape(value)[0]}")
    if not ta.dynamic_size and len(indices) and indices.max() >= len(ta):
        raise _invalid(f"Max scatter index must be < array size ({indices.max()} vs. "
                       f"{len(ta)})")
    return ta.written([int(i) for i in indices], list(value))


define_op("TensorArrayScatterV3", infer=_infer_scatter, kernel=_scatter_kernel)  # grad: Write's


def _infer_split(inputs, attrs):
    flow, value, lengths = inputs
    _check_flow(flow, "TensorArraySplitV3")
    _check_at_least_vector(value, "TensorArraySplitV3")
    _check_index(lengths, "TensorArraySplitV3", [1], what="lengths", dtype=dtypes.int64)
    return [_FLOW_SPEC]


def _split_kernel(ta: TensorArrayValue, value, lengths) -> TensorArrayValue:
    _check_vector_value(value, "value")
    if len(lengths) and lengths.min() < 0:
        raise _invalid(f"Expected lengths to be non-negative, but saw: {lengths.tolist()}")
    total = int(lengths.sum())
    if total != np.shape(value)[0]:
        raise _invalid(f"Expected sum of lengths to be equal to values.shape[0], but sum of "
                       f"lengths is {total} and value's shape is: "
                       f"{_dims_text(np.shape(value))}")
    if not ta.dynamic_size and len(lengths) != len(ta):
        raise _invalid(f"TensorArray's size is not equal to the size of lengths ({len(ta)} vs. "
                       f"{len(lengths)}), and the TensorArray is not marked as dynamically "
                       "resizeable")
    pieces = np.split(value, np.cumsum(lengths)[:-1])
    return ta.written(range(len(lengths)), pieces)


define_op("TensorArraySplitV3", infer=_infer_split, kernel=_split_kernel)


@RegisterGradient("TensorArraySplitV3")
def _split_grad(op, grad):
    _, value, lengths = op.inputs
    d_value, d_flow = _cotangent_gather(grad, _range_of(lengths), value, remove=True,
                                        lengths=lengths)
    return d_flow, d_value, None


# ------------------------------------------------------------------------- reads
def _infer_read(inputs, attrs):
    flow, index = inputs
    _check_flow(flow, "TensorArrayReadV3")
    _check_index(index, "TensorArrayReadV3", [0])
    return [(attrs["dtype"], attrs["element_shape"])]


def _read_kernel(ta: TensorArrayValue, index, *, dtype, element_shape, reader=0):
    ta.consume([int(index)], reader)
    return ta.element(int(index), element_shape)


define_op("TensorArrayReadV3", infer=_infer_read, kernel=_read_kernel)


@RegisterGradient("TensorArrayReadV3")
@RegisterGradient("TensorArrayGatherV3")
def _read_grad(op, grad):
    """The output gradient placed at the indices read."""
    flow, indices = op.inputs
    return _cotangent_scatter(zeros_like_any(flow), indices, grad, replace=False), None


def _infer_gather(inputs, attrs):
    flow, indices = inputs
    _check_flow(flow, "TensorArrayGatherV3")
    _check_index(indices, "TensorArrayGatherV3", [1], what="indices")
    count = indices.shape.as_tuple()
    shape = TensorShape([None if count is None else count[0]]).concatenate(
        attrs["element_shape"])
    return [(attrs["dtype"], shape)]


def _gather_kernel(ta: TensorArrayValue, indices, *, dtype, element_shape, reader=0):
    indices = [int(i) for i in indices]
    ta.consume(indices, reader)
    return ta.gathered(indices, element_shape)


define_op("TensorArrayGatherV3", infer=_infer_gather,
          kernel=_gather_kernel)  # gradient: Read's, above


def _infer_concat(inputs, attrs):
    _check_flow(inputs[0], "TensorArrayConcatV3")
    shape = TensorShape([None]).concatenate(attrs["element_shape_except0"])
    return [(attrs["dtype"], shape), (dtypes.int64, TensorShape([None]))]


def _concat_kernel(ta: TensorArrayValue, *, dtype, element_shape_except0, reader=0):
    ta.consume(range(len(ta)), reader)
    return ta.concatenated(element_shape_except0)


define_op("TensorArrayConcatV3", infer=_infer_concat, kernel=_concat_kernel)


@RegisterGradient("TensorArrayConcatV3")
def _concat_grad(op, grad, _):
    lengths = op.outputs[1]
    return _cotangent_scatter(zeros_like_any(op.inputs[0]), _range_of(lengths), grad,
                              replace=False, lengths=lengths)


# ------------------------------------------------------------------ size, close
def _infer_size(inputs, attrs):
    _check_flow(inputs[0], "TensorArraySizeV3")
    return [(dtypes.int32, TensorShape([]))]


define_op("TensorArraySizeV3", infer=_infer_size, kernel=lambda ta: np.int32(len(ta)))
NotDifferentiable("TensorArraySizeV3")


def _infer_close(inputs, attrs):
    _check_flow(inputs[0], "TensorArrayCloseV3")
    return []


define_op("TensorArrayCloseV3", infer=_infer_close, kernel=lambda ta: ())
NotDifferentiable("TensorArrayCloseV3")


# ------------------------------------------------------------------- cotangents
def _infer_cotangent_gather(inputs, attrs):
    cotangent, indices, shape, *lengths = inputs
    _check_cotangent_inputs("TensorArrayCotangentGather", cotangent, indices, lengths, attrs)
    dense = (attrs["dtype"], _static_shape_of(shape))
    return [dense, _FLOW_SPEC] if attrs["remove"] else [dense]


def _check_cotangent_inputs(op_type: str, cotangent: Tensor, indices: Tensor, lengths: list,
                            attrs: dict) -> None:
    _check_flow(cotangent, op_type)
    _check_index(indices, op_type, [1] if attrs["concat"] else [0, 1], what="indices")
    if len(lengths) != int(attrs["concat"]):
        raise ValueError(f"'{op_type}' Op takes lengths exactly when concat=True")
    for t in lengths:
        _check_index(t, op_type, [1], what="lengths", dtype=dtypes.int64)


def _dense_pieces(dense, indices, lengths: tuple, concat: bool) -> list:
    """``dense`` cut into one slice per index (the inverse of ``_assemble``)."""
    if concat:
        return np.split(dense, np.cumsum(lengths[0])[:-1])
    return [dense] if np.ndim(indices) == 0 else list(dense)


def _assemble(pieces: list, indices, shape, dtype: dtypes.DType, lengths: tuple,
              concat: bool) -> np.ndarray:
    """Stacks or joins ``pieces`` (None for zeros) into a dense array of ``shape``."""
    numpy_dtype = dtype.as_numpy_dtype
    if np.ndim(indices) == 0:
        piece = pieces[0]
        return np.zeros(tuple(shape), numpy_dtype) if piece is None else \
            np.asarray(piece, numpy_dtype)
    if not pieces:
        return np.zeros(tuple(shape), numpy_dtype)
    rest = tuple(shape[1:])
    if concat:
        filled = [np.zeros((n,) + rest, numpy_dtype) if p is None else p
                  for p, n in zip(pieces, lengths[0])]
        return np.concatenate(filled).astype(numpy_dtype, copy=False)
    zeros = np.zeros(rest, numpy_dtype)
    return np.stack([zeros if p is None else p for p in pieces]).astype(numpy_dtype, copy=False)


def _cotangent_gather_kernel(cotangent, indices, shape, *lengths, dtype, remove, concat):
    entries = cotangent.entries if cotangent is not None else {}
    keys = [int(i) for i in np.reshape(indices, [-1])]
    dense = _assemble([entries.get(k) for k in keys], indices, shape, dtype, lengths, concat)
    if not remove:
        return dense
    rest = dict(entries)  # a C-level copy, then the few taken keys out (once a loop step)
    for key in keys:
        rest.pop(key, None)
    return dense, TensorArrayCotangent(rest) if rest else None


define_op("TensorArrayCotangentGather", infer=_infer_cotangent_gather,
          kernel=_cotangent_gather_kernel)


@RegisterGradient("TensorArrayCotangentGather")
def _cotangent_gather_grad(op, grad, *rest_grad):
    cotangent, indices, _, *lengths = op.inputs
    remove = op.get_attr("remove")
    base = rest_grad[0] if remove and rest_grad[0] is not None else zeros_like_any(cotangent)
    d_cotangent = _cotangent_scatter(base, indices, grad, replace=remove,
                                     lengths=lengths[0] if lengths else None)
    return [d_cotangent, None, None] + [None] * len(lengths)


def _infer_cotangent_scatter(inputs, attrs):
    cotangent, indices, _, *lengths = inputs
    _check_cotangent_inputs("TensorArrayCotangentScatter", cotangent, indices, lengths, attrs)
    return [_FLOW_SPEC]


def _cotangent_scatter_kernel(cotangent, indices, dense, *lengths, replace, concat):
    keys = [int(i) for i in np.reshape(indices, [-1])]
    entries = dict(cotangent.entries) if cotangent is not None else {}
    if replace:
        for key in keys:
            entries.pop(key, None)
    for key, piece in zip(keys, _dense_pieces(dense, indices, lengths, concat)):
        mine = entries.get(key)
        entries[key] = piece if mine is None else mine + piece
    return TensorArrayCotangent(entries)


define_op("TensorArrayCotangentScatter", infer=_infer_cotangent_scatter,
          kernel=_cotangent_scatter_kernel)


@RegisterGradient("TensorArrayCotangentScatter")
def _cotangent_scatter_grad(op, grad):
    _, indices, dense, *lengths = op.inputs
    replace = op.get_attr("replace")
    gathered = _cotangent_gather(grad, indices, dense, remove=replace,
                                 lengths=lengths[0] if lengths else None)
    d_dense, d_cotangent = gathered if replace else (gathered, grad)
    return [d_cotangent, None, d_dense] + [None] * len(lengths)


def _cotangent_gather(cotangent: Tensor, indices: Tensor, like: Tensor, remove: bool,
                      lengths: Optional[Tensor] = None):
    """The cotangent's elements at ``indices`` as a tensor shaped like ``like``."""
    inputs = [cotangent, indices, array.shape_of_input(like)]
    return apply_op("TensorArrayCotangentGather",
                    inputs + ([lengths] if lengths is not None else []),
                    name="TensorArrayCotangentGather", dtype=like.dtype, remove=remove,
                    concat=lengths is not None)


def _cotangent_scatter(cotangent: Tensor, indices: Tensor, dense: Tensor, replace: bool,
                       lengths: Optional[Tensor] = None) -> Tensor:
    """``cotangent`` plus the slices of ``dense`` at ``indices``."""
    return apply_op("TensorArrayCotangentScatter",
                    [cotangent, indices, dense] + ([lengths] if lengths is not None else []),
                    name="TensorArrayCotangentScatter", replace=replace,
                    concat=lengths is not None)


def _range_of(lengths: Tensor) -> Tensor:
    """0, 1, ..., len(lengths) - 1: the indices of the elements ``lengths`` describes."""
    return math.range(0, array.size(lengths))


# -------------------------------------------------------------- the Python class
class _Shared:
    """Static facts shared by a TensorArray and every TensorArray made from its flow."""

    __slots__ = ("dtype", "dynamic_size", "infer_shape", "element_shape", "size")

    def __init__(self, dtype: dtypes.DType, dynamic_size: bool, infer_shape: bool,
                 element_shape: TensorShape, size: Optional[Tensor]):
        self.dtype = dtype
        self.dynamic_size = dynamic_size
        self.infer_shape = infer_shape
        self.element_shape = element_shape
        self.size = size


class TensorArray:
    """A list of same-dtype tensors, written and read by index inside a graph (TF1).

    Every method that changes the array returns a new ``TensorArray`` (carried by a new
    ``flow``); use the returned one, as in TF1::

        ta = gf.TensorArray(gf.float32, size=3)
        ta = ta.write(0, x).write(1, y).write(2, z)
        stacked = ta.stack()          # shape [3, ...]

    Gradients flow through every operation: ``gf.gradients`` differentiates through
    writes, reads, stacking, splitting and ``while_loop``s carrying TensorArrays, to any
    order. ``grad(source)`` makes TF1's gradient array: empty, of this one's size and
    element shape, adding up repeated writes to an index.

    With ``clear_after_read`` (the default) each element may be read by one read op
    per run, as in TF1. ``colocate_with_first_write_call`` has no effect: a functional
    array has no separate handle to place.
    """

    def __init__(self, dtype, size=None, dynamic_size: Optional[bool] = None,
                 clear_after_read: Optional[bool] = None,
                 tensor_array_name: Optional[str] = None, handle: Optional[Tensor] = None,
                 flow: Optional[Tensor] = None, infer_shape: bool = True, element_shape=None,
                 colocate_with_first_write_call: bool = True, name: Optional[str] = None):
        dtype = dtypes.as_dtype(dtype)
        existing = flow if flow is not None else handle
        if existing is not None:
            _check_wrap_arguments(size, dynamic_size, clear_after_read, tensor_array_name,
                                  element_shape)
            _check_flow_tensor(existing)
            self._shared = _Shared(dtype, False, infer_shape, TensorShape(None), None)
            self._flow = existing
            return
        if size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        with get_default_graph().name_scope(name or "TensorArray") as scope:
            size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
            shape = as_shape(element_shape) if element_shape is not None else TensorShape(None)
            self._shared = _Shared(dtype, bool(dynamic_size), infer_shape, shape, size_t)
            self._flow = apply_op(  # named exactly as the scope, like TF1's TensorArray op
                "TensorArrayV3", [size_t], name=scope, dtype=dtype, element_shape=shape,
                dynamic_size=bool(dynamic_size), identical_element_shapes=infer_shape,
                tensor_array_name=tensor_array_name or scope[:-1],
                clear_after_read=clear_after_read is None or bool(clear_after_read))

    @classmethod
    def _wrap(cls, shared: _Shared, flow: Tensor) -> "TensorArray":
        ta = cls.__new__(cls)
        ta._shared = shared
        ta._flow = flow
        return ta

    # ------------------------------------------------------------- properties
    @property
    def dtype(self) -> dtypes.DType:
        return self._shared.dtype

    @property
    def flow(self) -> Tensor:
        """The scalar variant tensor carrying this array's value."""
        return self._flow

    @property
    def handle(self) -> Tensor:
        """The same tensor as ``flow``: a functional array has no separate handle."""
        return self._flow

    @property
    def element_shape(self) -> TensorShape:
        """The static shape of the elements, as far as writes so far have told."""
        return self._shared.element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._shared.dynamic_size

    def __repr__(self) -> str:
        return (f"<gf.TensorArray dtype={self.dtype.name} element_shape={self.element_shape} "
                f"flow={self._flow.name}>")

    # ------------------------------------------------------------- flow helpers
    def with_flow(self, flow: Tensor) -> "TensorArray":
        """A TensorArray carried by ``flow`` that shares this one's dtype and shape facts."""
        _check_flow_tensor(flow)
        return TensorArray._wrap(self._shared, flow)

    def identity(self) -> "TensorArray":
        """A TensorArray whose flow is an ``identity`` of this one's."""
        return self.with_flow(array.identity(self._flow))

    def grad(self, source: str, flow: Optional[Tensor] = None,
             name: Optional[str] = None) -> "TensorArray":
        """TF1's gradient array for ``source``: empty, sized as this array at ``flow``.

        Writes to one index add up (gradients of several reads of an element).
        """
        if not isinstance(source, str):
            raise TypeError(f"source must be a string, got {source!r}")
        flow = self._flow if flow is None else flow
        _check_flow_tensor(flow)
        with get_default_graph().name_scope(name or "TensorArrayGrad"):
            grad_flow = apply_op("TensorArrayGradV3", [flow], name="TensorArrayGradV3",
                                 source=source)
        shared = self._shared
        return TensorArray._wrap(_Shared(shared.dtype, shared.dynamic_size, shared.infer_shape,
                                         shared.element_shape, shared.size), grad_flow)

    def mark_used(self) -> None:
        """TF1 marks an array as used to silence its unused-array warning; none is given."""

    def _value_tensor(self, value, what: str) -> Tensor:
        tensor = convert_to_tensor(value, preferred_dtype=self.dtype, name=what)
        if tensor.dtype is not self.dtype:
            raise TypeError(f"TensorArray dtype is {self.dtype.name} but Op is trying to write "
                            f"dtype {tensor.dtype.name} ({tensor.name})")
        return tensor

    def _merged_shape(self, shape: TensorShape) -> TensorShape:
        """The element shape after writing elements of ``shape``; ValueError if they clash."""
        known = self._shared.element_shape
        if not self._shared.infer_shape:
            return known
        if not known.is_compatible_with(shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {known} (the "
                             "TensorArray's element shape so far; consider "
                             "infer_shape=False)")
        return known.merge_with(shape)

    def _changed(self, flow: Tensor, element_shape: TensorShape) -> "TensorArray":
        self._shared.element_shape = element_shape
        return self.with_flow(flow)

    # ----------------------------------------------------------------- writes
    def write(self, index, value, name: Optional[str] = None) -> "TensorArray":
        """Writes ``value`` at ``index``; returns the new TensorArray."""
        with get_default_graph().name_scope(name or "TensorArrayWrite"):
            value = self._value_tensor(value, "value")
            shape = self._merged_shape(value.shape)
            index = convert_to_tensor(index, dtype=dtypes.int32, name="index")
            flow = apply_op("TensorArrayWriteV3", [self._flow, index, value],
                            name="TensorArrayWriteV3")
        return self._changed(flow, shape)

    def scatter(self, indices, value, name: Optional[str] = None) -> "TensorArray":
        """Writes ``value[k]`` at ``indices[k]`` for each k; returns the new TensorArray."""
        with get_default_graph().name_scope(name or "TensorArrayScatter"):
            value = self._value_tensor(value, "value")
            dims = value.shape.as_tuple()
            shape = self._merged_shape(TensorShape(None if dims is None else dims[1:]))
            indices = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            flow = apply_op("TensorArrayScatterV3", [self._flow, indices, value],
                            name="TensorArrayScatterV3")
        return self._changed(flow, shape)

    def unstack(self, value, name: Optional[str] = None) -> "TensorArray":
        """Writes ``value[k]`` at index k for every row k of ``value``."""
        with get_default_graph().name_scope(name or "TensorArrayUnstack"):
            value = self._value_tensor(value, "value")
            _check_at_least_vector(value, "TensorArrayScatterV3")
            rows = math.range(0, array.gather_dim(value, 0))
            return self.scatter(rows, value, name="TensorArrayScatter")

    def split(self, value, lengths, name: Optional[str] = None) -> "TensorArray":
        """Writes consecutive pieces of ``value`` (``lengths[k]`` rows each) at 0, 1, ..."""
        with get_default_graph().name_scope(name or "TensorArraySplit"):
            value = self._value_tensor(value, "value")
            lengths = convert_to_tensor(lengths, preferred_dtype=dtypes.int64, name="lengths")
            if not lengths.dtype.is_integer:
                raise TypeError(f"lengths of TensorArray.split must be integers, got "
                                f"{lengths.name} of dtype {lengths.dtype.name}")
            if lengths.dtype is not dtypes.int64:
                lengths = math.cast(lengths, dtypes.int64)
            shape = self._merged_shape(_split_element_shape(value, lengths))
            flow = apply_op("TensorArraySplitV3", [self._flow, value, lengths],
                            name="TensorArraySplitV3")
        return self._changed(flow, shape)

    # ------------------------------------------------------------------ reads
    def read(self, index, name: Optional[str] = None) -> Tensor:
        """The element at ``index`` (zeros if unwritten and the element shape is known)."""
        index = convert_to_tensor(index, dtype=dtypes.int32, name="index")
        return apply_op("TensorArrayReadV3", [self._flow, index],
                        name=name or "TensorArrayReadV3", dtype=self.dtype,
                        element_shape=self.element_shape, reader=next(_reader_ids))

    def gather(self, indices, element_shape=None, name: Optional[str] = None) -> Tensor:
        """The elements at ``indices`` stacked into one tensor."""
        with get_default_graph().name_scope(name or "TensorArrayGather"):
            indices = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            shape = self.element_shape if element_shape is None else as_shape(element_shape)
            return apply_op("TensorArrayGatherV3", [self._flow, indices],
                            name="TensorArrayGatherV3", dtype=self.dtype, element_shape=shape,
                            reader=next(_reader_ids))

    def stack(self, name: Optional[str] = None) -> Tensor:
        """All elements stacked into one tensor of shape ``[size] + element_shape``."""
        with get_default_graph().name_scope(name or "TensorArrayStack"):
            value = self.gather(math.range(0, self.size()), name="TensorArrayGather")
        size = self._static_size()
        if size is not None:
            value.set_shape(TensorShape([size]).concatenate(self.element_shape))
        return value

    def _static_size(self) -> Optional[int]:
        shared = self._shared
        if shared.dynamic_size or shared.size is None:
            return None
        value = constant_value(shared.size)
        return None if value is None else int(value)

    def concat(self, name: Optional[str] = None) -> Tensor:
        """All elements joined along their first axis."""
        dims = self.element_shape.as_tuple()
        except0 = TensorShape(None) if dims is None else TensorShape(dims[1:])
        value, _ = apply_op("TensorArrayConcatV3", [self._flow],
                            name=name or "TensorArrayConcatV3", dtype=self.dtype,
                            element_shape_except0=except0, reader=next(_reader_ids))
        size = self._static_size()
        if size is not None and dims is not None and dims and dims[0] is not None:
            value.set_shape(TensorShape([size * dims[0]]).concatenate(except0))
        return value

    def size(self, name: Optional[str] = None) -> Tensor:
        """The number of elements (an int32 scalar)."""
        return apply_op("TensorArraySizeV3", [self._flow], name=name or "TensorArraySizeV3")

    def close(self, name: Optional[str] = None) -> Operation:
        """An op marking the array closed (it frees nothing: values are functional)."""
        return apply_op("TensorArrayCloseV3", [self._flow], name=name or "TensorArrayCloseV3")


def _check_flow_tensor(flow) -> None:
    if not isinstance(flow, Tensor) or flow.dtype is not dtypes.variant:
        raise TypeError(f"A TensorArray flow must be a variant Tensor, got {flow!r}")


def _check_wrap_arguments(size, dynamic_size, clear_after_read, tensor_array_name,
                          element_shape) -> None:
    """TF1's rules for wrapping an existing handle/flow: no creation arguments."""
    given = {"size": size, "dynamic_size": dynamic_size, "clear_after_read": clear_after_read,
             "tensor_array_name": tensor_array_name, "element_shape": element_shape}
    for what, value in given.items():
        if value is not None:
            raise ValueError(f"Cannot provide both a handle and {what} at the same time")


def _split_element_shape(value: Tensor, lengths: Tensor) -> TensorShape:
    """Pieces of equal, statically known length have shape [length] + value.shape[1:];
    otherwise nothing is known about them (as TF1 infers)."""
    dims = value.shape.as_tuple()
    known = constant_value(lengths)
    if dims is None or known is None or not known.size or \
            not (known == known.reshape(-1)[0]).all():
        return TensorShape(None)
    return TensorShape((int(known.reshape(-1)[0]),) + dims[1:])
