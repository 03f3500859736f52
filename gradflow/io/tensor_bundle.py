"""TF's "V2" checkpoint format, the tensor bundle: ``<prefix>.index`` plus data shards
``<prefix>.data-00000-of-0000N``.

The ``.index`` file is a table (:mod:`gradflow.io.table`) whose key ``""`` holds a
``BundleHeaderProto`` (shard count, endianness, format version) and whose other keys are
tensor names mapping to a ``BundleEntryProto``: dtype, shape, shard, offset and size in
that shard, and the masked CRC-32C of the bytes. A shard holds each tensor's raw
little-endian bytes back to back, in key order.

The two protos are not in the ``tensorboard`` package; their descriptors are built here
from the field list of TF's ``tensor_bundle.proto`` (with ``TensorSliceProto`` for the
slices of partitioned variables) and the protobuf runtime does the encoding.

Numeric and bool tensors are supported; a string, resource or variant tensor, and a
sliced (partitioned) entry, are refused with a clear error.
"""
from __future__ import annotations

import os
import struct
from typing import Optional

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory
from tensorboard.compat.proto import tensor_shape_pb2, types_pb2, versions_pb2

from gradflow.framework import dtypes, errors
from gradflow.framework.tensor_proto import datatype_enum, dtype_from_enum, shape_proto
from gradflow.io.crc32c import crc32c, mask
from gradflow.io.table import TableWriter, read_table, varint

__all__ = ["BundleReader", "write_bundle", "bundle_exists", "data_filename",
           "BundleHeaderProto", "BundleEntryProto", "MAX_INDEX_BYTES"]

# An index larger than this is refused (a real one holds ~100 bytes per tensor).
MAX_INDEX_BYTES = 1 << 28
_FIELD = descriptor_pb2.FieldDescriptorProto


def _field(name: str, number: int, kind: int, type_name: str = "",
           repeated: bool = False, oneof: Optional[int] = None) -> _FIELD:
    field = _FIELD(name=name, number=number, type=kind,
                   label=_FIELD.LABEL_REPEATED if repeated else _FIELD.LABEL_OPTIONAL)
    if type_name:
        field.type_name = type_name
    if oneof is not None:
        field.oneof_index = oneof
    return field


def _bundle_file() -> descriptor_pb2.FileDescriptorProto:
    """The descriptors of TF's ``tensor_bundle.proto`` and ``tensor_slice.proto``."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="gradflow/io/tensor_bundle.proto", package="gradflow.tensorflow",
        syntax="proto3", dependency=[tensor_shape_pb2.DESCRIPTOR.name,
                                     types_pb2.DESCRIPTOR.name, versions_pb2.DESCRIPTOR.name])
    extent = descriptor_pb2.DescriptorProto(
        name="Extent", field=[_field("start", 1, _FIELD.TYPE_INT64),
                              _field("length", 2, _FIELD.TYPE_INT64, oneof=0)],
        oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="has_length")])
    proto.message_type.add(name="TensorSliceProto", nested_type=[extent], field=[
        _field("extent", 1, _FIELD.TYPE_MESSAGE, ".gradflow.tensorflow.TensorSliceProto.Extent",
               repeated=True)])
    header = proto.message_type.add(name="BundleHeaderProto", field=[
        _field("num_shards", 1, _FIELD.TYPE_INT32),
        _field("endianness", 2, _FIELD.TYPE_ENUM,
               ".gradflow.tensorflow.BundleHeaderProto.Endianness"),
        _field("version", 3, _FIELD.TYPE_MESSAGE, ".tensorboard.VersionDef")])
    header.enum_type.add(name="Endianness", value=[
        descriptor_pb2.EnumValueDescriptorProto(name="LITTLE", number=0),
        descriptor_pb2.EnumValueDescriptorProto(name="BIG", number=1)])
    proto.message_type.add(name="BundleEntryProto", field=[
        _field("dtype", 1, _FIELD.TYPE_ENUM, ".tensorboard.DataType"),
        _field("shape", 2, _FIELD.TYPE_MESSAGE, ".tensorboard.TensorShapeProto"),
        _field("shard_id", 3, _FIELD.TYPE_INT32),
        _field("offset", 4, _FIELD.TYPE_INT64),
        _field("size", 5, _FIELD.TYPE_INT64),
        _field("crc32c", 6, _FIELD.TYPE_FIXED32),
        _field("slices", 7, _FIELD.TYPE_MESSAGE, ".gradflow.tensorflow.TensorSliceProto",
               repeated=True)])
    return proto


def _pool() -> descriptor_pool.DescriptorPool:
    """The default pool, holding the bundle protos (added once per process)."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName("gradflow/io/tensor_bundle.proto")
    except KeyError:
        pool.Add(_bundle_file())
    return pool


