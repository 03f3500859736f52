"""Conditional accumulators: ``ConditionalAccumulator`` (dense gradients) and
``SparseConditionalAccumulator`` (``IndexedSlices``), the meeting point of synchronous
replicas (``SyncReplicasOptimizer``).

An accumulator lives in the Session (``Session.resource``), as a queue does. It keeps a
global step: ``apply_grad`` drops a gradient whose ``local_step`` is older (stale),
``take_grad(n)`` waits until ``n`` gradients are in, returns their mean (or sum), empties
the accumulator and advances its step; ``set_global_step`` sets it. A sparse
accumulator averages each row over the gradients that carried it (rows repeated within
one gradient are summed), and returns the rows in the order they first came. Closing
the session wakes a waiting ``take_grad`` with ``CancelledError``.
"""
from __future__ import annotations

import collections
import itertools
import threading
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph, op_scope
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops.common import apply_op
from gradflow.ops.primitives import cast

__all__ = ["ConditionalAccumulatorBase", "ConditionalAccumulator",
           "SparseConditionalAccumulator"]

_keys = itertools.count()
_REDUCTIONS = ("MEAN", "SUM")
_GRAD_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                dtypes.complex64, dtypes.complex128)

SparseGrad = collections.namedtuple("SparseAccumulatorTakeGradient",
                                    ["indices", "values", "shape"])


def _dims(shape: TensorShape) -> Optional[list]:
    return None if shape.ndims is None else shape.as_list()


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class _Accumulator:
    """A session's accumulator: a running sum and count, and a global step."""

    def __init__(self, dtype: dtypes.DType, shape: Optional[list], reduction: str):
        self.dtype = dtype.as_numpy_dtype
        self.shape = shape
        self.reduction = reduction
        self.global_step = 0
        self.count = 0
        self._cond = threading.Condition()
        self._cancelled = False

    def _check_cancelled(self) -> None:
        if self._cancelled:
            raise errors.CancelledError(None, None, "The accumulator was cancelled (its "
                                        "session was closed).")

    def apply(self, local_step, *grad) -> None:
        with self._cond:
            self._check_cancelled()
            self._check(*grad)
            if int(local_step) < self.global_step:
                return  # a stale gradient: computed before the last aggregation
            self._add(*grad)
            self.count += 1
            self._cond.notify_all()

    def take(self, num_required):
        required = int(num_required)
        if required < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was {required}")
        with self._cond:
            while self.count < required:
                self._check_cancelled()
                self._cond.wait()
            result = self._result()
            self.count = 0
            self.global_step += 1
            return result

    def set_global_step(self, step) -> None:
        with self._cond:
            self.global_step = int(step)

    def num_accumulated(self) -> np.int32:
        with self._cond:
            return np.int32(self.count)

    def close(self) -> None:
        """The session is closing: a waiting ``take_grad`` fails with CancelledError."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    def join(self) -> None:
        """Nothing runs on an accumulator's own thread."""


class _DenseAccumulator(_Accumulator):
    def __init__(self, dtype, shape, reduction):
        super().__init__(dtype, shape, reduction)
        self._sum: Optional[np.ndarray] = None

    def _check(self, grad) -> None:
        expected = self.shape if self._sum is None else list(self._sum.shape)
        if expected is not None and (len(expected) != grad.ndim or any(
                d is not None and d != g for d, g in zip(expected, grad.shape, strict=True))):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch: expected {_shape_text(expected)}, got "
                f"{_shape_text(grad.shape)}")

    def _add(self, grad) -> None:
        grad = np.asarray(grad, dtype=self.dtype)
        self._sum = grad.copy() if self._sum is None or self.count == 0 else self._sum + grad

    def _result(self) -> np.ndarray:
        total, self._sum = self._sum, None
        if self.reduction == "MEAN":
            total = total / np.asarray(self.count, dtype=self.dtype)
        return np.asarray(total, dtype=self.dtype)


