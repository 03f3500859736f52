"""Lookup tables (``tf.lookup``): ``StaticHashTable`` filled by a
``KeyValueTensorInitializer`` or a ``TextFileInitializer``, ``tables_initializer``.

A table lives in the Session (``Session.resource``), as a queue does: ``HashTableV2``
hands out the session's table, ``LookupTableImportV2`` and
``InitializeTableFromTextFileV2`` fill it (their ops join the ``TABLE_INITIALIZERS``
collection), ``LookupTableFindV2`` maps keys to values (``default_value`` for missing
keys) and ``LookupTableSizeV2`` counts entries. String keys may be ``bytes`` or
``str``: both are kept as UTF-8 ``bytes``, as TF's strings are, and string values come
back as ``bytes``.
"""
from __future__ import annotations

import itertools
import threading
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import (GraphKeys, Operation, Tensor, get_default_graph,
                                      name_scope)
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import control
from gradflow.ops.common import apply_op
from gradflow.ops.math import not_equal
from gradflow.ops.primitives import add, cast, where_v2
from gradflow.ops.string_ops import as_string, string_to_hash_bucket_fast

__all__ = ["KeyValueTensorInitializer", "TextFileInitializer", "TextFileIndex",
           "StaticHashTable", "StaticVocabularyTable", "tables_initializer",
           "initialize_all_tables"]

_keys = itertools.count()
_KEY_TYPES = (dtypes.string, dtypes.int32, dtypes.int64)


def _normal_key(value, dtype: dtypes.DType):
    """A key as the table stores it: UTF-8 bytes for strings, a Python int otherwise."""
    if dtype is dtypes.string:
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return int(value)


class _Table:
    """A session's hash table: a dict filled once by its initializer."""

    def __init__(self, key_dtype: dtypes.DType, value_dtype: dtypes.DType):
        self.key_dtype, self.value_dtype = key_dtype, value_dtype
        self.entries: Optional[dict] = None
        self._lock = threading.Lock()

    def fill(self, keys, values) -> None:
        entries = {}
        for key, value in zip(keys, values, strict=True):
            key = _normal_key(key, self.key_dtype)
            if key in entries and entries[key] != value:
                raise errors.FailedPreconditionError(
                    None, None, f"HashTable has different value for same key. Key {key!r} "
                    f"has {entries[key]!r} and trying to add value {value!r}")
            entries[key] = value
        with self._lock:
            self.entries = entries

    def find(self, keys: np.ndarray, default) -> np.ndarray:
        with self._lock:
            entries = self.entries
        if entries is None:
            raise errors.FailedPreconditionError(None, None, "Table not initialized.")
        flat = [entries.get(_normal_key(k, self.key_dtype), default)
                for k in np.asarray(keys).reshape(-1)]
        return _values_array(flat, self.value_dtype).reshape(np.shape(keys))

    def size(self) -> np.ndarray:
        with self._lock:
            return np.int64(0 if self.entries is None else len(self.entries))

    # A session closes and joins its resources; a table has no thread to stop.
    def close(self) -> None:
        return None

    def join(self) -> None:
        return None


def _values_array(values: list, dtype: dtypes.DType) -> np.ndarray:
    if dtype is dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = [_normal_key(v, dtypes.string) for v in values]
        return out
    return np.asarray(values, dtype=dtype.as_numpy_dtype)


# ------------------------------------------------------------------- the ops
def _create_kernel(ctx, *, key_dtype, value_dtype, shared_name, container,
                   use_node_name_sharing, resource_key):
    return ctx.session.resource(("lookup_table", resource_key),
                                lambda: _Table(key_dtype, value_dtype))


def _import_kernel(table, keys, values):
    table.fill(np.asarray(keys).reshape(-1), np.asarray(values).reshape(-1).tolist())
    return ()


def _text_column(line: str, index: int, number: int, delimiter: str, dtype, path: str):
    if index == TextFileIndex.LINE_NUMBER:
        value = number
    elif index == TextFileIndex.WHOLE_LINE:
        value = line
    else:
        columns = line.split(delimiter)
        if index >= len(columns):
            raise errors.InvalidArgumentError(
                None, None, f"Invalid number of columns in {path} line {number} ({line}) "
                f"for the given delimiter: {delimiter!r}")
        value = columns[index]
    if dtype is dtypes.string:
        return value if isinstance(value, str) else str(value)
    try:
        return float(value) if dtype.is_floating else int(value)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Field {value} in line {number} is not a valid {dtype.name}.") \
            from None


