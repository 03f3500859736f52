"""Static shapes with unknown dimensions and unknown rank (TF1's TensorShape and Dimension)."""
from __future__ import annotations

from typing import Iterable, Optional

__all__ = ["Dimension", "TensorShape", "as_shape", "unknown_shape", "dimension_value"]


class Dimension:
    """One dimension of a static shape: an int, or unknown (``value is None``).

    Compares equal to plain ints, so TF1 code such as ``x.shape[0] == 3`` or
    ``x.shape[1].value`` both work.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            if isinstance(value, float) or not hasattr(value, "__index__"):
                raise TypeError(f"Dimension value must be an integer or None, got {value!r}")
            value = int(value.__index__())
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self.value = value

    def __repr__(self) -> str:
        return f"Dimension({self.value!r})"

    def __str__(self) -> str:
        return "?" if self.value is None else str(self.value)

    def __int__(self) -> int:
        if self.value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        other = dimension_value(other)
        if self.value is None or other is None:
            return None
        return self.value == other

    def __ne__(self, other):
        other = dimension_value(other)
        if self.value is None or other is None:
            return None
        return self.value != other

    def __hash__(self):
        return hash(self.value)

    def is_compatible_with(self, other) -> bool:
        other = dimension_value(other)
        return self.value is None or other is None or self.value == other

    def merge_with(self, other) -> "Dimension":
        other = dimension_value(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {Dimension(other)} are not compatible")
        return Dimension(self.value if other is None else other)

    def _arith(self, other, fn):
        other = dimension_value(other)
        if self.value is None or other is None:
            return Dimension(None)
        return Dimension(fn(self.value, other))

    def __add__(self, other):
        return self._arith(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other):
        return self._arith(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._arith(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._arith(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return self._arith(other, lambda a, b: a // b)

    def __mod__(self, other):
        return self._arith(other, lambda a, b: a % b)

    def _compare(self, other, fn):
        other = dimension_value(other)
        if self.value is None or other is None:
            return None
        return fn(self.value, other)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)


def dimension_value(dim) -> Optional[int]:
    """The int (or None) inside a Dimension, int or None."""
    if isinstance(dim, Dimension):
        return dim.value
    if dim is None:
        return None
    return int(dim)


class TensorShape:
    """A static shape: unknown rank (``dims is None``) or a tuple of ints/None.

    Stored as a plain tuple for speed; ``shape[i]`` hands out ``Dimension`` objects
    as TF1 does, ``as_list()`` plain ints.
    """

    __slots__ = ("_dims",)

    def __init__(self, dims=None):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        else:
            if isinstance(dims, (int, Dimension)) or (hasattr(dims, "__index__")
                                                      and getattr(dims, "ndim", 0) == 0):
                dims = (dims,)  # a scalar (NumPy arrays of dims are iterated)
            self._dims = tuple(_checked_dim(d) for d in dims)

    @classmethod
    def from_tuple(cls, dims: Optional[tuple]) -> "TensorShape":
        """Wraps an already-validated tuple of ints/None without copying (hot path)."""
        shape = cls.__new__(cls)
        shape._dims = dims
        return shape

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_tuple(self) -> Optional[tuple]:
        """The dims as a tuple of ints/None, or None for unknown rank."""
        return self._dims

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        total = 1
        for d in self._dims:
            total *= d
        return total

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape.from_tuple(
            tuple(b if a is None else a for a, b in zip(self._dims, other._dims)))

    def most_specific_compatible_shape(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape.from_tuple(
            tuple(a if a == b else None for a, b in zip(self._dims, other._dims)))

    def concatenate(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape.from_tuple(self._dims + other._dims)

    def with_rank(self, rank: int) -> "TensorShape":
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> "TensorShape":
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return Dimension(None)
        if isinstance(key, slice):
            return TensorShape.from_tuple(self._dims[key])
        return Dimension(self._dims[key])

    def __bool__(self) -> bool:
        return self._dims is not None

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self._dims)

    def __repr__(self) -> str:
        # TF1's (V1 shapes): each dimension a Dimension, TensorShape([Dimension(None), ...])
        if self._dims is None:
            return "TensorShape(None)"
        dims = ", ".join(f"Dimension({d})" for d in self._dims)
        return f"TensorShape([{dims}])"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def _checked_dim(dim) -> Optional[int]:
    if dim is None:
        return None
    return Dimension(dim).value


def as_shape(shape) -> TensorShape:
    """Converts a TensorShape, list/tuple of ints/None, int or None to a TensorShape."""
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape(rank: Optional[int] = None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def shape_list(dims: Iterable) -> TensorShape:
    """A TensorShape from an iterable of ints/None, without per-dim validation."""
    return TensorShape.from_tuple(tuple(dims))


def shape_text(shape: TensorShape) -> str:
    """A shape as TF's C++ shape functions print it: ``[4,?]``, or ``?`` for unknown rank."""
    if shape.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def equal_shapes_message(a: TensorShape, b: TensorShape) -> str:
    """TF's shape-inference text for two shapes that must be equal and are not."""
    if a.ndims is not None and b.ndims is not None:
        if a.ndims != b.ndims:
            return f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}"
        for axis, (da, db) in enumerate(zip(a.as_list(), b.as_list(), strict=True)):
            if da is not None and db is not None and da != db:
                return (f"Dimension {axis} in both shapes must be equal, but are {da} and "
                        f"{db}. Shapes are {shape_text(a)} and {shape_text(b)}.")
    return f"Shapes {shape_text(a)} and {shape_text(b)} are not compatible"
