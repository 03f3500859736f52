"""Nested structures of values (TF's ``tf.nest``): flatten, pack, map, compare.

A *structure* is a leaf or a list, tuple, namedtuple or mapping of structures. Mappings
are always walked in sorted key order (an ``OrderedDict``'s own order is ignored, as in
TF), so a flattened dict lines up with any other dict of the same keys. Strings, sets,
tensors, arrays and ``None`` are leaves. With ``expand_composites=True`` an
``IndexedSlices`` is a structure too: its values, indices and (when known) dense shape.
Errors carry TF's exception types and messages.
"""
from __future__ import annotations

import collections.abc
from typing import Any, Callable, Sequence

from gradflow.framework.indexed_slices import IndexedSlices

__all__ = ["is_nested", "is_sequence", "flatten", "pack_sequence_as",
           "assert_same_structure", "map_structure", "flatten_up_to"]


def is_nested(structure: Any) -> bool:
    """True for lists, tuples (namedtuples too) and mappings: the containers nest walks."""
    return isinstance(structure, (list, tuple, collections.abc.Mapping))


is_sequence = is_nested  # TF1's name for the same test


def _nested(structure, expand: bool) -> bool:
    return is_nested(structure) or (expand and isinstance(structure, IndexedSlices))


def _children(structure) -> list:
    """The direct children of a container, mappings in sorted key order."""
    if isinstance(structure, IndexedSlices):
        parts = [structure.values, structure.indices]
        return parts if structure.dense_shape is None else parts + [structure.dense_shape]
    if isinstance(structure, collections.abc.Mapping):
        return [structure[k] for k in _sorted_keys(structure)]
    return list(structure)


def _sorted_keys(mapping) -> list:
    try:
        return sorted(mapping)
    except TypeError as error:
        raise TypeError("nest only supports dicts with sortable keys.") from error


def flatten(structure: Any, expand_composites: bool = False) -> list:
    """The leaves of ``structure``, depth first, mappings in sorted key order."""
    leaves, stack = [], [structure]
    while stack:
        item = stack.pop()
        if _nested(item, expand_composites):
            stack.extend(reversed(_children(item)))
        else:
            leaves.append(item)
    return leaves


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _sequence_like(instance, args: list):
    """A container of ``instance``'s kind holding ``args`` (mappings: by sorted key)."""
    if isinstance(instance, IndexedSlices):
        return IndexedSlices(*args)
    if isinstance(instance, collections.abc.Mapping):
        by_key = dict(zip(_sorted_keys(instance), args, strict=True))
        if isinstance(instance, collections.defaultdict):
            result = collections.defaultdict(instance.default_factory)
            for key in instance:
                result[key] = by_key[key]
            return result
        return type(instance)((key, by_key[key]) for key in instance)
    if _is_namedtuple(instance):
        return type(instance)(*args)
    if isinstance(instance, tuple):
        return tuple(args) if type(instance) is tuple else type(instance)(args)
    return type(instance)(args) if type(instance) is not list else list(args)


def _pack(structure, leaves: list, start: int, expand: bool) -> tuple:
    """``structure`` rebuilt from ``leaves[start:]``; returns (packed, next index)."""
    if not _nested(structure, expand):
        return leaves[start], start + 1
    packed = []
    for child in _children(structure):
        value, start = _pack(child, leaves, start, expand)
        packed.append(value)
    return _sequence_like(structure, packed), start


def pack_sequence_as(structure: Any, flat_sequence: Sequence, expand_composites: bool = False):
    """``structure`` with its leaves replaced, in order, by ``flat_sequence``."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but "
                        f"found incompatible type `{type(flat_sequence)}` instead.")
    flat_sequence = list(flat_sequence)
    if not _nested(structure, expand_composites):
        if len(flat_sequence) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  "
                             f"{structure}\nHowever the input is a sequence "
                             f"({type(flat_sequence)}) of length {len(flat_sequence)}.\n  "
                             f"{flat_sequence}\nnest cannot guarantee that it is safe to map "
                             "one to the other.")
        return flat_sequence[0]
    count = len(flatten(structure, expand_composites))
    if count != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {count} atoms, but "
                         f"flat_sequence had {len(flat_sequence)} items.  Structure: "
                         f"{structure}, flat_sequence: {flat_sequence}.")
    return _pack(structure, flat_sequence, 0, expand_composites)[0]


# ------------------------------------------------------------- structure checks
def _describe(value) -> str:
    return f"type={type(value).__name__} str={value}"


class _Dot:
    """A leaf printed as ``.``: shows a structure's shape without its values."""

    def __repr__(self) -> str:
        return "."