class _SparseAccumulator(_Accumulator):
    def __init__(self, dtype, shape, reduction):
        super().__init__(dtype, shape, reduction)
        self._rows: dict = {}  # index -> [sum of its rows, how many gradients had it]
        self._row_shape: Optional[tuple] = None

    def _check(self, indices, values, shape) -> None:
        limits = self.shape if self.shape else None
        if limits is not None and limits[0] is not None:
            for position, index in enumerate(indices):
                if index >= limits[0]:
                    raise errors.InvalidArgumentError(
                        None, None, f"Shape mismatch: index of slice {position} exceeded "
                        f"limits of shape; index is {index} exceeded {limits[0]}")
        expected = self._row_shape if self._rows else None
        if expected is None and limits is not None:
            expected = tuple(limits[1:])
        for axis, (want, got) in enumerate(zip(expected or (), values.shape[1:], strict=False)):
            if want is not None and want != got:
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: expected values dim {axis + 1} to be "
                    f"{want}, got {got}")

    def _add(self, indices, values, shape) -> None:
        values = np.asarray(values, dtype=self.dtype)
        if not self._rows:
            self._row_shape = tuple(values.shape[1:])
        seen = set()  # an index repeated within one gradient counts once (rows summed)
        for index, row in zip(indices.tolist(), values, strict=True):
            entry = self._rows.get(index)
            if entry is None:
                self._rows[index] = [row.copy(), 1]
            else:
                entry[0] = entry[0] + row
                entry[1] += index not in seen
            seen.add(index)

    def _result(self) -> tuple:
        rows, self._rows = self._rows, {}
        indices = np.array(list(rows), dtype=np.int64)
        values = [total / np.asarray(count, dtype=self.dtype) if self.reduction == "MEAN"
                  else total for total, count in rows.values()]
        row_shape = self._row_shape or ()
        values = np.asarray(np.stack(values) if values else np.zeros((0,) + row_shape),
                            dtype=self.dtype)
        if self.shape:
            shape = [-1 if d is None else d for d in self.shape]
        else:
            shape = [-1] + list(values.shape[1:])
        return indices, values, np.array(shape, dtype=np.int64)


# ------------------------------------------------------------------------ the ops
def _create_kernel(kind):
    def kernel(ctx, *, dtype, shape, shared_name, container, reduction_type, resource_key):
        dims = _dims(shape)
        return ctx.session.resource(("accumulator", resource_key),
                                    lambda: kind(dtype, dims, reduction_type))
    return kernel


def _infer_handle(inputs, attrs):
    return [(dtypes.resource, TensorShape([]))]


define_op("ResourceConditionalAccumulator", infer=_infer_handle,
          kernel=_create_kernel(_DenseAccumulator), stateful=True, needs_context=True,
          locks_itself=True)
define_op("SparseConditionalAccumulator", infer=_infer_handle,
          kernel=_create_kernel(_SparseAccumulator), stateful=True, needs_context=True,
          locks_itself=True)


def _apply_kernel(accumulator, local_step, *grad, **attrs):
    accumulator.apply(local_step, *grad)
    return ()


def _take_kernel(accumulator, num_required, **attrs):
    return accumulator.take(num_required)


def _infer_take_dense(inputs, attrs):
    return [(attrs["dtype"], attrs["shape"])]


def _infer_take_sparse(inputs, attrs):
    return [(dtypes.int64, TensorShape([None])), (attrs["dtype"], TensorShape(None)),
            (dtypes.int64, TensorShape([None]))]


def _no_outputs(inputs, attrs):
    return []


def _num_kernel(accumulator):
    return accumulator.num_accumulated()


def _set_step_kernel(accumulator, new_global_step):
    accumulator.set_global_step(new_global_step)
    return ()


def _scalar_int32(inputs, attrs):
    return [(dtypes.int32, TensorShape([]))]


