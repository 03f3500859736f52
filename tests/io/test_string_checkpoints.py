"""String variables in V2 checkpoints: TF's layout (varint lengths, a checksum of the
lengths, the bytes), read from a checkpoint TF wrote and written byte for byte as TF."""
import pathlib

import numpy as np
import pytest

import gradflow as gf
from gradflow.io.tensor_bundle import BundleReader, write_bundle
from tf_fixtures import FIXTURES

TF_CHECKPOINT = str(FIXTURES / "strings_io_ckpt")
EXPECTED = {"v": [b"a", "\u00e9t\u00e9".encode(), b""], "w": b"scalar", "x": [[b"\xff" * 200]]}


def test_reads_tfs_string_checkpoint():
    reader = BundleReader(TF_CHECKPOINT)
    for name, value in EXPECTED.items():
        assert reader.dtype(name) is gf.string
        assert reader.read(name).tolist() == value


def test_writes_tfs_bytes(tmp_path):
    prefix = str(tmp_path / "ckpt")
    write_bundle(prefix, {name: np.array(value, dtype=object)
                          for name, value in EXPECTED.items()})
    for suffix in (".index", ".data-00000-of-00001"):
        assert pathlib.Path(prefix + suffix).read_bytes() == \
            pathlib.Path(TF_CHECKPOINT + suffix).read_bytes()


def test_saver_restores_and_saves_string_variables(tmp_path):
    with gf.Graph().as_default():
        v = gf.Variable(["x", "y", "z"], name="v")
        w = gf.Variable("q", name="w")
        x = gf.Variable([[""]], name="x")
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            saver.restore(sess, TF_CHECKPOINT)
            assert sess.run(v).tolist() == EXPECTED["v"] and sess.run(w) == EXPECTED["w"]
            assert sess.run(x).tolist() == EXPECTED["x"]
            path = saver.save(sess, str(tmp_path / "again"))
            sess.run(gf.assign(w, "changed"))
            saver.restore(sess, path)
            assert sess.run(w) == b"scalar"


def test_corrupt_string_lengths_are_data_loss(tmp_path):
    prefix = str(tmp_path / "ckpt")
    write_bundle(prefix, {"s": np.array([b"abc", b"de"], dtype=object)})
    data = pathlib.Path(prefix + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[0] = 4  # the first length: 4 bytes instead of 3
    data.write_bytes(bytes(raw))
    with pytest.raises(gf.errors.DataLossError, match="'s'"):
        BundleReader(prefix).read("s")
