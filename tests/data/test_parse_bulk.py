"""The bulk decoding of ``parse_example``/``parse_single_example`` against protobuf's own
parse, on the encodings writers produce and on the ones only hand-made bytes have
(unpacked lists, split packed runs, repeated keys, unknown fields), and TFRecord files
checked on NumPy when ``google_crc32c`` is missing."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import gradflow as gf
from gradflow.framework import errors
from gradflow.io import tfrecord

_KIND = {gf.float32: "float_list", gf.int64: "int64_list", gf.string: "bytes_list"}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _example(features: list) -> bytes:
    """An Example of ``(key, Feature bytes)`` entries, in order (keys may repeat)."""
    entries = b"".join(_field(1, _field(1, key.encode()) + _field(2, feature))
                       for key, feature in features)
    return _field(1, entries)


def _floats(values, packed: bool = True) -> bytes:
    body = _field(1, struct.pack(f"<{len(values)}f", *values)) if packed else \
        b"".join(b"\x0d" + struct.pack("<f", v) for v in values)
    return _field(2, body)


def _ints(values, packed: bool = True) -> bytes:
    body = _field(1, b"".join(_varint(v) for v in values)) if packed else \
        b"".join(b"\x08" + _varint(v) for v in values)
    return _field(3, body)


def _reference(record: bytes, key: str, dtype):
    """The values protobuf's own ``Example`` parse finds (None: the feature is absent)."""
    feature = gf.train.Example.FromString(record).features.feature.get(key)
    if feature is None or feature.WhichOneof("kind") is None:
        return None
    return np.array(list(getattr(feature, _KIND[dtype]).value), dtype.as_numpy_dtype)


def _run(fetches, records):
    """``fetches(serialized)`` run on a vector of ``records`` (a scalar: one record)."""
    value = np.array(records, dtype=object) if isinstance(records, list) else \
        np.array(records, dtype=object).reshape(())
    with gf.Graph().as_default():
        out = fetches(gf.placeholder_with_default(value, shape=value.shape))
        with gf.Session() as sess:
            return sess.run(out)


def _odd_encodings(rng) -> list:
    """Records whose "x" (3 floats) and "n" (2 int64) features are encoded every way."""
    records = []
    for i in range(12):
        x = rng.standard_normal(3).astype(np.float32).tolist()
        n = [int(v) for v in rng.integers(-(1 << 62), 1 << 62, 2)]
        n[0] = [-1, 0, 127, 128, 1 << 63 - 1, -(1 << 63)][i % 6]
        choice = i % 4
        if choice == 0:  # what writers give
            records.append(_example([("x", _floats(x)), ("n", _ints(n))]))
        elif choice == 1:  # unpacked lists
            records.append(_example([("x", _floats(x, False)), ("n", _ints(n, False))]))
        elif choice == 2:  # split packed runs, and a stale value for a repeated key
            split = _field(2, _field(1, struct.pack("<f", x[0]))
                           + _field(1, struct.pack("<2f", *x[1:])))
            records.append(_example([("x", _floats([9.0, 9.0, 9.0])), ("x", split),
                                     ("n", _ints(n[:1]) + _ints(n[1:]))]))
        else:  # an unknown field inside the list and inside the Feature
            records.append(_example([("x", _field(2, _field(1, struct.pack("<3f", *x))
                                                  + b"\x10\x05")),
                                     ("n", _ints(n) + b"\x20\x01")]))
    return records


@pytest.mark.parametrize("batched", [True, False])
def test_fixed_features_match_protobuf_on_every_encoding(batched):
    records = _odd_encodings(np.random.default_rng(0))
    spec = {"x": gf.FixedLenFeature([3], gf.float32), "n": gf.FixedLenFeature([2], gf.int64)}
    if batched:
        got = _run(lambda s: gf.parse_example(s, spec), records)
        rows = [(got["x"][i], got["n"][i]) for i in range(len(records))]
    else:
        rows = [(r["x"], r["n"]) for r in (
            _run(lambda s: gf.parse_single_example(s, spec), rec)
            for rec in records)]
    for record, (x, n) in zip(records, rows, strict=True):
        np.testing.assert_array_equal(x, _reference(record, "x", gf.float32))
        np.testing.assert_array_equal(n, _reference(record, "n", gf.int64))
        assert x.dtype == np.float32 and n.dtype == np.int64