def _text_file_kernel(table, filename, *, key_index, value_index, vocab_size, delimiter,
                      offset):
    name = np.asarray(filename, dtype=object).item()  # a string scalar: bytes or str
    path = name.decode() if isinstance(name, bytes) else str(name)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as err:
        raise errors.NotFoundError(None, None, f"{path}; {err.strerror}") from None
    if vocab_size >= 0:
        if len(lines) < vocab_size:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid vocab_size in {path}: expected {vocab_size} but got "
                f"{len(lines)}")
        lines = lines[:vocab_size]
    keys = [_text_column(line, key_index, n, delimiter, table.key_dtype, path)
            for n, line in enumerate(lines)]
    values = [_text_column(line, value_index, n, delimiter, table.value_dtype, path)
              for n, line in enumerate(lines)]
    if table.value_dtype is not dtypes.string:
        values = [v + offset for v in values]
    table.fill(keys, values)
    return ()


def _find_kernel(table, keys, default_value):
    return table.find(keys, np.asarray(default_value).item())


def _infer_handle(inputs, attrs):
    return [(dtypes.resource, TensorShape([]))]


def _no_outputs(inputs, attrs):
    return []


def _infer_find(inputs, attrs):
    _, keys, default = inputs
    return [(default.dtype, keys.shape)]


define_op("HashTableV2", infer=_infer_handle, kernel=_create_kernel, stateful=True,
          needs_context=True)
define_op("LookupTableImportV2", infer=_no_outputs, kernel=_import_kernel, stateful=True)
define_op("InitializeTableFromTextFileV2", infer=_no_outputs, kernel=_text_file_kernel,
          stateful=True)
define_op("LookupTableFindV2", infer=_infer_find, kernel=_find_kernel, stateful=True)
define_op("LookupTableSizeV2", infer=lambda inputs, attrs: [(dtypes.int64, TensorShape([]))],
          kernel=lambda table: table.size(), stateful=True)
for _op_type in ("HashTableV2", "LookupTableImportV2", "InitializeTableFromTextFileV2",
                 "LookupTableFindV2", "LookupTableSizeV2"):
    NotDifferentiable(_op_type)


