"""Hostile record files (issue 20, item 7): TFRecord files and event files read through
``tf_record_iterator``, ``TFRecordDataset`` and ``summary_iterator``. Special files are
refused at once, declared lengths are checked before anything is allocated, corrupt and
truncated files end in TF's ``DataLossError`` naming the file and the offset, and a
compression bomb costs only a bounded amount of memory."""
import contextlib
import gzip
import os
import signal
import struct
import time
import tracemalloc
import zlib

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradflow as gf
from gradflow.framework import errors
from gradflow.io.tfrecord import masked_crc32c, read_records

FUZZ_EXAMPLES = int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
RECORDS = [b"hello", b"", b"x" * 3000, bytes(range(256))]
PEAK_BYTES = 8 << 20  # what a refused hostile file may make the reader allocate
# A first record every reader accepts (summary_iterator parses records as Events).
FIRST = gf.summary.Event(wall_time=1.0, step=1).SerializeToString()


@contextlib.contextmanager
def watchdog(seconds: int = 10):
    """Fails the case instead of hanging forever."""
    def expire(*_):
        raise TimeoutError(f"no answer within {seconds} s: the reader hangs")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _frame(record: bytes, length: int = None) -> bytes:
    header = struct.pack("<Q", len(record) if length is None else length)
    return (header + struct.pack("<I", masked_crc32c(header)) + record
            + struct.pack("<I", masked_crc32c(record)))


def _valid(tmp_path, compression: str = "") -> str:
    path = str(tmp_path / f"valid{compression}.tfrecord")
    with gf.python_io.TFRecordWriter(path, compression) as writer:
        for record in RECORDS:
            writer.write(record)
    return path


def _read_with_iterator(path: str, compression: str = "") -> list:
    return list(gf.python_io.tf_record_iterator(path, compression))


def _read_with_dataset(path: str, compression: str = "") -> list:
    with gf.Graph().as_default():
        element = gf.data.TFRecordDataset(path, compression).make_one_shot_iterator().get_next()
        out = []
        with gf.Session() as sess:
            while True:
                try:
                    out.append(sess.run(element))
                except errors.OutOfRangeError:
                    return out


def _read_with_summary(path: str, compression: str = "") -> list:
    return list(gf.summary.summary_iterator(path))


READERS = {"tf_record_iterator": _read_with_iterator, "TFRecordDataset": _read_with_dataset,
           "summary_iterator": _read_with_summary}
# The error each reader raises for a reading error: a session run turns a kernel's
# ValueError into InvalidArgumentError (TF's OpError types pass through).
ERRORS = {"tf_record_iterator": lambda error: error, "summary_iterator": lambda error: error,
          "TFRecordDataset": lambda error: (errors.InvalidArgumentError
                                            if error is ValueError else error)}


def _refused(reader, path: str, error, match: str, compression: str = "") -> tuple:
    """``reader`` raises ``error`` matching ``match`` and naming ``path``; returns the
    seconds and the peak bytes allocated meanwhile."""
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with watchdog(), pytest.raises(error, match=match) as raised:
            reader(path, compression)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path in str(raised.value)
    return time.perf_counter() - start, peak


def test_valid_files_round_trip(tmp_path):
    for compression in ("", "GZIP", "ZLIB"):
        path = _valid(tmp_path, compression)
        assert _read_with_iterator(path, compression) == RECORDS
        assert _read_with_dataset(path, compression) == RECORDS


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_file_that_is_not_regular_is_refused_at_once(tmp_path, reader, kind):
    path = str(tmp_path / "special")
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    seconds, peak = _refused(READERS[reader], path, ERRORS[reader](ValueError),
                             "not a regular file")
    assert seconds < 1 and peak < PEAK_BYTES


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_missing_file_is_not_found(tmp_path, reader):
    _refused(READERS[reader], str(tmp_path / "missing"), errors.NotFoundError,
             "No such file")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_huge_declared_length_is_refused_before_allocating(tmp_path, reader):
    path = str(tmp_path / "huge")
    with open(path, "wb") as f:  # TF 2.21 aborts the process on this file
        f.write(_frame(FIRST) + _frame(b"abc", length=1 << 40))
    seconds, peak = _refused(READERS[reader], path, ERRORS[reader](errors.DataLossError),
                             f"truncated record at {16 + len(FIRST)}")
    assert seconds < 1 and peak < PEAK_BYTES


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_compressed_length_beyond_the_cap_is_refused(tmp_path, compression):
    path = str(tmp_path / "capped")
    data = _frame(b"abc", length=1 << 40)
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if compression == "GZIP" else zlib.compress(data))
    seconds, peak = _refused(_read_with_iterator, path, errors.DataLossError,
                             "record at 0 declares 1099511627776 bytes, more than the limit",
                             compression)
    assert seconds < 1 and peak < PEAK_BYTES


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("byte, match", [(9, "corrupted record at 0 .*length checksum"),
                                         (13, "corrupted record at 12 .*data checksum")])
