"""TFRecord files both ways with TF, Example protos, and the parsing ops against TF 2.21."""
from __future__ import annotations

import io
import os
import subprocess

import numpy as np
import pytest
from data_helpers import FIXTURE_DIR, drain, jsonable
from tf_fixtures import load_json

import gradflow as gf
from gradflow.io.tfrecord import read_records
from gradflow.ops import parsing_ops

PARSING = load_json("data")["parsing"]
SERIALIZED = [bytes.fromhex(s) for s in PARSING["serialized"]]
FEATURES = {"id": gf.FixedLenFeature([], gf.int64),
            "score": gf.FixedLenFeature([], gf.float32, default_value=-1.0),
            "tags": gf.VarLenFeature(gf.string),
            "vec": gf.FixedLenFeature([3], gf.float32),
            "seq": gf.FixedLenSequenceFeature([2], gf.int64, allow_missing=True)}


@pytest.mark.parametrize("name, options", [("data_examples.tfrecord", None),
                                           ("data_examples.tfrecord.gz", "GZIP")])
def test_reads_file_written_by_tf(name, options):
    records = list(gf.python_io.tf_record_iterator(str(FIXTURE_DIR / name), options))
    assert records == SERIALIZED
    example = gf.train.Example.FromString(records[0])
    assert list(example.features.feature["tags"].bytes_list.value) == [b"cat", b"dog"]
    assert list(example.features.feature["vec"].float_list.value) == [1.0, 2.0, 3.0]


def test_example_protos_serialize_as_tf():
    example = gf.train.Example(features=gf.train.Features(feature={
        "id": gf.train.Feature(int64_list=gf.train.Int64List(value=[1])),
        "score": gf.train.Feature(float_list=gf.train.FloatList(value=[0.5])),
        "tags": gf.train.Feature(bytes_list=gf.train.BytesList(value=[b"cat", b"dog"])),
        "vec": gf.train.Feature(float_list=gf.train.FloatList(value=[1, 2, 3])),
        "seq": gf.train.Feature(int64_list=gf.train.Int64List(value=[1, 2, 3, 4]))}))
    # map order differs between encoders: compare the decoded messages
    assert gf.train.Example.FromString(example.SerializeToString()) == \
        gf.train.Example.FromString(SERIALIZED[0])
    assert type(example).DESCRIPTOR.full_name == "tensorflow.Example"
    sequence = gf.train.SequenceExample.FromString(
        bytes.fromhex(PARSING["sequence_serialized"]))
    assert len(sequence.feature_lists.feature_list["tokens"].feature) == 3


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_write_read_roundtrip(tmp_path, compression):
    path = str(tmp_path / "r.tfrecord")
    options = gf.python_io.TFRecordOptions(compression)
    with gf.python_io.TFRecordWriter(path, options) as writer:
        for record in SERIALIZED + [b"", b"x" * 1000]:
            writer.write(record)
    assert list(gf.python_io.tf_record_iterator(path, options)) == SERIALIZED + [b"", b"x" * 1000]
    assert gf.io.TFRecordWriter is gf.python_io.TFRecordWriter
    assert gf.python_io.TFRecordOptions.get_compression_type_string(
        gf.python_io.TFRecordCompressionType.GZIP) == "GZIP"


def test_corrupted_record_is_data_loss(tmp_path):
    path = tmp_path / "bad.tfrecord"
    with gf.python_io.TFRecordWriter(str(path)) as writer:
        writer.write(b"hello world")
    data = bytearray(path.read_bytes())
    data[14] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(gf.errors.DataLossError, match="checksum"):
        list(read_records(str(path)))
    path.write_bytes(bytes(data[:20]))
    with pytest.raises(gf.errors.DataLossError, match="truncated record at 0"):
        list(read_records(str(path)))
    path.write_bytes(bytes(data[:10]))  # a partial header ends the file, as in TF 2.21
    assert list(read_records(str(path))) == []


def test_unsupported_options_raise():
    with pytest.raises(ValueError, match="mem_level is not supported"):
        gf.python_io.TFRecordOptions("GZIP", mem_level=8)
    with pytest.raises(ValueError, match="compression_type"):
        gf.python_io.TFRecordOptions("LZ4")