def test_uniform_batches_decode_in_bulk_with_defaults_and_errors():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 4)).astype(np.float32)
    labels = rng.integers(-5, 1 << 40, 40)
    records = [_example([("x", _floats(row.tolist())), ("y", _ints([int(v)]))])
               for row, v in zip(x, labels, strict=True)]
    spec = {"x": gf.FixedLenFeature([2, 2], gf.float32), "y": gf.FixedLenFeature([], gf.int64),
            "z": gf.FixedLenFeature([2], gf.float32, default_value=[1.5, 2.5])}
    got = _run(lambda s: gf.parse_example(s, spec), records)
    np.testing.assert_array_equal(got["x"], x.reshape(40, 2, 2))
    np.testing.assert_array_equal(got["y"], labels)
    np.testing.assert_array_equal(got["z"], np.tile([1.5, 2.5], (40, 1)))
    assert got["x"].flags.writeable
    wrong_count = records[:5] + [_example([("x", _floats([1.0])), ("y", _ints([1]))])]
    with pytest.raises(errors.InvalidArgumentError, match=r"Key: x, Index: 0.  Number of "
                       r"float values != expected.*\(example 5\)"):
        _run(lambda s: gf.parse_example(s, spec), wrong_count)
    wrong_kind = records[:3] + [_example([("x", _ints([1, 2, 3, 4])), ("y", _ints([1]))])]
    with pytest.raises(errors.InvalidArgumentError, match="Data types don't match"):
        _run(lambda s: gf.parse_example(s, spec), wrong_kind)
    truncated = records[:2] + [_example([("x", _floats([1.0] * 4)),
                                         ("y", _field(3, _field(1, b"\x80")))])]
    with pytest.raises(errors.InvalidArgumentError):
        _run(lambda s: gf.parse_example(s, spec), truncated)


def test_records_of_one_layout_are_cut_together_and_others_looked_up():
    """Same-length records: values cut from all at once only where nothing but the values
    asked for differ (a varint may split differently); any other difference (a key, a
    feature not asked for) takes the per-record path, with the same results."""
    base = [("ab", _ints([128, 1])), ("f", _floats([1.0, 2.0])), ("s", _ints([7]))]
    records = [_example(base),
               _example([("ab", _ints([1, 128])), ("f", _floats([3.0, 4.0])), ("s", _ints([7]))]),
               _example([("ab", _ints([5, 300])), ("f", _floats([5.0, 6.0])), ("s", _ints([7]))])]
    spec = {"ab": gf.FixedLenFeature([2], gf.int64), "f": gf.FixedLenFeature([2], gf.float32),
            "v": gf.VarLenFeature(gf.int64)}
    got = _run(lambda s: gf.parse_example(s, spec), records)
    np.testing.assert_array_equal(got["ab"], [[128, 1], [1, 128], [5, 300]])
    np.testing.assert_array_equal(got["f"], [[1, 2], [3, 4], [5, 6]])
    assert got["v"].values.size == 0 and list(got["v"].dense_shape) == [3, 0]
    other_key = records[:2] + [_example([("ac", _ints([1, 2])), ("f", _floats([0.0, 0.0])),
                                         ("s", _ints([7]))])]
    with pytest.raises(errors.InvalidArgumentError, match="Feature: ab .* is required"):
        _run(lambda s: gf.parse_example(s, spec), other_key)
    unasked = records[:2] + [_example([("ab", _ints([2, 3])), ("f", _floats([0.5, 0.5])),
                                       ("s", _ints([8]))])]
    got = _run(lambda s: gf.parse_example(s, {"s": gf.FixedLenFeature([], gf.int64),
                                               "ab": gf.FixedLenFeature([2], gf.int64)}),
               unasked)
    np.testing.assert_array_equal(got["s"], [7, 7, 8])
    np.testing.assert_array_equal(got["ab"], [[128, 1], [1, 128], [2, 3]])
    spread = [_example([("ab", _ints([1, 2, 3])), ("f", _floats([1.0, 2.0])),
                        ("s", _ints([7]))]), records[0]]
    with pytest.raises(errors.InvalidArgumentError, match=r"Number of int64 values != "
                       r"expected.*\(example 0\)"):
        _run(lambda s: gf.parse_example(s, spec), spread)