def test_a_bad_crc_is_data_loss_at_its_offset(tmp_path, reader, byte, match):
    path = str(tmp_path / "bad_crc")
    data = bytearray(_frame(b"hello") + _frame(b"world"))
    data[byte] ^= 0x01
    with open(path, "wb") as f:
        f.write(bytes(data))
    seconds, peak = _refused(READERS[reader], path, ERRORS[reader](errors.DataLossError),
                             match)
    assert seconds < 1 and peak < PEAK_BYTES


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_truncation_ends_as_in_tf(tmp_path, compression):
    """TF 2.21: a partial header at the end ends the file quietly; a record whose data is
    cut is ``DataLossError: truncated record at <offset>``; so is a cut compressed stream."""
    raw = _frame(b"hello") + _frame(b"world!!")
    path = str(tmp_path / "cut")

    def write(data: bytes) -> None:
        packed = {"": data, "GZIP": gzip.compress(data), "ZLIB": zlib.compress(data)}
        with open(path, "wb") as f:
            f.write(packed[compression])

    write(raw[:21 + 5])
    assert _read_with_iterator(path, compression) == [b"hello"]
    write(raw[:-3])
    _refused(_read_with_iterator, path, errors.DataLossError, "truncated record at 21",
             compression)
    if compression:
        with open(path, "wb") as f:
            f.write((gzip.compress(raw) if compression == "GZIP" else zlib.compress(raw))[:-9])
        _refused(_read_with_iterator, path, errors.DataLossError, "truncated record at",
                 compression)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_compression_bomb_is_inflated_only_as_far_as_it_is_read(tmp_path, compression):
    """A ~60 KB file whose record declares 512 MiB (within the cap) and inflates to
    64 MiB before it ends: refused as truncated, inflated in bounded pieces."""
    path = str(tmp_path / "bomb")
    header = struct.pack("<Q", 512 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if compression == "GZIP" else 15)
    parts = [packer.compress(header + struct.pack("<I", masked_crc32c(header)))]
    zeros = bytes(1 << 20)
    parts += [packer.compress(zeros) for _ in range(64)]
    parts.append(packer.flush())
    with open(path, "wb") as f:
        f.write(b"".join(parts))
    assert os.path.getsize(path) < 100_000
    seconds, peak = _refused(_read_with_iterator, path, errors.DataLossError,
                             "truncated record at 0", compression)
    assert seconds < 1 and peak < (64 << 20) + PEAK_BYTES  # what it inflated, once


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_bomb_beyond_the_record_cap_is_refused_unread(tmp_path, compression):
    path = str(tmp_path / "bomb")
    header = struct.pack("<Q", 64 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if compression == "GZIP" else 15)
    parts = [packer.compress(header + struct.pack("<I", masked_crc32c(header)))]
    parts += [packer.compress(bytes(1 << 20)) for _ in range(64)]
    parts.append(packer.flush())
    with open(path, "wb") as f:
        f.write(b"".join(parts))
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with watchdog(), pytest.raises(errors.DataLossError, match="more than the limit"):
            list(read_records(path, compression, max_record_bytes=1 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 1 and peak < PEAK_BYTES


# ------------------------------------------------------------------- fuzzing
def _event_file(tmp_path) -> str:
    folder = str(tmp_path / "events")
    with gf.Graph().as_default():
        writer = gf.summary.FileWriter(folder)
        for step in range(3):
            writer.add_summary(gf.summary.Summary(value=[
                gf.summary.Summary.Value(tag="loss", simple_value=float(step))]), step)
        writer.close()
    return os.path.join(folder, os.listdir(folder)[0])


def _mutations():
    flip = st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(1, 255))
    cut = st.tuples(st.just("cut"), st.integers(0, 1 << 20), st.just(0))
    insert = st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.integers(0, 255))
    return st.lists(st.one_of(flip, cut, insert), min_size=1, max_size=4)


def _mutate(data: bytes, edits) -> bytes:
    data = bytearray(data)
    for kind, where, value in edits:
        where = where % (len(data) + 1)
        if kind == "flip" and where < len(data):
            data[where] ^= value
        elif kind == "cut":
            del data[where:]
        elif kind == "insert":
            data[where:where] = bytes([value])
    return bytes(data)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_fuzz_mutated_record_files(tmp_path, compression):
    original = open(_valid(tmp_path, compression), "rb").read()
    path = str(tmp_path / "fuzzed")

    @FUZZ
    @given(_mutations())
    def check(edits):
        with open(path, "wb") as f:
            f.write(_mutate(original, edits))
        with watchdog():
            try:
                records = _read_with_iterator(path, compression)
            except errors.DataLossError as err:
                assert path in str(err)
                return
        assert all(isinstance(r, bytes) for r in records)

    check()


def test_fuzz_mutated_event_files(tmp_path):
    original = open(_event_file(tmp_path), "rb").read()
    path = str(tmp_path / "fuzzed_events")

    @FUZZ
    @given(_mutations())
    def check(edits):
        with open(path, "wb") as f:
            f.write(_mutate(original, edits))
        with watchdog():
            try:
                events = list(gf.summary.summary_iterator(path))
            except errors.DataLossError as err:
                assert path in str(err)
                return
            except DecodeError:
                return  # a record with good CRCs that is not an Event proto, as in TF
        assert all(isinstance(e, gf.summary.Event) for e in events)

    check()