def test_tf_reads_file_written_by_gradflow(tmp_path):
    pytest.importorskip("tensorflow")  # runs only where TensorFlow is installed
    for compression in ("", "GZIP", "ZLIB"):
        path = str(tmp_path / f"g{compression}.tfrecord")
        with gf.python_io.TFRecordWriter(path, compression) as writer:
            for record in SERIALIZED:
                writer.write(record)
        import tensorflow as tf  # optional: only for this check
        got = [r.numpy() for r in tf.data.TFRecordDataset(path, compression or None)]
        assert got == SERIALIZED


@pytest.mark.slow
def test_tf_reads_gradflow_file_in_tf_env(tmp_path):
    """The same check through TF's own interpreter (``GRADFLOW_TF_PYTHON``), when it exists."""
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    try:
        subprocess.run([python, "-c", "import tensorflow"], check=True, capture_output=True,
                       timeout=120)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("no TensorFlow environment")
    path = str(tmp_path / "g.tfrecord.gz")
    with gf.python_io.TFRecordWriter(path, "GZIP") as writer:
        for record in SERIALIZED:
            writer.write(record)
    script = ("import sys, tensorflow as tf\n"
              "ex = [tf.train.Example.FromString(r.numpy()) for r in "
              "tf.data.TFRecordDataset(sys.argv[1], 'GZIP')]\n"
              "print(len(ex), ex[0].features.feature['id'].int64_list.value[0])\n")
    out = subprocess.run([python, "-c", script, path], capture_output=True, text=True,
                         timeout=120, env={"TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.stdout.split() == ["3", "1"]


def test_parse_example_as_tf():
    parsed = gf.parse_example(SERIALIZED, FEATURES)
    assert {k: (v.shape.as_list() if not isinstance(v, gf.SparseTensor) else "sparse")
            for k, v in parsed.items()} == PARSING["batch_shapes"]
    with gf.Session() as sess:
        got = jsonable(sess.run(parsed))
    expected = PARSING["batch"]
    assert got["id"] == expected["id"] and got["score"] == expected["score"]
    assert got["seq"] == expected["seq"] and got["vec"] == expected["vec"]
    assert [got["tags"]["indices"], got["tags"]["values"], got["tags"]["dense_shape"]] == \
        [expected["tags"][0]["value"], expected["tags"][1], expected["tags"][2]["value"]]


def test_parse_single_example_and_sequence_example_as_tf():
    single = gf.parse_single_example(SERIALIZED[0], {k: v for k, v in FEATURES.items()
                                                     if k != "seq"})
    context, sequence = gf.parse_single_sequence_example(
        bytes.fromhex(PARSING["sequence_serialized"]),
        context_features={"length": gf.FixedLenFeature([], gf.int64),
                          "name": gf.FixedLenFeature([], gf.string)},
        sequence_features={"tokens": gf.FixedLenSequenceFeature([2], gf.int64),
                           "words": gf.VarLenFeature(gf.string)})
    with gf.Session() as sess:
        got_single, got_context, got_sequence = jsonable(sess.run([single, context, sequence]))
    expected = PARSING["single"]
    assert got_single["tags"]["values"] == expected["tags"][1]
    assert got_single["tags"]["indices"] == expected["tags"][0]["value"]
    assert {k: got_single[k] for k in ("id", "score", "vec")} == \
        {k: expected[k] for k in ("id", "score", "vec")}
    expected_context, expected_sequence = PARSING["sequence"]
    assert got_context["length"] == expected_context["length"]
    assert got_context["name"] == expected_context["name"]
    assert got_sequence["tokens"] == expected_sequence["tokens"]
    assert got_sequence["words"]["indices"] == expected_sequence["words"][0]["value"]
    assert got_sequence["words"]["values"] == expected_sequence["words"][1]


def test_missing_required_feature_as_tf():
    parsed = gf.parse_single_example(SERIALIZED[2], {"score": gf.FixedLenFeature([],
                                                                                 gf.float32)})
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError) as err:
        sess.run(parsed)
    assert err.value.message.startswith(PARSING["missing"][1])


def test_decode_ops_as_tf():
    csv = gf.decode_csv(["1,2.5,x", "3,,\"q,r\"", ",4,"], [[0], [1.0], ["d"]])
    raw = gf.decode_raw([b"\x01\x00\x02\x00", b"\xff\xff\x03\x00"], gf.int16)
    split = gf.string_split(["a b  c", "", "dd"])
    split_empty = gf.string_split(["a,b,,c"], delimiter=",", skip_empty=False)
    with gf.Session() as sess:
        got = jsonable(sess.run([csv, raw, split, split_empty]))
    assert got[0] == PARSING["csv"]
    assert got[1] == PARSING["raw"]
    for mine, key in ((got[2], "split"), (got[3], "split_empty")):
        expected = PARSING[key]
        assert [mine["indices"], mine["values"], mine["dense_shape"]] == \
            [expected[0]["value"], expected[1], expected[2]["value"]]


def test_decode_png_and_jpeg():
    image_module = pytest.importorskip("PIL.Image")
    pixels = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    png, jpeg = io.BytesIO(), io.BytesIO()
    image_module.fromarray(pixels).save(png, "PNG")
    image_module.fromarray(pixels).save(jpeg, "JPEG", quality=95)
    decoded = gf.image.decode_png(png.getvalue())
    gray = gf.image.decode_png(png.getvalue(), channels=1)
    photo = gf.image.decode_jpeg(jpeg.getvalue())
    assert decoded.shape.as_list() == [None, None, None]
    assert gray.shape.as_list() == [None, None, 1]
    with gf.Session() as sess:
        got, got_gray, got_photo = sess.run([decoded, gray, photo])
    np.testing.assert_array_equal(got, pixels)
    assert got_gray.shape == (4, 4, 1) and got_photo.shape == (4, 4, 3)
    assert np.abs(got_photo.astype(int) - pixels).max() < 16
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError, match="PNG"):
        sess.run(gf.image.decode_png(b"not an image"))