for _prefix in ("Resource", ""):
    define_op(f"{_prefix}AccumulatorNumAccumulated", infer=_scalar_int32, kernel=_num_kernel,
              stateful=True)
    define_op(f"{_prefix}AccumulatorSetGlobalStep", infer=_no_outputs,
              kernel=_set_step_kernel, stateful=True)
define_op("ResourceAccumulatorApplyGradient", infer=_no_outputs, kernel=_apply_kernel,
          stateful=True)
define_op("SparseAccumulatorApplyGradient", infer=_no_outputs, kernel=_apply_kernel,
          stateful=True)
define_op("ResourceAccumulatorTakeGradient", infer=_infer_take_dense,
          kernel=_take_kernel, stateful=True)
define_op("SparseAccumulatorTakeGradient", infer=_infer_take_sparse,
          kernel=_take_kernel, stateful=True)
for _type in ("ResourceConditionalAccumulator", "SparseConditionalAccumulator",
              "ResourceAccumulatorNumAccumulated", "AccumulatorNumAccumulated",
              "ResourceAccumulatorSetGlobalStep", "AccumulatorSetGlobalStep",
              "ResourceAccumulatorApplyGradient", "SparseAccumulatorApplyGradient",
              "ResourceAccumulatorTakeGradient", "SparseAccumulatorTakeGradient"):
    NotDifferentiable(_type)


# ------------------------------------------------------------------ Python classes
def _int64(value) -> Tensor:
    """A step as an int64 tensor: a Python number becomes a Const, then a Cast."""
    return cast(convert_to_tensor(value), dtypes.int64)


def _cast_int64(value) -> Tensor:
    """Indices or a shape as an int64 tensor: a Python value becomes ``Cast/x``, then
    the ``Cast``; an int64 tensor is used as it is."""
    if isinstance(value, Tensor):
        return cast(value, dtypes.int64)
    with get_default_graph().name_scope("Cast") as scope:
        return cast(convert_to_tensor(value, name="x"), dtypes.int64, name=scope)