_POOL = _pool()
BundleHeaderProto = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("gradflow.tensorflow.BundleHeaderProto"))
BundleEntryProto = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("gradflow.tensorflow.BundleEntryProto"))


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    """The name of data shard ``shard`` of ``num_shards`` (TF's ``.data-00000-of-00001``)."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def bundle_exists(prefix: str) -> bool:
    """Whether ``prefix.index`` exists (a V2 checkpoint with this prefix)."""
    return os.path.isfile(prefix + ".index")


def _size_words(items: list) -> bytes:
    """The lengths as TF checksums them: 4 little-endian bytes each (8 past 2**32)."""
    return b"".join(struct.pack("<I" if len(s) <= 0xFFFFFFFF else "<Q", len(s))
                    for s in items)


def _string_tensor_bytes(value: np.ndarray) -> tuple[bytes, int]:
    """TF's on-disk string tensor: varint lengths, a masked checksum of the lengths, the
    bytes; and the entry's checksum (over the length words, that checksum and the bytes)."""
    items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value.reshape(-1)]
    words = _size_words(items)
    length_checksum = struct.pack("<I", mask(crc32c(words)))
    body = b"".join(items)
    raw = b"".join(varint(len(s)) for s in items) + length_checksum + body
    return raw, mask(crc32c(words + length_checksum + body))


def _tensor_bytes(value: np.ndarray) -> tuple[dtypes.DType, bytes, int]:
    dtype = dtypes.as_dtype(value.dtype)
    if dtype is dtypes.string or value.dtype.kind in "OSU":
        raw, checksum = _string_tensor_bytes(value)
        return dtypes.string, raw, checksum
    little = value.astype(value.dtype.newbyteorder("<"), copy=False)
    raw = np.ascontiguousarray(little).tobytes()
    return dtype, raw, mask(crc32c(raw))


def write_bundle(prefix: str, tensors: dict[str, np.ndarray]) -> None:
    """Writes ``tensors`` (name -> array) as a one-shard V2 checkpoint at ``prefix``.

    The shard is written first and the index last, each to a temporary name renamed
    into place, so a reader never sees an index naming missing data.
    """
    entries = {}
    data_path = data_filename(prefix, 0, 1)
    with open(data_path + ".tempstate", "wb") as shard:
        offset = 0
        for name in sorted(tensors):
            dtype, raw, checksum = _tensor_bytes(np.asarray(tensors[name]))
            entries[name] = BundleEntryProto(
                dtype=datatype_enum(dtype), shape=shape_proto(np.shape(tensors[name])),
                shard_id=0, offset=offset, size=len(raw), crc32c=checksum)
            shard.write(raw)
            offset += len(raw)
    os.replace(data_path + ".tempstate", data_path)
    header = BundleHeaderProto(num_shards=1, endianness=0,
                               version=versions_pb2.VersionDef(producer=1))
    with open(prefix + ".index.tempstate", "wb") as index:
        table = TableWriter(index)
        table.add(b"", header.SerializeToString())
        for name in sorted(entries):
            table.add(name.encode("utf-8"), entries[name].SerializeToString())
        table.finish()
    os.replace(prefix + ".index.tempstate", prefix + ".index")


def _data_loss(prefix: str, detail: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"Checkpoint {prefix} is corrupt: {detail}")


