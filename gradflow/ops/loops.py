"""Functional loops over the leading dimension: ``map_fn``, ``scan``, ``foldl``,
``foldr``, and ``switch_case`` (TF1's names and signatures).

They are composites of the public ``while_loop``, ``TensorArray`` and ``case``: each
input is unstacked into a TensorArray, the loop reads one element per iteration, and
results are written to TensorArrays that are stacked at the end. Their gradients are
those of the pieces (a backward ``While`` over TensorArray cotangents), so they can be
differentiated again.

The small nest helpers (``flatten``, ``pack_sequence_as``, ``map_structure``,
``assert_same_structure``) follow ``tf.nest``: lists, tuples, namedtuples and dicts
(leaves in sorted-key order) are structure, everything else (``None`` included) a leaf.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array, math
from gradflow.ops.functional import case, flatten, while_loop
from gradflow.ops.tensor_array import TensorArray

__all__ = ["map_fn", "scan", "foldl", "foldr", "switch_case"]


# ---------------------------------------------------------------------- nests
def is_nested(value: Any) -> bool:
    """True for the containers ``tf.nest`` walks into."""
    return isinstance(value, (list, tuple, dict))


def pack_sequence_as(structure: Any, flat_sequence: Sequence) -> Any:
    """``structure`` rebuilt with the leaves of ``flat_sequence`` (inverse of flatten)."""
    flat = list(flat_sequence)
    count = len(flatten(structure))
    if count != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {count} atoms, but "
                         f"flat_sequence had {len(flat)} items. Structure: {structure!r}, "
                         f"flat_sequence: {flat!r}.")
    iterator = iter(flat)

    def build(item):  # recursion over a user's small Python structure, not the graph
        if isinstance(item, dict):
            built = {k: build(item[k]) for k in sorted(item)}
            return type(item)((k, built[k]) for k in item)
        if isinstance(item, tuple) and hasattr(item, "_fields"):
            return type(item)(*(build(x) for x in item))
        if isinstance(item, (list, tuple)):
            return type(item)(build(x) for x in item)
        return next(iterator)

    return build(structure)


def assert_same_structure(first: Any, second: Any, what: str = "") -> None:
    """Raises ValueError (naming ``what``) unless both nests have the same shape."""
    stack = [(first, second)]
    while stack:
        a, b = stack.pop()
        same = True
        if isinstance(a, dict) or isinstance(b, dict):
            same = isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
            if same:
                stack.extend((a[k], b[k]) for k in a)
        elif is_nested(a) or is_nested(b):
            same = is_nested(a) and is_nested(b) and len(a) == len(b)
            if same:
                stack.extend(zip(a, b, strict=True))
        if not same:
            raise ValueError("The two structures don't have the same nested structure.\n\n"
                             f"First structure: {first!r}\n\nSecond structure: {second!r}"
                             + (f"\n\n({what})" if what else ""))


def map_structure(fn: Callable, *structures: Any) -> Any:
    """``fn`` applied leafwise to structures of the same shape."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    columns = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*columns, strict=True)])


# ---------------------------------------------------------------------- helpers
def _leading_size(flat: list[Tensor], what: str) -> Tensor:
    """The common first dimension of ``flat`` (static when known)."""
    for t in flat:
        if t.shape.ndims == 0:
            raise ValueError(f"Elements in {what} must be 1+ dimensional Tensors, not scalars")
    static = [t.shape.as_list()[0] for t in flat
              if t.shape.ndims is not None and t.shape.as_list()[0] is not None]
    if len(set(static)) > 1:
        raise ValueError(f"Dimensions {static[0]} and "
                         f"{next(d for d in static if d != static[0])} are not compatible")
    if static:
        return convert_to_tensor(static[0], dtype=dtypes.int32, name="n")
    return array.shape(flat[0], out_type=dtypes.int32)[0]


def _unstacked(flat: list[Tensor]) -> list[TensorArray]:
    return [TensorArray(t.dtype, size=_leading_size([t], "elems"), element_shape=t.shape[1:]
                        if t.shape.ndims is not None else None,
                        infer_shape=True, name="TensorArray").unstack(t) for t in flat]


