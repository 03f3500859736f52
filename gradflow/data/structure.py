"""Element structures of datasets: nests of tuples, dicts and namedtuples of tensors.

Datasets run on flat lists of leaves (a tensor or a ``SparseTensor`` each); these
helpers flatten a structure (dict keys sorted, as TF's ``nest`` does) and pack flat
values back into its shape.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["flatten", "pack", "map_structure"]


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def flatten(structure) -> list:
    """The leaves of ``structure`` in TF's order (dicts by sorted key)."""
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack(structure, flat: list):
    """``flat`` (as ``flatten(structure)`` orders it) in ``structure``'s shape."""
    values = iter(flat)
    result = _pack(structure, values)
    return result


def _pack(structure, values):
    if isinstance(structure, dict):
        packed = {key: _pack(structure[key], values) for key in sorted(structure)}
        return type(structure)((key, packed[key]) for key in structure)
    if _is_namedtuple(structure):
        return type(structure)(*(_pack(item, values) for item in structure))
    if isinstance(structure, tuple):
        return tuple(_pack(item, values) for item in structure)
    return next(values)


def map_structure(fn: Callable[[Any], Any], structure):
    """``structure`` with ``fn`` applied to each leaf."""
    return pack(structure, [fn(leaf) for leaf in flatten(structure)])


def normalize(value):
    """A function's or a source's structure: lists of leaves become tuples (TF1 warns)."""
    if isinstance(value, dict):
        return type(value)((key, normalize(item)) for key, item in value.items())
    if _is_namedtuple(value):
        return type(value)(*(normalize(item) for item in value))
    if isinstance(value, tuple):
        return tuple(normalize(item) for item in value)
    if isinstance(value, list) and any(isinstance(item, (tuple, dict, list)) or
                                       hasattr(item, "dtype") and hasattr(item, "op")
                                       for item in value):
        return tuple(normalize(item) for item in value)
    return value
