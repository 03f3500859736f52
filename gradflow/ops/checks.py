"""Shape and closeness checks TF1 programs call: ``ensure_shape``, ``assert_near``,
``assert_rank_in`` and ``assert_same_float_dtype``.

``ensure_shape`` is TF's ``EnsureShape`` op: the static shape is refined at build time
(ValueError when it cannot match) and the run fails with ``InvalidArgumentError`` when
the fed value does not fit. The ``assert_*`` checks build an ``Assert`` as the other
checks in ``logging_ops`` do, failing at build time where the answer is already known.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, control_dependencies, name_scope
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape, equal_shapes_message, shape_text
from gradflow.ops import control
from gradflow.ops.array import gather
from gradflow.ops.array import identity
from gradflow.ops.array import rank as _rank
from gradflow.ops.array import shape as _shape
from gradflow.ops.common import apply_op, graph_for
from gradflow.ops.logging_ops import Assert, assert_rank, assert_rank_at_least
from gradflow.ops.numerics import check_numerics
from gradflow.ops.math import (abs as _abs, equal, less_equal, logical_or, reduce_all,
                               reduce_any, subtract)

__all__ = ["ensure_shape", "assert_near", "assert_rank_in", "assert_same_float_dtype",
           "verify_tensor_all_finite", "assert_all_finite", "assert_shapes"]


# -------------------------------------------------------------- ensure_shape
def _infer_ensure_shape(inputs, attrs):
    x = inputs[0]
    wanted = attrs["shape"]
    if not x.shape.is_compatible_with(wanted):
        raise ValueError(f"Shape must be rank {wanted.ndims} but is rank {x.shape.ndims} for "
                         f"'EnsureShape' with input shapes: {shape_text(x.shape)}."
                         if x.shape.ndims != wanted.ndims else
                         _dimension_message(x.shape, wanted))
    return [(x.dtype, x.shape.merge_with(wanted))]


def _dimension_message(have: TensorShape, wanted: TensorShape) -> str:
    return f"{equal_shapes_message(wanted, have)} for 'EnsureShape' with input shapes: " \
           f"{shape_text(have)}."


def _ensure_shape_kernel(x, shape):
    if not TensorShape(x.shape).is_compatible_with(shape):
        raise errors.InvalidArgumentError(
            None, None, f"Shape of tensor x {shape_text(TensorShape(x.shape))} is not compatible "
            f"with expected shape {shape_text(shape)}.")
    return x


define_op("EnsureShape", infer=_infer_ensure_shape, kernel=_ensure_shape_kernel)


@RegisterGradient("EnsureShape")
def _ensure_shape_grad(op, grad):
    """The value passes through unchanged, so does its gradient."""
    return grad


def ensure_shape(x, shape, name: Optional[str] = None) -> Tensor:
    """``x`` with its static shape refined to ``shape`` (None for an unknown size),
    checked against the value at run time."""
    if not isinstance(shape, TensorShape):
        try:
            shape = TensorShape(shape)
        except (TypeError, ValueError) as err:
            raise TypeError(f"ensure_shape: shape must be a TensorShape or a list of ints "
                            f"and None, got {shape!r}") from err
    x = convert_to_tensor(x, name="x")
    graph = graph_for([x])
    with graph.as_default(), graph.atomic():
        return apply_op("EnsureShape", [x], name=name or "EnsureShape", shape=shape)


# --------------------------------------------------------------- assert_near
def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None,
                name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``|x - y| <= atol + rtol * |y|`` element-wise.

    The default tolerances are ten machine epsilons of the dtype, as in TF1.
    """
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, name="y", dtype=x.dtype)
    graph = graph_for([x, y])
    with graph.as_default(), graph.atomic(), name_scope(name, "assert_near", [x, y]):
        real = x.dtype.real_dtype
        eps = float(np.finfo(real.as_numpy_dtype).eps) if real.is_floating else 0.0
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=real)
        atol = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=real)
        tolerance = atol + rtol * _abs(y)
        difference = _abs(subtract(x, y))
        condition = reduce_all(less_equal(difference, tolerance))
        if data is None:
            data = [message or "",
                    "x and y not equal to tolerance rtol = ", rtol, ", atol = ", atol,
                    f"x (shape={x.shape} dtype={x.dtype.name}) = ", x,
                    f"y (shape={y.shape} dtype={y.dtype.name}) = ", y]
        return Assert(condition, data, summarize=summarize)


# ------------------------------------------------------------ assert_rank_in
def assert_rank_in(x, ranks: Sequence, data=None, summarize=None, message=None,
                   name: Optional[str] = None) -> Operation:
    """Checks the rank of ``x`` is one of ``ranks``: ValueError now when it is known,
    else an ``Assert`` at run time."""
    x = convert_to_tensor(x, name="x")
    wanted = tuple(int(r) for r in ranks)
    graph = graph_for([x])
    with graph.as_default(), graph.atomic(), name_scope(name, "assert_rank_in", [x]):
        ndims = x.shape.ndims
        if ndims is not None:
            if ndims not in wanted:
                prefix = "" if message is None else f"{message}  "
                raise ValueError(f"{prefix}Tensor {x.name} must have rank in {wanted}.  "
                                 f"Received rank {ndims}, shape {x.shape.as_tuple()}")
            return control.no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [message or "", f"Tensor {x.name} must have rank in", *wanted,
                    "Received shape: ", _shape(x)]
        matches = [equal(_rank(x), r) for r in wanted]
        condition = matches[0]
        for match in matches[1:]:
            condition = logical_or(condition, match)
        return Assert(reduce_any(condition), data, summarize=summarize)


