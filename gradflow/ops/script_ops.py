"""Python functions as graph ops: ``py_func`` and ``numpy_function`` (TF1 names).

The function gets NumPy arrays and returns arrays (or one array), cast to ``Tout``.
``stateful=True`` makes a ``PyFunc`` op, never folded or merged; ``stateful=False`` a
``PyFuncStateless`` op, which the plan optimizer may fold when its inputs are constant.
Both are not differentiable, as in TF1; give them a gradient with
``graph.gradient_override_map({"PyFunc": "MyGrad"})``.
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor, string_array
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, graph_for

__all__ = ["py_func", "numpy_function"]

# Python callables of py_func ops, keyed by the op's ``token`` attr (TF1 keeps them in a
# registry too: a graph holds only the token).
_FUNCTIONS: dict[str, Callable] = {}
_tokens = itertools.count()


def _infer_py_func(inputs, attrs):
    return [(dtypes.as_dtype(t), TensorShape(None)) for t in attrs["Tout"]]


def _py_func_kernel(*args, token, Tout):  # noqa: N803 - TF's attr name
    result = _FUNCTIONS[token](*args)
    single = not isinstance(result, (list, tuple))
    results = [result] if single else list(result)
    if len(results) != len(Tout):
        raise ValueError(f"py_func {token} returned {len(results)} values but Tout has "
                         f"{len(Tout)} dtypes")
    out = []
    for index, (value, dtype) in enumerate(zip(results, Tout, strict=True)):
        dtype = dtypes.as_dtype(dtype)
        if dtype is dtypes.string:
            try:  # a returned str becomes its UTF-8 bytes, as in TF
                out.append(string_array(value))
            except TypeError:
                raise errors.InvalidArgumentError(
                    None, None, f"{index}-th value returned by {token} is "
                    f"{np.asarray(value).dtype}, but expects string") from None
        else:
            out.append(np.asarray(value, dtype=dtype.as_numpy_dtype))
    return out[0] if len(out) == 1 else tuple(out)


define_op("PyFunc", infer=_infer_py_func, kernel=_py_func_kernel, stateful=True)
define_op("PyFuncStateless", infer=_infer_py_func, kernel=_py_func_kernel)
NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")


def py_func(func: Callable, inp, Tout, stateful: bool = True,  # noqa: N803 - TF1's names
            name: Optional[str] = None):
    """An op calling ``func(*arrays)`` when run; returns a tensor per ``Tout`` dtype (one
    tensor when ``Tout`` is a single dtype), of unknown shape."""
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    single = not isinstance(Tout, (list, tuple))
    types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in (inp or [])]
    graph = graph_for(inputs)
    token = f"pyfunc_{next(_tokens)}"
    with graph.atomic():
        graph.on_rollback(lambda: _FUNCTIONS.pop(token, None))
        _FUNCTIONS[token] = func
        op_type = "PyFunc" if stateful else "PyFuncStateless"
        result = apply_op(op_type, inputs, name=name or op_type, token=token, Tout=types)
    if not types:
        return []
    if single:
        return result
    return [result] if len(types) == 1 else list(result)


def numpy_function(func: Callable, inp, Tout, stateful: bool = True,  # noqa: N803
                   name: Optional[str] = None):
    """``py_func`` under its TF2 name."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)
