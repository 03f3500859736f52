"""Run-time checks and printing: ``Assert``, ``Print``, ``print`` and the ``assert_*`` family.

``Assert(condition, data)`` fails the run with TF1's ``InvalidArgumentError("assertion
failed: [d0] [d1] ...")``, each data tensor summarized to ``summarize`` elements as TF's
kernels print them. The ``assert_*`` checks build such an ``Assert`` and, when both sides
are known while building (constants), raise right away, as TF1 does: an
``InvalidArgumentError`` carrying TF's "Condition x == y did not hold element-wise:" text,
or a ``ValueError``/``TypeError`` for static rank, shape and dtype checks.
"""
from __future__ import annotations

import itertools
import sys
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, name_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import control
from gradflow.ops.array import rank as _rank
from gradflow.ops.array import shape as _shape
from gradflow.ops.common import NUMERIC, apply_op, graph_for
from gradflow.ops.math import (equal, greater, greater_equal, less, less_equal, not_equal,
                               reduce_all)

__all__ = ["Assert", "Print", "print", "assert_equal", "assert_none_equal", "assert_less",
           "assert_less_equal", "assert_greater", "assert_greater_equal", "assert_positive",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_rank",
           "assert_rank_at_least", "assert_type", "assert_integer", "assert_scalar",
           "assert_proper_iterable", "is_numeric_tensor"]


def _number(value) -> str:
    """A number as TF's kernels print it: shortest %g form that reads back exactly."""
    if isinstance(value, (np.floating, float)):
        digits = (6, 9) if np.asarray(value).dtype.itemsize <= 4 else (15, 17)
        for precision in digits:
            text = f"{value:.{precision}g}"
            if type(value)(float(text)) == value or np.isnan(value):
                return text
        return text
    if isinstance(value, (np.bool_, bool)):
        return "1" if value else "0"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def summarize_value(array: np.ndarray, summarize: int) -> str:
    """``array`` as TF prints a tensor in ``Assert``/``Print`` (inside its own brackets):
    nested brackets below the first dimension, at most ``summarize`` elements (then
    ``...``), numbers without padding, text unquoted."""
    array = np.asarray(array)
    if array.ndim == 0:
        return _number(array[()])
    flat = array.reshape(-1)
    limit = flat.size if summarize < 0 else min(summarize, flat.size)
    pieces: list[str] = []

    def emit(dims: tuple, start: int) -> bool:
        pieces.append("[")
        stride = int(np.prod(dims[1:])) if len(dims) > 1 else 1
        for i in range(dims[0]):
            index = start + i * stride
            if index >= limit:
                pieces.append("...")
                pieces.append("]")
                return False
            if len(dims) == 1:
                if i:
                    pieces.append(" ")
                pieces.append(_number(flat[index]))
            elif not emit(dims[1:], index):
                pieces.append("...]")
                return False
        pieces.append("]")
        return True

    emit(array.shape, 0)
    return "".join(pieces)[1:-1]  # the caller brackets each tensor once


def _infer_assert(inputs, attrs):
    condition = inputs[0]
    if condition.dtype is not dtypes.bool:
        raise TypeError(f"Assert: condition must be a bool tensor, got {condition.dtype.name}")
    if not condition.shape.is_compatible_with(TensorShape([])):
        raise ValueError(f"In[0] is not a scalar: {condition.shape}")
    return []


def _assert_kernel(condition, *data, summarize):
    if not bool(condition):
        text = " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
        raise errors.InvalidArgumentError(None, None, f"assertion failed: {text}")
    return ()


define_op("Assert", infer=_infer_assert, kernel=_assert_kernel, stateful=True)
NotDifferentiable("Assert")


