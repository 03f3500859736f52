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


# ----------------------------------------------------- GraphDef, MetaGraph, SavedModel
GRAPH_ERRORS = (ValueError, TypeError, errors.NotFoundError, errors.DataLossError)


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def _cleanly(load) -> None:
    """Runs ``load`` in a fresh graph: it succeeds, or raises a documented error leaving
    the graph as it was; memory stays bounded."""
    with gf.Graph().as_default() as graph:
        before = _snapshot(graph)
        tracemalloc.start()
        try:
            try:
                load()
            except GRAPH_ERRORS:
                assert _snapshot(graph) == before
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 64 << 20


def test_fuzz_graph_def_bytes():
    frozen = (FIXTURES / "files" / "frozen.pb").read_bytes()

    @FUZZ
    @given(byte_edits(frozen))
    def check(data):
        _cleanly(lambda: gf.import_graph_def(data))
    check()


@st.composite
def node_edits(draw):
    """The frozen GraphDef with one node's type, input or attr replaced."""
    graph_def = gf.GraphDef.FromString((FIXTURES / "files" / "frozen.pb").read_bytes())
    node = graph_def.node[draw(st.integers(0, len(graph_def.node) - 1))]
    kind = draw(st.sampled_from(["op", "input", "attr", "shape"]))
    if kind == "op":
        node.op = draw(st.sampled_from(["Relu", "MatMul", "Const", "Nope", "ShapeN",
                                        "Placeholder", "Identity", "ConcatV2"]))
    elif kind == "input":
        node.input.append(draw(st.sampled_from(["x", "x:7", "^probs", "probs", "nope:0"])))
    elif kind == "attr":
        name = draw(st.sampled_from(["T", "dtype", "strides", "padding", "value", "ksize"]))
        node.attr[name].i = draw(st.integers(-2, 1 << 40))
    else:
        node.attr["value"].tensor.dtype = 1
        node.attr["value"].tensor.tensor_shape.dim.add().size = draw(
            st.sampled_from([-1, 1 << 40, 3]))
    return graph_def


def test_fuzz_graph_def_nodes():
    @FUZZ
    @given(node_edits())
    def check(graph_def):
        _cleanly(lambda: gf.import_graph_def(graph_def))
    check()


def test_fuzz_meta_graph_bytes(tmp_path):
    meta = (FIXTURES / "files" / "model.ckpt.meta").read_bytes()

    @settings(FUZZ, max_examples=max(10, FUZZ.max_examples // 3))
    @given(byte_edits(meta))
    def check(data):
        (tmp_path / "m.meta").write_bytes(data)
        _cleanly(lambda: gf.train.import_meta_graph(str(tmp_path / "m.meta")))
    check()


def test_fuzz_saved_model_bytes(tmp_path):
    shutil.copytree(FIXTURES / "files" / "saved_model", tmp_path / "m")
    data = (tmp_path / "m" / "saved_model.pb").read_bytes()

    @settings(FUZZ, max_examples=max(10, FUZZ.max_examples // 3))
    @given(byte_edits(data))
    def check(mutated):
        (tmp_path / "m" / "saved_model.pb").write_bytes(mutated)

        def load():
            with gf.Session() as sess:
                try:
                    gf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
                except RuntimeError as err:  # no MetaGraph with these tags: TF's type
                    assert "could not be found" in str(err)
        _cleanly(load)
    check()
