"""One test per bug the reliability work found (random programs, fuzzing, catalogue)."""
import io
import zipfile

import numpy as np
import pytest

import gradflow as gf
from gradflow.tools import load_graph, save_graph


@pytest.mark.parametrize("fn", [gf.tanh, gf.sigmoid, gf.sqrt, gf.math.rsqrt, gf.exp,
                                gf.nn.relu, gf.reciprocal,
                                lambda t: gf.math.squared_difference(t, 1.0),
                                lambda t: gf.gradients(gf.tanh(t), t)[0]])
def test_sparse_gradient_reaching_a_dense_rule_is_densified(fn):
    """gather(f(x)) sends IndexedSlices into f's rule, which builds a raw op on it or
    multiplies it by a Python number."""
    x = gf.placeholder(gf.float64, [3, 2])
    (grad,) = gf.gradients(gf.gather(fn(x + 2.0), [1, 1, 0]), x)
    value = np.full((3, 2), 0.5)
    with gf.Session() as sess:
        dense = sess.run(grad, {x: value})
        (reference,) = sess.run(gf.gradients(gf.reduce_sum(
            fn(x + 2.0) * np.array([[1.0], [2.0], [0.0]])), x), {x: value})
    np.testing.assert_allclose(dense, reference)


def _graph_files(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        gf.constant(np.arange(3.0), name="c")
    save_graph(graph, str(tmp_path / "g"))
    with zipfile.ZipFile(tmp_path / "g.npz") as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rewrite(path, members: dict) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_npz_member_without_npy_suffix_is_a_clean_error(tmp_path):
    members = _graph_files(tmp_path)
    _rewrite(tmp_path / "g.npz", {name[:-4]: data for name, data in members.items()})
    with pytest.raises(ValueError, match="array 'a0' is not in the array file"):
        load_graph(str(tmp_path / "g"))


def test_npz_raw_member_beside_the_array_is_ignored(tmp_path):
    """np.load would return the raw member 'a0' (bytes) instead of the array 'a0.npy'."""
    members = _graph_files(tmp_path)
    _rewrite(tmp_path / "g.npz", {**members, "a0": b"raw bytes"})
    with gf.Session(graph=load_graph(str(tmp_path / "g"))) as sess:
        np.testing.assert_array_equal(sess.run("c:0"), np.arange(3.0))


def test_npz_decoy_member_cannot_bypass_the_size_check(tmp_path):
    """The header checked and the array read must be the same member."""
    members = _graph_files(tmp_path)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
    _rewrite(tmp_path / "g.npz", {**members, "a0": header.getvalue()})
    load_graph(str(tmp_path / "g"))  # reads a0.npy only: no 8 TiB allocation attempt


def test_npz_header_with_overflowing_or_negative_shape(tmp_path):
    _graph_files(tmp_path)
    for shape, message in [((2**32, 2**32), "over the limit"), ((-3,), "negative dimension")]:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": shape})
        _rewrite(tmp_path / "g.npz", {"a0.npy": header.getvalue()})
        with pytest.raises(ValueError, match=message):
            load_graph(str(tmp_path / "g"))


def test_attr_kind_that_is_not_a_string(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        gf.placeholder(gf.float32, name="p")
    save_graph(graph, str(tmp_path / "g"))
    text = (tmp_path / "g.json").read_text().replace('"kind": "dtype"', '"kind": ["dtype"]')
    (tmp_path / "g.json").write_text(text)
    with pytest.raises(ValueError, match=r"unknown attr kind \['dtype'\]"):
        load_graph(str(tmp_path / "g"))


def test_checkpoint_state_file_that_is_not_utf8_is_ignored(tmp_path, caplog):
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "\x80"\n')
    assert gf.train.get_checkpoint_state(str(tmp_path)) is None
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "\\q"\n')
    assert gf.train.get_checkpoint_state(str(tmp_path)) is None
    assert "checkpoint state ignored" in caplog.text


def test_shape_inference_never_spells_out_huge_shapes():
    """A 2**26-long shape vector of unknown values used to become a 2**26-rank shape."""
    x = gf.placeholder(gf.float32)
    reshaped = gf.reshape(x, gf.range(0, 2**26, 1, dtype=gf.int64))
    assert reshaped.shape.ndims is None