def _outline(structure) -> str:
    dots = [_Dot() for _ in flatten(structure)]
    return repr(pack_sequence_as(structure, dots)) if is_nested(structure) else "."


def _same_sequence_type(a, b) -> bool:
    if type(a) is type(b):
        return True
    if isinstance(a, collections.abc.Mapping) and isinstance(b, collections.abc.Mapping):
        return True
    return (_is_namedtuple(a) and _is_namedtuple(b) and type(a).__name__ == type(b).__name__
            and type(a)._fields == type(b)._fields)


def _mismatch(a, b, check_types: bool, expand: bool = False):
    """The first difference between two structures: (exception type, detail) or None."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if _nested(x, expand) != _nested(y, expand):
            nested, leaf = (x, y) if _nested(x, expand) else (y, x)
            return ValueError, (f'Substructure "{_describe(nested)}" is a sequence, while '
                                f'substructure "{_describe(leaf)}" is not')
        if not _nested(x, expand):
            continue
        if isinstance(x, IndexedSlices) or isinstance(y, IndexedSlices):
            x, y = _children(x) if isinstance(x, IndexedSlices) else x, \
                _children(y) if isinstance(y, IndexedSlices) else y
        if check_types and not _same_sequence_type(x, y):
            return TypeError, (f"The two namedtuples don't have the same sequence type. First "
                               f"structure {_describe(x)} has type {type(x).__name__}, while "
                               f"second structure {_describe(y)} has type {type(y).__name__}")
        if len(x) != len(y):
            return ValueError, (f"The two structures don't have the same number of elements. "
                                f"First structure: {_describe(x)}. Second structure: "
                                f"{_describe(y)}")
        if isinstance(x, collections.abc.Mapping) and isinstance(y, collections.abc.Mapping) \
                and set(x) != set(y):
            return ValueError, (f"The two dictionaries don't have the same set of keys. First "
                                f"structure has keys {_describe(_sorted_keys(x))}, while "
                                f"second structure has keys {_describe(_sorted_keys(y))}")
        stack.extend(reversed(list(zip(_children(x), _children(y), strict=True))))
    return None


def assert_same_structure(nest1: Any, nest2: Any, check_types: bool = True,
                          expand_composites: bool = False) -> None:
    """Raises ValueError (TypeError for differing container types) unless alike."""
    found = _mismatch(nest1, nest2, check_types, expand_composites)
    if found is None:
        return
    error_type, detail = found
    raise error_type("The two structures don't have the same nested structure.\n\n"
                     f"First structure: {_describe(nest1)}\n\nSecond structure: "
                     f"{_describe(nest2)}\n\nMore specifically: {detail}\n"
                     f"Entire first structure:\n{_outline(nest1)}\n"
                     f"Entire second structure:\n{_outline(nest2)}")


def map_structure(func: Callable, *structure, **kwargs):
    """``func`` applied leaf-wise across structures; the result has the first's shape."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    expand = kwargs.pop("expand_composites", False)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and "
                         f"`expand_composites`, not: `{'`, `'.join(kwargs)}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types,
                              expand_composites=expand)
    columns = [flatten(s, expand) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*columns,
                                                                          strict=True)],
                            expand_composites=expand)


def flatten_up_to(shallow_tree: Any, input_tree: Any, check_types: bool = True) -> list:
    """``input_tree`` flattened only as deep as ``shallow_tree`` goes."""
    leaves, stack = [], [(shallow_tree, input_tree)]
    while stack:
        shallow, value = stack.pop()
        if not is_nested(shallow):
            leaves.append(value)
            continue
        if not is_nested(value):
            raise TypeError("If shallow structure is a sequence, input must also be a "
                            f"sequence. Input has type: {type(value)}.")
        if check_types and not _same_sequence_type(shallow, value):
            raise TypeError("The two structures don't have the same sequence type. Input "
                            f"structure has type {type(value)}, while shallow structure has "
                            f"type {type(shallow)}.")
        if len(value) != len(shallow):
            raise ValueError("The two structures don't have the same sequence length. Input "
                             f"structure has length {len(value)}, while shallow structure has "
                             f"length {len(shallow)}.")
        if isinstance(shallow, collections.abc.Mapping):
            missing = set(shallow) - set(value)
            if missing:
                raise ValueError(f"The input_tree has keys {sorted(value)}, but the shallow "
                                 f"tree has keys {sorted(shallow)}; missing {sorted(missing)}.")
        stack.extend(reversed(list(zip(_children(shallow), _children(value), strict=True))))
    return leaves