def _stacked(tas: list[TensorArray], n: Tensor, element_shapes: list,
             back_prop: bool) -> list[Tensor]:
    """The stacked results, with the static shape known; no gradient without back_prop
    (the arrays' flows carry none through the loop then)."""
    static_n = constant_value(n)
    results = []
    for ta, shape in zip(tas, element_shapes, strict=True):
        value = ta.stack()
        leading = TensorShape([None if static_n is None else int(static_n)])
        value.set_shape(leading.concatenate(shape) if shape is not None else
                        leading.concatenate(value.shape[1:]) if value.shape.ndims else
                        TensorShape(None))
        results.append(value if back_prop else array.stop_gradient(value))
    return results


def _int32(value: int) -> Tensor:
    """An int32 scalar (a loop counter's start)."""
    return convert_to_tensor(value, dtype=dtypes.int32)


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable. Received: fn={fn!r}")


def _as_tensors(values: Any, name: str) -> list[Tensor]:
    flat = flatten(values)
    if not flat:
        raise ValueError(f"{name} must be a tensor or a non-empty nest of tensors, got "
                         f"{values!r}")
    return [convert_to_tensor(v, name=name) for v in flat]


# ---------------------------------------------------------------------- map_fn
def map_fn(fn: Callable, elems, dtype=None, parallel_iterations: Optional[int] = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: Optional[str] = None):
    """Applies ``fn`` to each slice of ``elems`` along its first dimension and stacks the
    results (TF1 ``tf.map_fn``). ``elems`` may be a nest of tensors of one leading size;
    ``fn`` gets the same nest of slices. ``dtype`` gives ``fn``'s output structure and
    dtypes when it differs from ``elems``'."""
    _check_callable(fn)
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "map"):
        flat_elems = _as_tensors(elems, "elems")
        n = _leading_size(flat_elems, "elems")
        out_structure = elems if dtype is None else dtype
        out_dtypes = [t.dtype for t in flat_elems] if dtype is None else \
            [dtypes.as_dtype(d) for d in flatten(dtype)]
        elems_tas = _unstacked(flat_elems)
        out_tas = [TensorArray(d, size=n, infer_shape=infer_shape, name="TensorArray_out")
                   for d in out_dtypes]
        element_shapes: list = [None] * len(out_dtypes)

        def body(i, tas):
            piece = pack_sequence_as(elems, [ta.read(i) for ta in elems_tas])
            result = fn(piece)
            assert_same_structure(out_structure, result, "the structure of dtype (or elems) "
                                  "vs. the value returned by fn")
            flat = [convert_to_tensor(r) for r in flatten(result)]
            for k, (r, d) in enumerate(zip(flat, out_dtypes, strict=True)):
                if r.dtype.base_dtype is not d:
                    raise TypeError(f"map_fn: fn returned a {r.dtype.name} tensor ({r.name}) "
                                    f"where dtype says {d.name}")
                element_shapes[k] = r.shape if infer_shape else None
            return i + 1, [ta.write(i, r) for ta, r in zip(tas, flat, strict=True)]

        _, out_tas = while_loop(lambda i, _: math.less(i, n), body,
                                (_int32(0), out_tas),
                                parallel_iterations=parallel_iterations or 10,
                                back_prop=back_prop, swap_memory=swap_memory)
        results = _stacked(out_tas, n, element_shapes, back_prop)
    return pack_sequence_as(out_structure, results)


