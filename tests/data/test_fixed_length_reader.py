"""``FixedLengthRecordReader`` (TF1's CIFAR-10 reader): records between a header and a
footer, hops, compressed files, its op and its argument checks."""
from __future__ import annotations

import gzip

import pytest

import gradflow as gf


def _read_all(path: str, **kwargs) -> tuple:
    graph = gf.Graph()
    with graph.as_default():
        queue = gf.FIFOQueue(4, gf.string)
        enqueue, close = queue.enqueue_many([[path]]), queue.close()
        reader = gf.FixedLengthRecordReader(**kwargs)
        key, value = reader.read(queue)
        assert reader.reader_ref.op.type == "FixedLengthRecordReaderV2"
        with gf.Session() as sess:
            sess.run([enqueue, close])
            records = []
            with pytest.raises(gf.errors.OutOfRangeError):
                while True:
                    records.append(tuple(sess.run([key, value])))
            return records, int(sess.run(reader.num_records_produced()))


@pytest.mark.parametrize("hop", [None, 3])
@pytest.mark.parametrize("encoding", [None, "GZIP"])
def test_records_between_header_and_footer(tmp_path, hop, encoding):
    body = b"abcdefghijk"  # 11 bytes: the last partial record is dropped
    path = str(tmp_path / "fixed.bin")
    data = b"HH" + body + b"FFF"
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if encoding else data)
    records, produced = _read_all(path, record_bytes=4, header_bytes=2, footer_bytes=3,
                                  hop_bytes=hop, encoding=encoding)
    step = hop or 4
    expected = [body[start:start + 4] for start in range(0, len(body) - 3, step)]
    assert [value for _, value in records] == expected
    assert [key.decode() for key, _ in records] == [f"{path}:{i}" for i in range(len(expected))]
    assert produced == len(expected)


def test_bad_arguments_raise_and_leave_the_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        with pytest.raises(ValueError, match="record_bytes"):
            gf.FixedLengthRecordReader(0)
        with pytest.raises(ValueError, match="hop_bytes"):
            gf.FixedLengthRecordReader(4, hop_bytes=-1)
        with pytest.raises(ValueError, match="encoding"):
            gf.FixedLengthRecordReader(4, encoding="BZ2")
        assert graph.get_operations() == []
