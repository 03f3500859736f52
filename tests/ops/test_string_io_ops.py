"""Strings and ``tf.io`` ops beyond the recorded cases: the namespaces hold TF's names,
files round-trip, bad calls leave the graph as it was, and none of the ops has a gradient."""
import gzip
import os
import zlib

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

NAMES = load_json("strings_io")["names"]
# TF's names gradflow does not have, each for a reason docs/strings_and_io.md gives.
MISSING = {"strings": {"unicode_script"},
           "io": {"RaggedFeature", "SparseFeature", "decode_proto", "encode_proto"}}
IMAGE_CODECS = {"decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image",
                "decode_jpeg", "decode_jxl", "decode_png", "decode_webp", "encode_jpeg",
                "encode_png", "extract_jpeg_shape", "is_jpeg"}


def public(module) -> set:
    return {n for n in dir(module) if not n.startswith("_")}


def test_strings_namespace_is_tfs():
    assert public(gf.strings) == set(NAMES["strings"]) - MISSING["strings"]


def test_io_namespace_is_tfs_with_the_image_codecs_gf_image_has():
    images = {n for n in IMAGE_CODECS if hasattr(gf.image, n)}
    expected = set(NAMES["io"]) - MISSING["io"] - (IMAGE_CODECS - images)
    assert public(gf.io) == expected
    assert public(gf.io.gfile) >= set(NAMES["io.gfile"]) - {"get_registered_schemes"}
    assert gf.compat.v1.io is gf.io and gf.io.decode_png is gf.image.decode_png


def test_format_modules_stay_importable():
    from gradflow.io import graph_def, tfrecord  # noqa: F401 - the internal package
    assert not hasattr(gf.io, "tfrecord") and not hasattr(gf.io, "graph_def")


def test_top_level_names():
    for name in ("as_string", "string_join", "string_strip", "string_to_number",
                 "string_to_hash_bucket", "string_to_hash_bucket_fast",
                 "string_to_hash_bucket_strong", "substr", "reduce_join", "regex_replace",
                 "read_file", "write_file", "matching_files", "decode_base64",
                 "encode_base64", "serialize_tensor", "parse_tensor", "decode_compressed",
                 "decode_json_example", "serialize_sparse", "serialize_many_sparse",
                 "deserialize_many_sparse"):
        assert getattr(gf, name) is getattr(gf.compat.v1, name), name
    assert gf.read_file is gf.io.read_file and gf.strings.join is gf.string_join


def test_write_read_and_match_files(tmp_path, sess):
    target = str(tmp_path / "sub" / "a.txt")
    write = gf.write_file(target, "h\u00e9llo")
    assert write.type == "WriteFile" and sess.run(write) is None
    (tmp_path / "sub" / "b.txt").write_bytes(b"\xff")
    assert sess.run(gf.read_file(target)) == "h\u00e9llo".encode()
    found = sess.run(gf.matching_files(str(tmp_path / "sub" / "*.txt")))
    assert found.tolist() == [target.encode(), str(tmp_path / "sub" / "b.txt").encode()]
    with pytest.raises(gf.errors.NotFoundError):
        sess.run(gf.read_file(str(tmp_path / "missing")))


def test_feeds_of_str_are_utf8_bytes(sess):
    text = gf.placeholder(gf.string, [None])
    joined = gf.strings.join([text, "!"])
    assert sess.run(joined, {text: ["a", "\u00e9"]}).tolist() == [b"a!", "\u00e9!".encode()]
    assert sess.run(joined, {text: np.array(["\u00e9"])}).tolist() == ["\u00e9!".encode()]
    with pytest.raises(TypeError, match="string"):
        sess.run(joined, {text: [1, 2]})


def test_decode_compressed_zlib_gzip(sess):
    data = [zlib.compress(b"abc" * 50), b"x"]
    assert sess.run(gf.decode_compressed(data[:1], "ZLIB")).tolist() == [b"abc" * 50]
    assert sess.run(gf.decode_compressed([gzip.compress(b"q")], "GZIP")).tolist() == [b"q"]
    with pytest.raises(gf.errors.DataLossError):
        sess.run(gf.decode_compressed(data[1:], "ZLIB"))


def test_serialize_tensor_round_trips_every_dtype(sess):
    for value in (np.arange(6, dtype=np.float64).reshape(2, 3), np.array([True, False]),
                  np.array([1 + 2j], np.complex64), np.array(7, np.uint8),
                  np.array([b"a", b"\x00b"], dtype=object)):
        dtype = gf.string if value.dtype == object else gf.as_dtype(value.dtype)
        parsed = sess.run(gf.parse_tensor(gf.serialize_tensor(value), dtype))
        np.testing.assert_array_equal(parsed, value)


def test_sparse_serialization_round_trips(sess):
    sp = gf.SparseTensor([[0, 0, 1], [1, 1, 0], [1, 2, 2]], ["a", "b", "c"], [2, 3, 4])
    back = sess.run(gf.deserialize_many_sparse(gf.serialize_many_sparse(sp), gf.string))
    assert back.indices.tolist() == [[0, 0, 1], [1, 1, 0], [1, 2, 2]]
    assert back.values.tolist() == [b"a", b"b", b"c"] and back.dense_shape.tolist() == [2, 3, 4]