# ------------------------------------------------------------- initializers
class TextFileIndex:
    """Special column indices of ``TextFileInitializer``: the whole line, or its number."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class _Initializer:
    """What both initializers share: the key and value dtypes."""

    def __init__(self, key_dtype: dtypes.DType, value_dtype: dtypes.DType):
        self._key_dtype, self._value_dtype = key_dtype, value_dtype

    @property
    def key_dtype(self) -> dtypes.DType:
        return self._key_dtype

    @property
    def value_dtype(self) -> dtypes.DType:
        return self._value_dtype

    def _check(self, table: "StaticHashTable") -> None:
        if table.key_dtype is not self._key_dtype or \
                table.value_dtype is not self._value_dtype:
            raise TypeError(f"Invalid key/value dtypes for the table: the table has "
                            f"{table.key_dtype!r}/{table.value_dtype!r}, the initializer "
                            f"{self._key_dtype!r}/{self._value_dtype!r}")


class KeyValueTensorInitializer(_Initializer):
    """Fills a table from a tensor of keys and a tensor of values."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None,
                 name: Optional[str] = None):
        graph = get_default_graph()
        with graph.atomic():
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
            if self._keys.dtype not in _KEY_TYPES:
                raise TypeError(f"keys must be string, int32 or int64, got "
                                f"{self._keys.dtype!r}")
        self._name = name or "key_value_init"
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table: "StaticHashTable") -> Operation:
        """The op filling ``table``; it joins the TABLE_INITIALIZERS collection."""
        self._check(table)
        graph = get_default_graph()
        with graph.atomic(), name_scope(self._name, values=[table.resource_handle,
                                                             self._keys, self._values]):
            op = apply_op("LookupTableImportV2",
                          [table.resource_handle, self._keys, self._values],
                          name="LookupTableImportV2")
            graph.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class TextFileInitializer(_Initializer):
    """Fills a table from a text file: keys and values are columns of its lines
    (``delimiter``-separated), the whole line, or the line number (``TextFileIndex``)."""

    def __init__(self, filename, key_dtype, key_index: int, value_dtype, value_index: int,
                 vocab_size: Optional[int] = None, delimiter: str = "\t",
                 name: Optional[str] = None, value_index_offset: int = 0):
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        for index, arg in ((key_index, "key_index"), (value_index, "value_index")):
            if index < TextFileIndex.WHOLE_LINE:
                raise ValueError(f"Invalid {arg} {index}.")
        for which, index, dtype in (("key", key_index, key_dtype),
                                    ("value", value_index, value_dtype)):
            if index == TextFileIndex.LINE_NUMBER and dtype is not dtypes.int64:
                raise ValueError(f"`{which}_dtype` must be int64 if `{which}_index` is -1, "
                                 f"received: <dtype: '{dtype.name}'>")
            if dtype not in (dtypes.string, dtypes.int32, dtypes.int64) and \
                    not dtype.is_floating:
                raise ValueError(f"`{which}_dtype` must be a string, integer or floating "
                                 f"dtype, received: <dtype: '{dtype.name}'>")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        graph = get_default_graph()
        with graph.atomic():
            self._filename = convert_to_tensor(filename, dtype=dtypes.string,
                                               name="asset_path")
            graph.add_to_collection(GraphKeys.ASSET_FILEPATHS, self._filename)
        self._attrs = {"key_index": int(key_index), "value_index": int(value_index),
                       "vocab_size": -1 if vocab_size is None else int(vocab_size),
                       "delimiter": delimiter, "offset": int(value_index_offset)}
        self._name = name or "text_file_init"
        super().__init__(key_dtype, value_dtype)

    def initialize(self, table: "StaticHashTable") -> Operation:
        """The op filling ``table`` from the file; it joins TABLE_INITIALIZERS."""
        self._check(table)
        graph = get_default_graph()
        with graph.atomic(), name_scope(self._name, values=[table.resource_handle]):
            op = apply_op("InitializeTableFromTextFileV2",
                          [table.resource_handle, self._filename],
                          name="InitializeTableFromTextFileV2", **self._attrs)
            graph.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


# ------------------------------------------------------------------- tables
class StaticHashTable:
    """An immutable key-to-value table, filled once by ``initializer`` (whose op runs
    with ``tables_initializer()``); missing keys give ``default_value``."""

    def __init__(self, initializer: _Initializer, default_value, name: Optional[str] = None,
                 experimental_is_anonymous: bool = False):
        if not isinstance(initializer, _Initializer):
            raise TypeError(f"initializer must be a KeyValueTensorInitializer or a "
                            f"TextFileInitializer, got {type(initializer).__name__}")
        if experimental_is_anonymous:
            raise ValueError("experimental_is_anonymous=True is not supported")
        self._key_dtype, self._value_dtype = initializer.key_dtype, initializer.value_dtype
        graph = get_default_graph()
        with graph.atomic():
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
            if self._default_value.shape.ndims not in (None, 0):
                raise ValueError(f"default_value must be a scalar, got shape "
                                 f"{self._default_value.shape}")
            self._handle = apply_op(
                "HashTableV2", [], name=name or "hash_table", key_dtype=self._key_dtype,
                value_dtype=self._value_dtype, shared_name="", container="",
                use_node_name_sharing=False, resource_key=f"table_{next(_keys)}")
            self._name = self._handle.op.name
            self._initializer = initializer.initialize(self)

    @property
    def resource_handle(self) -> Tensor:
        return self._handle

    @property
    def name(self) -> str:
        return self._name

    @property
    def key_dtype(self) -> dtypes.DType:
        return self._key_dtype

    @property
    def value_dtype(self) -> dtypes.DType:
        return self._value_dtype

    @property
    def default_value(self) -> Tensor:
        return self._default_value

    @property
    def initializer(self) -> Operation:
        return self._initializer

    def lookup(self, keys, name: Optional[str] = None) -> Tensor:
        """The value of each key (``default_value`` where a key is missing)."""
        graph = get_default_graph()
        with graph.atomic(), name_scope(name, f"{self._name}_Lookup",
                                        [self._handle, keys]):
            keys = convert_to_tensor(keys)
            if keys.dtype is not self._key_dtype:
                raise TypeError(f"Dtype of argument `keys` must be <dtype: "
                                f"'{self._key_dtype.name}'>, received: <dtype: "
                                f"'{keys.dtype.name}'>")
            return apply_op("LookupTableFindV2", [self._handle, keys, self._default_value],
                            name="LookupTableFindV2")

    def size(self, name: Optional[str] = None) -> Tensor:
        """The number of entries (an int64 scalar)."""
        graph = get_default_graph()
        with graph.atomic(), name_scope(name, f"{self._name}_Size", [self._handle]):
            return apply_op("LookupTableSizeV2", [self._handle], name="LookupTableSizeV2")