# --------------------------------------------------- assert_same_float_dtype
def assert_same_float_dtype(tensors=None, dtype=None) -> dtypes.DType:
    """The one floating dtype of ``tensors`` (and ``dtype``, when given); float32 when
    there is nothing to check. ValueError when they differ or are not floating."""
    if tensors is not None and isinstance(tensors, (Tensor, np.ndarray)):
        raise TypeError("assert_same_float_dtype: tensors must be a list of tensors, got "
                        f"{type(tensors).__name__}")
    found = None if dtype is None else dtypes.as_dtype(dtype)
    first = None
    for tensor in tensors or []:
        if tensor is None:
            continue
        if not hasattr(tensor, "dtype"):
            tensor = convert_to_tensor(tensor)
        tensor_dtype = dtypes.as_dtype(tensor.dtype).base_dtype
        if found is None:
            found, first = tensor_dtype, tensor
        elif tensor_dtype is not found:
            what = first.name if first is not None else "the expected dtype"
            raise ValueError(f"{tensor.name}, type=<dtype: '{tensor_dtype.name}'>, must be of "
                             f"the same type (<dtype: '{found.name}'>) as {what}.")
    if found is None:
        return dtypes.float32
    if not found.is_floating:
        raise ValueError(f"Expected floating point type, got <dtype: '{found.name}'>.")
    return found



# ------------------------------------------------------- assert_all_finite
def verify_tensor_all_finite(t, msg: str, name: Optional[str] = None) -> Tensor:
    """``t``, after a ``CheckNumerics`` that fails the run with ``msg`` when a value of
    ``t`` is NaN or infinite (TF1's ``VerifyFinite`` scope)."""
    t = convert_to_tensor(t, name="t")
    graph = graph_for([t])
    with graph.as_default(), graph.atomic(), name_scope(name, "VerifyFinite", [t]):
        check = check_numerics(t, message=msg)
        with control_dependencies([check]):
            return identity(t, name="control_dependency")


def assert_all_finite(t, msg: str, name: Optional[str] = None) -> Tensor:
    """``tf.debugging.assert_all_finite``: ``verify_tensor_all_finite`` by its TF1 name."""
    return verify_tensor_all_finite(t, msg, name=name)


# ------------------------------------------------------------- assert_shapes
def _shape_spec(spec) -> tuple:
    """A shape spec as (whether it starts with '*', its dimension entries)."""
    entries = tuple(spec.as_list() if isinstance(spec, TensorShape) else spec)
    if "*" in entries[1:]:
        raise ValueError(f"Tensor specification {entries} has '*' after the first dimension; "
                         "only a leading '*' is allowed")
    star = bool(entries) and entries[0] == "*"
    return star, entries[1:] if star else entries


def assert_shapes(shapes, data=None, summarize=None, message=None,
                  name: Optional[str] = None) -> Operation:
    """Checks the shapes of several tensors against specs of ints (sizes), strings
    (sizes shared across tensors), '.' (any size) and a leading '*' (any leading
    dimensions): ValueError now where the shapes are known, else ``Assert`` ops; one
    grouping op (``group_deps``)."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    graph = graph_for([x for x, _ in pairs])
    prefix = "" if message is None else f"{message}  "
    with graph.as_default(), graph.atomic():
        tensors = [convert_to_tensor(x, name="x") for x, _ in pairs]
        checks = []
        with name_scope(name, "assert_shapes", tensors):
            specs = [_shape_spec(spec) for _, spec in pairs]
            for x, (star, core) in zip(tensors, specs, strict=True):
                if star:
                    checks.append(assert_rank_at_least(x, len(core), message=message))
                elif len(core) <= 1:
                    checks.append(assert_rank_in(x, [0, 1], message=message))
                else:
                    checks.append(assert_rank(x, len(core), message=message))
            sources: dict = {}
            for x, (star, core) in zip(tensors, specs, strict=True):
                core = core or (1,)
                if x.shape.ndims == 0:
                    continue
                checks.extend(_size_checks(x, star, core, sources, prefix, data,
                                           summarize))
        return control.group(*checks)


def _size_checks(x: Tensor, star: bool, core: tuple, sources: dict, prefix: str, data,
                 summarize) -> list:
    """The size checks of one tensor's spec; ``sources`` maps each symbol to where its
    size was first given (tensor, dimension, static size or None)."""
    checks = []
    rank = x.shape.ndims
    dims = x.shape.as_list() if rank is not None else None
    for at, entry in enumerate(core):
        if entry == ".":
            continue
        index = at if not star or rank is None else rank - len(core) + at
        if star and rank is None:
            continue  # the position is only known at run time; the rank check covers it
        got = None if dims is None else dims[index]
        if isinstance(entry, str):
            if entry not in sources:
                sources[entry] = (x, index, got)
                continue
            source, source_index, size = sources[entry]
            origin = f"Specified by tensor {source.name} dimension {source_index}"
            wanted = size if size is not None else gather(_shape(source), source_index)
        else:
            origin, wanted = "Specified explicitly", int(entry)
        if got is not None and isinstance(wanted, int):
            if got != wanted:
                raise ValueError(f"{prefix}{origin}.  Tensor {x.name} dimension {index} must "
                                 f"have size {wanted}.  Received size {got}, shape "
                                 f"{x.shape.as_tuple()}")
            continue
        size = wanted if isinstance(wanted, Tensor) else \
            convert_to_tensor(np.int32(wanted), name="size")
        actual = gather(_shape(x), index)
        message = data if data is not None else [
            prefix, origin, f"Tensor {x.name} dimension", index, "must have size", size,
            "Received shape: ", _shape(x)]
        checks.append(Assert(reduce_all(equal(actual, size)), message, summarize=summarize))
    return checks