def Assert(condition, data: Sequence, summarize: Optional[int] = None,  # noqa: N802
           name: Optional[str] = None) -> Operation:
    """An op failing the run with the ``data`` tensors printed when ``condition`` is false."""
    if isinstance(data, (Tensor, str, bytes)) or not isinstance(data, (list, tuple)):
        raise TypeError(f"data must be a list of tensors, got {type(data).__name__}")
    cond = convert_to_tensor(condition, name="condition")
    graph = graph_for([cond])
    with graph.atomic(), name_scope(name, "Assert", [cond, *data]):
        tensors = [convert_to_tensor(d, name=f"data_{i}") for i, d in enumerate(data)]
        return graph.create_op("Assert", [cond, *tensors],
                               {"summarize": 3 if summarize is None else int(summarize)},
                               name="Assert")


def _infer_print(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


def _print_kernel(x, *data, message, first_n, summarize, counter):
    calls = _PRINT_CALLS[counter] = _PRINT_CALLS.get(counter, 0) + 1
    if first_n < 0 or calls <= first_n:
        text = "".join(f"[{summarize_value(d, summarize)}]" for d in data)
        sys.stderr.write(f"{message}{text}\n")
    return x


# Runs of each Print op so far (keyed by the op's ``counter`` attr), for ``first_n``.
_PRINT_CALLS: dict = {}
_print_ops = itertools.count()
define_op("Print", infer=_infer_print, kernel=_print_kernel, stateful=True)


@RegisterGradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


def Print(input_, data: Sequence, message: Optional[str] = None,  # noqa: N802
          first_n: Optional[int] = None, summarize: Optional[int] = None,
          name: Optional[str] = None) -> Tensor:
    """``input_`` unchanged; running it prints ``message`` and ``data`` to stderr."""
    x = convert_to_tensor(input_, name="input_")
    graph = graph_for([x])
    with graph.atomic():
        tensors = [convert_to_tensor(d) for d in data]
        return apply_op("Print", [x, *tensors], name=name or "Print", message=message or "",
                        first_n=-1 if first_n is None else int(first_n),
                        summarize=3 if summarize is None else int(summarize),
                        counter=next(_print_ops))


def format_value(array: np.ndarray, summarize: int, depth: int = 0) -> str:
    """``array`` as ``tf.print`` shows it: the first and last ``summarize`` entries of each
    dimension around ``...``, rows on their own lines."""
    array = np.asarray(array)
    if array.ndim == 0:
        return _number(array[()])
    count = array.shape[0]
    if 0 <= summarize and 2 * summarize < count:
        indices = list(range(summarize)) + [None] + list(range(count - summarize, count))
    else:
        indices = list(range(count))
    parts = ["..." if i is None else format_value(array[i], summarize, depth + 1)
             for i in indices]
    separator = " " if array.ndim == 1 else "\n" + " " * (depth + 1)
    return "[" + separator.join(parts) + "]"


def _infer_print_v2(inputs, attrs):
    return []


def _print_v2_kernel(*values, template, output_stream, end, summarize):
    parts = iter(values)
    text = " ".join(format_value(next(parts), summarize) if piece is None else piece
                    for piece in template)
    stream = sys.stdout if output_stream == "stdout" else sys.stderr
    stream.write(text + end)
    return ()


define_op("PrintV2", infer=_infer_print_v2, kernel=_print_v2_kernel, stateful=True)
NotDifferentiable("PrintV2")


def print(*inputs, output_stream=None, summarize: int = 3, sep: str = " ",  # noqa: A001
          end: str = "\n", name: Optional[str] = None) -> Operation:
    """An op printing ``inputs`` (tensors and Python values) when run (``tf.print``);
    ``output_stream`` is ``sys.stderr`` (the default) or ``sys.stdout``."""
    if sep != " ":
        raise ValueError("print: sep other than ' ' is not supported")
    stdout = (sys.stdout, sys.__stdout__, "stdout")
    if output_stream not in (None, sys.stderr, sys.__stderr__, "stderr") + stdout:
        raise ValueError("print: output_stream must be sys.stdout or sys.stderr (other "
                         "streams are not supported)")
    stream = "stdout" if output_stream in stdout else "stderr"
    template = [None if isinstance(i, Tensor) else str(i) for i in inputs]
    tensors = [i for i in inputs if isinstance(i, Tensor)]
    graph = graph_for(tensors)
    with graph.atomic():
        return graph.create_op("PrintV2", tensors, {"template": template,
                                                    "output_stream": stream, "end": end,
                                                    "summarize": int(summarize)},
                               name=name or "PrintV2")


def _binary_assert(sym: str, default_name: str, compare, np_compare, x, y, data, summarize,
                   message, name) -> Operation:
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, name="y", dtype=x.dtype)
    graph = graph_for([x, y])
    with graph.atomic(), name_scope(name, default_name, [x, y]):
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None:
            if not np.all(np_compare(x_static, y_static)):
                prefix = "" if message is None else f"{message}\n"
                raise errors.InvalidArgumentError(
                    None, None, f"{prefix}Condition x {sym} y did not hold element-wise:\n"
                    f"x ({x.name}) = \n{x_static}\ny ({y.name}) = \n{y_static}")
        if data is None:
            data = ([message] if message is not None else []) + [
                f"Condition x {sym} y did not hold element-wise:", f"x ({x.name}) = ", x,
                f"y ({y.name}) = ", y]
        return Assert(reduce_all(compare(x, y)), data, summarize=summarize)