class StaticVocabularyTable:
    """A vocabulary: keys in ``initializer`` map to their int64 ids, any other key to one of
    ``num_oov_buckets`` ids after them, chosen by the key's Fingerprint64 hash (its decimal
    text for integer keys), as TF's."""

    def __init__(self, initializer: _Initializer, num_oov_buckets: int,
                 lookup_key_dtype=None, name: Optional[str] = None,
                 experimental_is_anonymous: bool = False):
        if isinstance(num_oov_buckets, bool) or not isinstance(num_oov_buckets, int) \
                or num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if not isinstance(initializer, _Initializer):
            raise TypeError(f"initializer must be a KeyValueTensorInitializer or a "
                            f"TextFileInitializer, got {type(initializer).__name__}")
        if initializer.value_dtype is not dtypes.int64:
            raise TypeError(f"Invalid `value_dtype`, expected <dtype: 'int64'> but got "
                            f"<dtype: '{initializer.value_dtype.name}'>.")
        key_dtype = initializer.key_dtype
        self._lookup_key_dtype = (key_dtype if lookup_key_dtype is None
                                  else dtypes.as_dtype(lookup_key_dtype))
        if not (self._lookup_key_dtype.is_integer or self._lookup_key_dtype is dtypes.string):
            raise TypeError(f"Invalid `key_dtype`, expected integer or string, got "
                            f"<dtype: '{self._lookup_key_dtype.name}'>")
        self._num_oov_buckets = num_oov_buckets
        self._table = StaticHashTable(initializer, -1,
                                      experimental_is_anonymous=experimental_is_anonymous)
        self._name = name or self._table.name

    @property
    def name(self) -> str:
        return self._name

    @property
    def resource_handle(self) -> Tensor:
        return self._table.resource_handle

    @property
    def initializer(self) -> Operation:
        return self._table.initializer

    @property
    def key_dtype(self) -> dtypes.DType:
        return self._lookup_key_dtype

    @property
    def value_dtype(self) -> dtypes.DType:
        return dtypes.int64

    def lookup(self, keys, name: Optional[str] = None) -> Tensor:
        """The id of each key: its vocabulary id, else vocabulary size + its hash bucket."""
        graph = get_default_graph()
        with graph.atomic():
            keys = convert_to_tensor(keys)
            if keys.dtype is not self._lookup_key_dtype:
                raise TypeError(f"Dtype of argument `keys` must be <dtype: "
                                f"'{self._lookup_key_dtype.name}'>, received: <dtype: "
                                f"'{keys.dtype.name}'>")
            if keys.dtype is not self._table.key_dtype:
                keys = cast(keys, self._table.key_dtype)
            with name_scope(name, f"{self._name}_Lookup", [keys]):
                text = keys if keys.dtype is dtypes.string else as_string(keys)
                buckets = string_to_hash_bucket_fast(text, self._num_oov_buckets,
                                                     name="hash_bucket")
                ids = self._table.lookup(keys)
                buckets = add(buckets, self._table.size(), name="Add")
                found = not_equal(ids, self._table.default_value, name="NotEqual")
                return where_v2(found, ids, buckets, name="SelectV2")

    def size(self, name: Optional[str] = None) -> Tensor:
        """Vocabulary size plus the out-of-vocabulary buckets (an int64 scalar)."""
        graph = get_default_graph()
        with graph.atomic(), name_scope(name, f"{self._name}_Size", [self.resource_handle]):
            return add(self._table.size(), np.int64(self._num_oov_buckets), name="add")


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """One op running every table initializer of the default graph."""
    graph = get_default_graph()
    initializers = graph.get_collection(GraphKeys.TABLE_INITIALIZERS)
    with graph.atomic():
        if initializers:
            return control.group(*initializers, name=name)
        return control.no_op(name=name)


initialize_all_tables = tables_initializer