class ConditionalAccumulatorBase:
    """What both accumulators share: the handle, the step and the count."""

    _create_type = "ResourceConditionalAccumulator"
    _prefix = "Resource"

    def __init__(self, dtype, shape, shared_name: Optional[str], name: str,
                 reduction_type: str):
        self._dtype = dtypes.as_dtype(dtype)
        if self._dtype not in _GRAD_DTYPES:
            raise TypeError(f"Value passed to parameter 'dtype' has DataType "
                            f"{self._dtype.name} not in list of allowed values: "
                            f"{', '.join(d.name for d in _GRAD_DTYPES)}")
        if reduction_type not in _REDUCTIONS:
            raise ValueError(f"Attr 'reduction_type' of '{self._create_type}' Op passed "
                             f"string '{reduction_type}' not in: \"MEAN\", \"SUM\".")
        self._shape = TensorShape(None) if shape is None else as_shape(shape)
        graph = get_default_graph()
        with graph.atomic():
            self._accumulator_ref = apply_op(
                self._create_type, [], name=name, dtype=self._dtype, shape=self._shape,
                shared_name=shared_name or "", container="", reduction_type=reduction_type,
                resource_key=shared_name or f"accumulator_{next(_keys)}")
        self._name = self._accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self) -> Tensor:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    def num_accumulated(self, name: Optional[str] = None) -> Tensor:
        """How many gradients the accumulator holds now."""
        with get_default_graph().atomic():
            return apply_op(f"{self._prefix}AccumulatorNumAccumulated", [self._accumulator_ref],
                            name=name or f"{self._name}_NumAccumulated")

    def set_global_step(self, new_global_step, name: Optional[str] = None) -> Operation:
        """Sets the step older gradients count as stale against."""
        op_type = f"{self._prefix}AccumulatorSetGlobalStep"
        with get_default_graph().atomic():
            step = _int64(new_global_step)
            return apply_op(op_type, [self._accumulator_ref, step], name=name or op_type)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates dense gradients of one shape; ``take_grad`` returns their mean."""

    def __init__(self, dtype, shape=None, shared_name: Optional[str] = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN"):
        super().__init__(dtype, shape, shared_name, name, reduction_type)

    def apply_grad(self, grad, local_step=0, name: Optional[str] = None) -> Operation:
        """Adds ``grad`` computed at ``local_step`` (dropped if stale when it runs)."""
        with get_default_graph().atomic():
            grad = convert_to_tensor(grad, dtype=self._dtype)
            if not self._shape.is_compatible_with(grad.shape):
                raise ValueError(f"Shapes {grad.shape} and {self._shape} are incompatible")
            step = _int64(local_step)
            return apply_op("ResourceAccumulatorApplyGradient",
                            [self._accumulator_ref, step, grad],
                            name=name or "ResourceAccumulatorApplyGradient")

    def take_grad(self, num_required, name: Optional[str] = None) -> Tensor:
        """The mean of ``num_required`` gradients, waiting for them; empties the
        accumulator and advances its step."""
        with op_scope(name, "ResourceAccumulatorTakeGradient", [num_required]) as scope:
            count = convert_to_tensor(num_required, dtype=dtypes.int32, name="num_required")
            return apply_op("ResourceAccumulatorTakeGradient", [self._accumulator_ref, count],
                            name=scope, dtype=self._dtype, shape=self._shape)


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates ``IndexedSlices`` gradients; each row is averaged over the gradients
    that carried it."""

    _create_type = "SparseConditionalAccumulator"
    _prefix = ""

    def __init__(self, dtype, shape=None, shared_name: Optional[str] = None,
                 name: str = "sparse_conditional_accumulator", reduction_type: str = "MEAN"):
        super().__init__(dtype, shape, shared_name, name, reduction_type)

    def apply_indexed_slices_grad(self, grad: IndexedSlices, local_step=0,
                                  name: Optional[str] = None) -> Operation:
        """Adds the IndexedSlices ``grad`` computed at ``local_step``."""
        if not isinstance(grad, IndexedSlices):
            raise TypeError(f"grad must be an IndexedSlices, got {type(grad).__name__}")
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0,
                   name: Optional[str] = None) -> Operation:
        """Adds the rows ``grad_values`` at ``grad_indices`` computed at ``local_step``."""
        with get_default_graph().atomic():
            step = _int64(local_step)
            indices = _cast_int64(grad_indices)
            if indices.shape.ndims not in (None, 1):
                raise ValueError(f"grad_indices must be a vector, got shape {indices.shape}")
            shape = _cast_int64(grad_shape if grad_shape is not None else [])
            with op_scope(name, "SparseAccumulatorApplyGradient", [grad_values]) as scope:
                values = convert_to_tensor(grad_values, dtype=self._dtype,
                                           name="gradient_values")
                return apply_op("SparseAccumulatorApplyGradient",
                                [self._accumulator_ref, step, indices, values, shape],
                                name=scope, dtype=self._dtype,
                                has_known_shape=grad_shape is not None)

    def take_grad(self, num_required, name: Optional[str] = None) -> SparseGrad:
        """``(indices, values, shape)`` of ``num_required`` gradients' per-row mean."""
        with op_scope(name, "SparseAccumulatorTakeGradient", [num_required]) as scope:
            count = convert_to_tensor(num_required, dtype=dtypes.int32, name="num_required")
            outputs = apply_op("SparseAccumulatorTakeGradient",
                               [self._accumulator_ref, count], name=scope, dtype=self._dtype)
        return SparseGrad(*outputs)

    def take_indexed_slices_grad(self, num_required,
                                 name: Optional[str] = None) -> IndexedSlices:
        """``take_grad`` as an IndexedSlices."""
        indices, values, shape = self.take_grad(num_required, name)
        return IndexedSlices(values, indices, shape)