@pytest.mark.parametrize("dtype", [gf.float32, gf.int64])
def test_var_len_features_match_protobuf(dtype):
    rng = np.random.default_rng(2)
    encode = _floats if dtype is gf.float32 else _ints
    records = []
    for i in range(9):
        values = rng.integers(-300, 300, i % 4).tolist()
        values = [float(v) for v in values] if dtype is gf.float32 else values
        records.append(_example([("v", encode(values, packed=i % 3 != 2))] if i % 5 else []))
    sparse = _run(lambda s: gf.parse_example(s, {"v": gf.VarLenFeature(dtype)})["v"], records)
    rows = [_reference(r, "v", dtype) for r in records]
    rows = [np.zeros(0, dtype.as_numpy_dtype) if r is None else r for r in rows]
    expected_indices = [(b, j) for b, row in enumerate(rows) for j in range(len(row))]
    np.testing.assert_array_equal(sparse.indices.reshape(-1, 2),
                                  np.array(expected_indices).reshape(-1, 2))
    np.testing.assert_array_equal(sparse.values, np.concatenate(rows))
    assert sparse.values.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(sparse.dense_shape, [len(rows), max(map(len, rows))])
    single = _run(lambda s: gf.parse_single_example(s, {"v": gf.VarLenFeature(dtype)})["v"],
                  records[3])
    np.testing.assert_array_equal(single.values, rows[3])
    np.testing.assert_array_equal(single.indices, np.arange(len(rows[3])).reshape(-1, 1))


def _write(path: str, records: list) -> None:
    with gf.python_io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)


@pytest.mark.parametrize("crc", ["google_crc32c", "numpy"])
def test_tfrecords_are_checked_in_bulk_on_either_crc(tmp_path, monkeypatch, crc):
    if crc == "numpy":
        monkeypatch.setattr(tfrecord, "google_crc32c", None)
    rng = np.random.default_rng(3)
    records = [bytes(rng.integers(0, 256, 40 if i % 3 else int(rng.integers(0, 90)),
                                  dtype=np.uint8)) for i in range(60)]
    path = str(tmp_path / "r.tfrecord")
    _write(path, records)
    assert list(tfrecord.read_records(path)) == records
    data = bytearray(open(path, "rb").read())
    offsets = np.cumsum([0] + [16 + len(r) for r in records])
    data[offsets[37] + 12] ^= 1  # a data byte of record 37
    with open(path, "wb") as f:
        f.write(bytes(data))
    read = []
    with pytest.raises(errors.DataLossError, match=f"corrupted record at {offsets[37] + 12} "):
        for record in tfrecord.read_records(path):
            read.append(record)
    assert read == records[:37]
    data[offsets[37] + 12] ^= 1
    data[offsets[20] + 2] ^= 1  # the length of record 20
    with open(path, "wb") as f:
        f.write(bytes(data))
    read = []
    with pytest.raises(errors.DataLossError, match=f"corrupted record at {offsets[20]} "
                       r"\(length checksum"):
        for record in tfrecord.read_records(path):
            read.append(record)
    assert read == records[:20]


def test_an_empty_batch_parses_to_empty_tensors_as_tf():
    spec = {"x": gf.FixedLenFeature([2], gf.float32), "v": gf.VarLenFeature(gf.int64),
            "q": gf.FixedLenSequenceFeature([], gf.int64, allow_missing=True)}
    got = _run(lambda s: gf.parse_example(s, spec), [])
    assert got["x"].shape == (0, 2) and got["q"].shape == (0, 0)  # TF 2.21's shapes
    assert got["v"].indices.shape == (0, 2) and got["v"].values.shape == (0,)
    assert got["v"].dense_shape.tolist() == [0, 0]