def test_tfrecord_dataset_parses_examples(tmp_path):
    dataset = gf.data.TFRecordDataset(
        [str(FIXTURE_DIR / "data_examples.tfrecord")] * 2).map(
        lambda s: gf.parse_single_example(s, {"id": FEATURES["id"], "vec": FEATURES["vec"]}))
    element = dataset.make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        values = drain(sess, element)
    assert [int(v["id"]) for v in values] == [1, 2, 3, 1, 2, 3]
    np.testing.assert_array_equal(values[2]["vec"], [7.0, 8.0, 9.0])
    gz = gf.data.TFRecordDataset(str(FIXTURE_DIR / "data_examples.tfrecord.gz"), "GZIP",
                                 num_parallel_reads=2)
    with gf.Session() as sess:
        assert drain(sess, gz.make_one_shot_iterator().get_next()) == SERIALIZED


def test_text_line_and_fixed_length_datasets(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_bytes(b"one\ntwo\r\n\nthree")
    fixed = tmp_path / "fixed.bin"
    fixed.write_bytes(b"HDR" + b"aabbcc" + b"F")
    lines = gf.data.TextLineDataset(str(text)).make_one_shot_iterator().get_next()
    records = gf.data.FixedLengthRecordDataset(str(fixed), 2, header_bytes=3,
                                               footer_bytes=1).make_one_shot_iterator()
    with gf.Session() as sess:
        assert drain(sess, lines) == [b"one", b"two", b"", b"three"]
        assert drain(sess, records.get_next()) == [b"aa", b"bb", b"cc"]


def test_bad_parse_arguments_leave_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        serialized = gf.placeholder(gf.string, [None])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="need to be known"):
            gf.parse_example(serialized, {"a": gf.FixedLenFeature([None], gf.int64)})
        with pytest.raises(ValueError, match="allow_missing"):
            gf.parse_example(serialized, {"a": gf.FixedLenSequenceFeature([], gf.int64)})
        with pytest.raises(ValueError, match="Unsupported dtype"):
            gf.parse_example(serialized, {"a": gf.VarLenFeature(gf.int32)})
        with pytest.raises(ValueError, match="must be a scalar"):
            gf.parse_single_example(serialized, {"a": gf.VarLenFeature(gf.int64)})
        with pytest.raises(ValueError, match="RaggedTensor"):
            gf.string_split(["a"], result_type="RaggedTensor")
        assert [op.name for op in graph.get_operations()] == before


def test_decode_image_without_pillow_names_the_extra(monkeypatch):
    monkeypatch.setattr(parsing_ops, "Image", None)
    with gf.Session() as sess, pytest.raises(gf.errors.UnimplementedError,
                                             match=r"gradflow\[image\]"):
        sess.run(gf.image.decode_png(b"x"))