# ---------------------------------------------------------------------- scan / fold
def _accumulate(fn: Callable, elems, initializer, reverse: bool, keep_all: bool,
                parallel_iterations: int, back_prop: bool, swap_memory: bool,
                infer_shape: bool, what: str):
    """The loop shared by scan (``keep_all``: every accumulator) and the folds."""
    _check_callable(fn)
    flat_elems = _as_tensors(elems, "elems")
    n = _leading_size(flat_elems, "elems")
    elems_tas = _unstacked(flat_elems)
    last = math.subtract(n, 1)
    if initializer is None:
        structure = elems
        first = last if reverse else _int32(0)
        init = [ta.read(first) for ta in elems_tas]
        start = math.subtract(last, 1) if reverse else _int32(1)
    else:
        structure = initializer
        init = _as_tensors(initializer, "initializer")
        start = last if reverse else _int32(0)
    out_tas = []
    if keep_all:
        out_tas = [TensorArray(a.dtype, size=n, infer_shape=infer_shape,
                               element_shape=a.shape, name="TensorArray_out") for a in init]
        if initializer is None:
            out_tas = [ta.write(start - 1 if not reverse else start + 1, a)
                       for ta, a in zip(out_tas, init, strict=True)]

    def body(i, accumulators, tas):
        piece = pack_sequence_as(elems, [ta.read(i) for ta in elems_tas])
        result = fn(pack_sequence_as(structure, accumulators), piece)
        assert_same_structure(structure, result, f"the accumulator vs. the value returned by "
                              f"fn in {what}")
        flat = [convert_to_tensor(r) for r in flatten(result)]
        if keep_all:
            tas = [ta.write(i, r) for ta, r in zip(tas, flat, strict=True)]
        step = i - 1 if reverse else i + 1
        return step, flat, tas

    def more(i, *_):
        return math.greater_equal(i, 0) if reverse else math.less(i, n)

    _, finals, out_tas = while_loop(more, body, (start, init, out_tas),
                                    parallel_iterations=parallel_iterations,
                                    back_prop=back_prop, swap_memory=swap_memory)
    if keep_all:
        return pack_sequence_as(structure, _stacked(out_tas, n, [a.shape for a in init],
                                                    back_prop))
    return pack_sequence_as(structure, finals)


def scan(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: Optional[str] = None):
    """Every accumulator of ``a = fn(a, x)`` over ``elems``' first dimension, stacked
    (TF1 ``tf.scan``); without ``initializer`` the first element starts it."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "scan"):
        return _accumulate(fn, elems, initializer, reverse, True, parallel_iterations,
                           back_prop, swap_memory, infer_shape, "scan")


def foldl(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None):
    """The last accumulator of ``a = fn(a, x)`` from the first element to the last."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "foldl"):
        return _accumulate(fn, elems, initializer, False, False, parallel_iterations,
                           back_prop, swap_memory, True, "foldl")


def foldr(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None):
    """The last accumulator of ``a = fn(a, x)`` from the last element to the first."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "foldr"):
        return _accumulate(fn, elems, initializer, True, False, parallel_iterations,
                           back_prop, swap_memory, True, "foldr")


# ---------------------------------------------------------------------- switch_case
def _branches(branch_fns) -> list[tuple[int, Callable]]:
    """``branch_fns`` as sorted ``(key, fn)`` pairs, checked as TF1 checks them."""
    if isinstance(branch_fns, dict):
        items = list(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)):
        items = []
        for k, entry in enumerate(branch_fns):
            if callable(entry):
                items.append((k, entry))
            elif isinstance(entry, tuple) and len(entry) == 2:
                items.append(entry)
            else:
                raise TypeError("Each entry in 'branch_fns' must be a 2-tuple. Received "
                                f"{entry}.")
    else:
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    if not items:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    for key, fn in items:
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = sorted(k for k, _ in items)
    if keys != list(range(len(keys))):
        raise ValueError(f"branch indices (keys) must form contiguous range of [0 to "
                         f"{len(keys)}) but found {{{','.join(str(k) for k in keys)}}}")
    return sorted(items)


def switch_case(branch_index, branch_fns, default: Optional[Callable] = None,
                name: str = "switch_case"):
    """Runs ``branch_fns[branch_index]`` (TF1 ``tf.switch_case``); an index with no
    branch runs ``default``, or the branch of the largest key when there is none."""
    items = _branches(branch_fns)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name):
        index = convert_to_tensor(branch_index, name="branch_index")
        if not index.dtype.is_integer:
            raise TypeError(f"'branch_index' must be an integer Tensor, got <dtype: "
                            f"'{index.dtype.name}'>")
        if index.shape.ndims not in (None, 0):
            raise ValueError(f"'branch_index' must be a scalar, got shape {index.shape}")
        fallback = default if default is not None else items[-1][1]
        pairs = [(math.equal(index, key), fn) for key, fn in items]
        return case(pairs, default=fallback, name="case")