class BundleReader:
    """Reads a V2 checkpoint: its index at construction, a tensor's bytes on demand.

    Raises NotFoundError when ``prefix.index`` is missing and DataLossError (naming the
    file) when the index, a shard or a checksum is wrong. Sizes are checked against the
    shard files before anything is allocated.
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        index = prefix + ".index"
        if not os.path.exists(index):
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find "
                f"any matching files for {prefix}")
        try:
            pairs = list(read_table(index, MAX_INDEX_BYTES))
        except ValueError as err:
            raise _data_loss(prefix, str(err)) from None
        if not pairs or pairs[0][0] != b"":
            raise _data_loss(prefix, f"{index} has no bundle header")
        header = self._parse(BundleHeaderProto, pairs[0][1], "the header")
        if header.endianness != 0:
            raise _data_loss(prefix, f"{index} is big-endian, which is not supported")
        if not 1 <= header.num_shards <= 1 << 16:
            raise _data_loss(prefix, f"{index} names {header.num_shards} data shards")
        self.num_shards = header.num_shards
        self._entries: dict[str, object] = {}
        for key, value in pairs[1:]:
            try:
                name = key.decode("utf-8")
            except UnicodeDecodeError:
                raise _data_loss(prefix, f"{index} has a key that is not UTF-8") from None
            self._entries[name] = self._checked_entry(name, value)

    def _parse(self, cls, data: bytes, what: str):
        parsed = cls()
        try:
            parsed.ParseFromString(data)
        except message.DecodeError as err:
            raise _data_loss(self.prefix, f"cannot parse {what}: {err}") from None
        return parsed

    def _checked_entry(self, name: str, value: bytes):
        entry = self._parse(BundleEntryProto, value, f"the entry of {name!r}")
        if entry.slices:
            raise _data_loss(self.prefix, f"{name!r} is stored in slices (a partitioned "
                             "variable), which is not supported")
        if not 0 <= entry.shard_id < self.num_shards or entry.offset < 0 or entry.size < 0:
            raise _data_loss(self.prefix, f"{name!r} has a bad shard, offset or size")
        try:
            dtype = dtype_from_enum(entry.dtype)
            np_dtype = np.dtype(dtype.as_numpy_dtype)
        except (TypeError, ValueError, KeyError):
            raise _data_loss(self.prefix, f"{name!r} has dtype enum {entry.dtype}, which "
                             "gradflow cannot read") from None
        shape = [d.size for d in entry.shape.dim]
        if entry.shape.unknown_rank or any(d < 0 for d in shape):
            raise _data_loss(self.prefix, f"{name!r} has a bad shape {shape}")
        if dtype is dtypes.string:
            return entry  # lengths are checked when the tensor is read
        if np_dtype.kind not in "biufc?":
            raise _data_loss(self.prefix, f"{name!r} is a {dtype.name} tensor, which gradflow "
                             "cannot read from a checkpoint")
        if int(np.prod(shape, dtype=object)) * np_dtype.itemsize != entry.size:
            raise _data_loss(self.prefix, f"{name!r} holds {entry.size} bytes, not the "
                             f"{np_dtype.itemsize} x {shape} its dtype and shape need")
        return entry

    def keys(self) -> list[str]:
        """The tensor names, sorted."""
        return list(self._entries)

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def dtype(self, name: str) -> dtypes.DType:
        return dtype_from_enum(self._entries[name].dtype)

    def shape(self, name: str) -> list[int]:
        return [d.size for d in self._entries[name].shape.dim]

    def read(self, name: str) -> np.ndarray:
        """The tensor ``name``, its checksum verified."""
        if name not in self._entries:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        entry = self._entries[name]
        path = data_filename(self.prefix, entry.shard_id, self.num_shards)
        if not os.path.isfile(path):
            raise errors.NotFoundError(None, None, f"{path}: data shard of checkpoint "
                                       f"{self.prefix} not found (or not a regular file)")
        if entry.offset + entry.size > os.path.getsize(path):
            raise _data_loss(self.prefix, f"{name!r} lies past the end of {path}")
        with open(path, "rb") as f:
            f.seek(entry.offset)
            raw = f.read(entry.size)
        if self.dtype(name) is dtypes.string:
            return self._strings(name, raw, path)
        if len(raw) != entry.size or mask(crc32c(raw)) != entry.crc32c:
            raise _data_loss(self.prefix, f"{name!r} fails its checksum in {path}")
        dtype = np.dtype(self.dtype(name).as_numpy_dtype)
        return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(
            self.shape(name))

    def _strings(self, name: str, raw: bytes, path: str) -> np.ndarray:
        """A string tensor from TF's layout (see ``_string_tensor_bytes``), both of its
        checksums verified."""
        count = int(np.prod(self.shape(name), dtype=np.int64))
        sizes, pos = [], 0
        for _ in range(count):
            size = shift = 0
            while True:
                if pos >= len(raw) or shift > 63:
                    raise _data_loss(self.prefix, f"{name!r} has bad string lengths in {path}")
                byte = raw[pos]
                pos += 1
                size |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            sizes.append(size)
        body = raw[pos + 4:]
        if len(body) != sum(sizes):
            raise _data_loss(self.prefix, f"{name!r} holds {len(body)} string bytes, not "
                             f"the {sum(sizes)} its lengths say, in {path}")
        items, start = [], 0
        for size in sizes:
            items.append(body[start:start + size])
            start += size
        words = _size_words(items)
        if raw[pos:pos + 4] != struct.pack("<I", mask(crc32c(words))) or \
                mask(crc32c(words + raw[pos:pos + 4] + body)) != self._entries[name].crc32c:
            raise _data_loss(self.prefix, f"{name!r} fails its checksum in {path}")
        out = np.empty(count, dtype=object)
        out[:] = items
        return out.reshape(self.shape(name))