def test_bytes_of_every_string_kernel_are_plain_bytes(sess):
    fetched = sess.run([gf.as_string([1]), gf.substr(["ab"], 0, 1), gf.strings.upper(["a"]),
                        gf.reduce_join([["a", "b"]], 1), gf.encode_base64(["a"]),
                        gf.strings.format("{}", [1]), gf.zeros([1], gf.string)])
    for value in fetched:
        items = [value] if isinstance(value, bytes) else list(value.reshape(-1))
        assert all(type(item) is bytes for item in items), value


BAD_CALLS = [
    lambda t: gf.as_string(t.numbers, precision="x"),
    lambda t: gf.string_join([t.pair, t.triple]),
    lambda t: gf.string_to_number(t.one, out_type=gf.bool),
    lambda t: gf.string_to_number(t.one, input=["2"]),
    lambda t: gf.string_to_hash_bucket_fast(t.one, 0),
    lambda t: gf.string_to_hash_bucket_strong(t.one, 3, ["k", 1]),
    lambda t: gf.substr(t.one, 0.5, 1),
    lambda t: gf.reduce_join(t.matrix, 2),
    lambda t: gf.strings.regex_full_match(t.numbers, "a"),
    lambda t: gf.strings.length(t.one, unit="WORD"),
    lambda t: gf.strings.lower(t.one, encoding="latin-1"),
    lambda t: gf.strings.format("{}", [t.numbers, t.numbers]),
    lambda t: gf.strings.unsorted_segment_join(t.pair, [0.5, 1.5], 2),
    lambda t: gf.strings.ngrams(t.pair, 0),
    lambda t: gf.strings.ngrams(t.pair, 2, padding_width=1),
    lambda t: gf.strings.bytes_split(t.pair),
    lambda t: gf.strings.unicode_decode(t.pair, "UTF-8"),
    lambda t: gf.strings.unicode_split(t.scalar, "latin-1"),
    lambda t: gf.strings.unicode_encode(t.cube, "UTF-8"),
    lambda t: gf.strings.unicode_transcode(t.one, "UTF-8", "latin-1"),
    lambda t: gf.read_file(t.pair),
    lambda t: gf.write_file(t.scalar, t.numbers),
    lambda t: gf.decode_compressed(t.one, "BZIP2"),
    lambda t: gf.encode_base64(t.numbers),
    lambda t: gf.serialize_sparse(t.numbers),
    lambda t: gf.serialize_sparse(t.sparse, out_type=gf.variant),
    lambda t: gf.parse_tensor(t.pair, gf.float32),
    lambda t: gf.strings.split(t.pair, result_type="RaggedTensor"),
]


class Inputs:
    """The tensors the bad calls take, built before the graph is compared."""

    def __init__(self):
        self.scalar = gf.constant("a")
        self.one = gf.constant(["1"])
        self.pair = gf.constant(["a", "b"])
        self.triple = gf.constant(["c", "d", "e"])
        self.matrix = gf.constant([["a"]])
        self.numbers = gf.constant([1, 2])
        self.cube = gf.constant([[[1, 2]]])
        self.sparse = gf.SparseTensor([[0]], [1.0], [2])


@pytest.mark.parametrize("call", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_calls_raise_and_leave_the_graph_as_it_was(call):
    graph = gf.Graph()
    with graph.as_default():
        inputs = Inputs()
        before = [op.name for op in graph.get_operations()]
        collections = {key: list(graph.get_collection(key))
                       for key in graph.get_all_collection_keys()}
        with pytest.raises((TypeError, ValueError)):
            call(inputs)
        assert [op.name for op in graph.get_operations()] == before
        assert {key: list(graph.get_collection(key))
                for key in graph.get_all_collection_keys()} == collections
        gf.identity(inputs.one, name="after")  # names are as if nothing had happened
        assert graph.get_operations()[-1].name == "after"


def test_string_ops_have_no_gradient():
    x = gf.constant([1.5, 2.0])
    text = gf.as_string(x)
    number = gf.string_to_number(gf.strings.join([text, "0"]))
    assert gf.gradients(number, [x]) == [None]


def test_read_file_is_not_folded(tmp_path, sess):
    path = str(tmp_path / "f")
    with open(path, "wb") as handle:
        handle.write(b"one")
    contents = gf.read_file(path)
    assert sess.run(contents) == b"one"
    os.remove(path)
    with open(path, "wb") as handle:
        handle.write(b"two")
    assert sess.run(contents) == b"two"


def test_reader_results_are_tfs_named_tuples(tmp_path, sess):
    path = str(tmp_path / "lines.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("h\u00e9\nb\n")
    queue = gf.FIFOQueue(3, gf.string)
    sess.run(queue.enqueue_many([[path]]))
    sess.run(queue.close())
    record = gf.TextLineReader().read(queue)
    assert type(record).__name__ == "ReaderReadV2" and record.key is record[0]
    fetched = sess.run(record)
    assert type(fetched).__name__ == "ReaderReadV2"
    assert fetched.key == f"{path}:1".encode() and fetched.value == "h\u00e9".encode()
    batch = gf.TextLineReader().read_up_to(queue, 2)
    assert batch._fields == ("keys", "values")