def _unary_assert(sym: str, default_name: str, compare, np_compare, x, data, summarize,
                  message, name) -> Operation:
    x = convert_to_tensor(x, name="x")
    graph = graph_for([x])
    with graph.atomic(), name_scope(name, default_name, [x]):
        zero = np.zeros((), x.dtype.as_numpy_dtype)
        x_static = constant_value(x)
        if x_static is not None and not np.all(np_compare(x_static, zero)):
            raise errors.InvalidArgumentError(
                None, None, f"{message or ''}\nCondition x {sym} 0 did not hold element-wise:"
                f"\nx ({x.name}) = \n{x_static}")
        if data is None and message:  # TF1 joins these two pieces when given a message
            data = [f"{message}.  ", f"Condition x {sym} 0 did not hold element-wise:"
                    f"x ({x.name}) = ", x]
        elif data is None:
            data = ["", f"Condition x {sym} 0 did not hold element-wise:", f"x ({x.name}) = ",
                    x]
        zero_t = convert_to_tensor(zero, name="Const")
        return Assert(reduce_all(compare(x, zero_t)), data, summarize=summarize)


def _binary(sym, default_name, compare, np_compare):
    def check(x, y, data=None, summarize=None, message=None, name=None) -> Operation:
        return _binary_assert(sym, default_name, compare, np_compare, x, y, data, summarize,
                              message, name)
    check.__name__ = default_name
    check.__doc__ = f"An op failing the run unless ``x {sym} y`` holds element-wise."
    return check


def _unary(sym, default_name, compare, np_compare):
    def check(x, data=None, summarize=None, message=None, name=None) -> Operation:
        return _unary_assert(sym, default_name, compare, np_compare, x, data, summarize,
                             message, name)
    check.__name__ = default_name
    check.__doc__ = f"An op failing the run unless ``x {sym} 0`` holds element-wise."
    return check


assert_equal = _binary("==", "assert_equal", equal, np.equal)
assert_none_equal = _binary("!=", "assert_none_equal", not_equal, np.not_equal)
assert_less = _binary("<", "assert_less", less, np.less)
assert_less_equal = _binary("<=", "assert_less_equal", less_equal, np.less_equal)
assert_greater = _binary(">", "assert_greater", greater, np.greater)
assert_greater_equal = _binary(">=", "assert_greater_equal", greater_equal, np.greater_equal)
assert_positive = _unary(">", "assert_positive", greater, np.greater)
assert_negative = _unary("<", "assert_negative", less, np.less)
assert_non_negative = _unary(">=", "assert_non_negative", greater_equal, np.greater_equal)
assert_non_positive = _unary("<=", "assert_non_positive", less_equal, np.less_equal)


