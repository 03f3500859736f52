"""Hostile TF files: V2 checkpoints (index table + data shard) mutated, truncated or
replaced by random bytes. Only clean, documented errors come out (DataLossError,
NotFoundError, ValueError naming the checkpoint), within bounded memory and time."""
import os
import shutil
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradflow as gf
from gradflow.framework import errors
from tf_fixtures import FIXTURES

FUZZ = settings(max_examples=int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", "60")),
                deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
CLEAN = (ValueError, errors.NotFoundError, errors.DataLossError)
SOURCE = FIXTURES / "files" / "model.ckpt"
MEMORY_LIMIT = 8 << 20  # far below what a hostile size field could ask for


@st.composite
def byte_edits(draw, data: bytes) -> bytes:
    """``data`` with a few bytes overwritten, a slice cut out, or truncated."""
    data = bytearray(data)
    kind = draw(st.sampled_from(["flip", "cut", "truncate", "grow"]))
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif kind == "cut":
        start = draw(st.integers(0, len(data) - 1))
        del data[start:start + draw(st.integers(1, 16))]
    elif kind == "truncate":
        del data[draw(st.integers(0, len(data) - 1)):]
    else:
        data[draw(st.integers(0, len(data))):0] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


def _read_everything(prefix: str) -> None:
    """Opens the checkpoint and reads every tensor, as a restore would."""
    tracemalloc.start()
    try:
        try:
            reader = gf.train.NewCheckpointReader(prefix)
            reader.get_variable_to_shape_map()
            for name in reader.keys():
                reader.get_tensor(name)
        except CLEAN as err:
            assert prefix in str(err) or "Key" in str(err), err
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_LIMIT


@pytest.fixture
def copy(tmp_path):
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(str(SOURCE) + suffix, tmp_path / ("m" + suffix))
    return tmp_path


def test_fuzz_index_bytes(copy):
    index = (copy / "m.index").read_bytes()

    @FUZZ
    @given(byte_edits(index) | st.binary(max_size=300))
    def check(data):
        (copy / "m.index").write_bytes(data)
        _read_everything(str(copy / "m"))
    check()


def test_fuzz_data_bytes(copy):
    shard = (copy / "m.data-00000-of-00001").read_bytes()

    @FUZZ
    @given(byte_edits(shard))
    def check(data):
        (copy / "m.data-00000-of-00001").write_bytes(data)
        _read_everything(str(copy / "m"))
    check()


def test_corrupt_files_name_the_checkpoint(copy):
    shard = copy / "m.data-00000-of-00001"
    data = bytearray(shard.read_bytes())
    data[5] ^= 0xFF
    shard.write_bytes(bytes(data))
    reader = gf.train.NewCheckpointReader(str(copy / "m"))
    with pytest.raises(errors.DataLossError, match="fails its checksum"):
        reader.get_tensor("conv/bias")
    shard.unlink()
    with pytest.raises(errors.NotFoundError, match="data shard"):
        reader.get_tensor("conv/bias")
    (copy / "m.index").write_bytes(b"\x00" * 100)
    with pytest.raises(errors.DataLossError, match="bad magic number"):
        gf.train.NewCheckpointReader(str(copy / "m"))
    (copy / "m.index").unlink()
    (copy / "m.index").mkdir()
    with pytest.raises(errors.DataLossError, match="not a regular file"):
        gf.train.NewCheckpointReader(str(copy / "m"))
    with pytest.raises(errors.NotFoundError, match="nothing_here"):
        gf.train.NewCheckpointReader(str(copy / "nothing_here"))


def test_a_failed_restore_changes_no_variable(copy):
    (copy / "m.data-00000-of-00001").write_bytes(b"\x00" * 10)
    with gf.Graph().as_default():
        v = gf.Variable(np.ones(4, np.float32), name="conv/bias")
        with gf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(errors.DataLossError, match="past the end"):
                gf.train.Saver().restore(sess, str(copy / "m"))
            np.testing.assert_array_equal(sess.run(v), np.ones(4))