def _rank_assert(x, rank: int, at_least: bool, data, summarize, message, name,
                 default_name: str) -> Operation:
    x = convert_to_tensor(x, name="x")
    graph = graph_for([x])
    with graph.atomic(), name_scope(name, default_name, [x]):
        wanted = int(rank)
        ndims = x.shape.ndims
        if ndims is not None:
            if ndims < wanted or (not at_least and ndims != wanted):
                prefix = "" if message is None else f"{message}  "
                phrase = "rank at least" if at_least else "rank"
                raise ValueError(f"{prefix}Tensor {x.name} must have {phrase} {wanted}.  "
                                 f"Received rank {ndims}, shape {x.shape.as_tuple()}")
            return control.no_op(name="static_checks_determined_all_ok")
        phrase = "rank at least" if at_least else "rank"
        if data is None:
            data = [message or "", f"Tensor {x.name} must have {phrase}", wanted,
                    "Received shape: ", _shape(x)]
        compare = greater_equal if at_least else equal
        return Assert(compare(_rank(x), wanted), data, summarize=summarize)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None) -> Operation:
    """Checks ``x`` has rank ``rank``: ValueError now if its rank is known, else at run time."""
    return _rank_assert(x, rank, False, data, summarize, message, name, "assert_rank")


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None,
                         name=None) -> Operation:
    """Checks ``x`` has rank ``rank`` or more (ValueError now when its rank is known)."""
    return _rank_assert(x, rank, True, data, summarize, message, name, "assert_rank_at_least")


def assert_type(tensor, tf_type, message=None, name=None) -> Operation:
    """TypeError now unless ``tensor`` has dtype ``tf_type``; returns a no-op."""
    x = convert_to_tensor(tensor, name="tensor")
    wanted = dtypes.as_dtype(tf_type)
    if x.dtype is not wanted:
        prefix = "" if message is None else f"{message} "
        raise TypeError(f"{prefix}{x.name} must be of type {wanted!r}; got {x.dtype!r}")
    with graph_for([x]).atomic(), name_scope(name, "assert_type", [x]):
        return control.no_op("statically_determined_correct_type")


def assert_integer(x, message=None, name=None) -> Operation:
    """TypeError now unless ``x`` has an integer dtype; returns a no-op."""
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_integer:
        prefix = "" if message is None else f"{message} "
        raise TypeError(f'{prefix}Expected "x" to be integer type.  Found: {x.name} of dtype '
                        f"<dtype: '{x.dtype.name}'>")
    with graph_for([x]).atomic(), name_scope(name, "assert_integer", [x]):
        return control.no_op("statically_determined_was_integer")


def assert_scalar(tensor, name=None, message=None) -> Tensor:
    """``tensor`` itself, after a ValueError now unless it is statically a scalar."""
    x = convert_to_tensor(tensor, name="tensor")
    if x.shape.ndims != 0:
        prefix = "" if message is None else f"{message}  "
        if x.shape.ndims is None:
            raise ValueError(f"{prefix}Expected scalar shape, saw unknown shape.")
        raise ValueError(f"{prefix}Expected scalar shape for {x.name}, saw shape: "
                         f"{x.shape.as_tuple()}.")
    return x


def assert_proper_iterable(values) -> None:
    """TypeError if ``values`` is a tensor, an array or a string rather than a collection."""
    if isinstance(values, (Tensor, np.ndarray, str, bytes)):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: "
                        f"{type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument \"values\" to be iterable.  Found: {type(values)}")


def is_numeric_tensor(tensor) -> bool:
    """Whether ``tensor`` is a gf.Tensor of a numeric dtype."""
    return isinstance(tensor, Tensor) and tensor.dtype in NUMERIC


