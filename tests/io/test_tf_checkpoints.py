"""TF's V2 checkpoints both ways: files written by TF 2.21 (tests/fixtures/tf/files, see
make_tf_files.py) restore in gradflow, and what gradflow writes is TF's format byte for
byte. The TF-side check (TF restores gradflow's checkpoint) runs where TF is installed."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import gradflow as gf
from gradflow.io.tensor_bundle import BundleReader, write_bundle
from gradflow.tools.npz_io import write_npz
from tf_fixtures import FIXTURES, load_arrays, load_json

FILES = FIXTURES / "files"
PREFIX = str(FILES / "model.ckpt")


def _cnn():
    """The fixture's CNN, built with gradflow under TF's variable names."""
    x = gf.placeholder(gf.float32, [None, 8, 8, 1], name="x")
    zeros = gf.zeros_initializer()
    kernel = gf.get_variable("conv/kernel", [3, 3, 1, 4], initializer=zeros)
    bias = gf.get_variable("conv/bias", [4], initializer=zeros)
    conv = gf.nn.bias_add(gf.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME"), bias)
    pooled = gf.nn.max_pool(gf.nn.relu(conv), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    flat = gf.reshape(pooled, [-1, 64])
    weights = gf.get_variable("dense/kernel", [64, 3], initializer=zeros)
    dense_bias = gf.get_variable("dense/bias", [3], initializer=zeros)
    probs = gf.nn.softmax(gf.matmul(flat, weights) + dense_bias, name="probs")
    step = gf.train.get_or_create_global_step()
    return x, probs, step


def test_reader_sees_what_tf_saved():
    arrays = load_arrays("tf_files")
    recorded = load_json("tf_files")["variables"]
    reader = gf.train.NewCheckpointReader(PREFIX)
    shapes = reader.get_variable_to_shape_map()
    kinds = reader.get_variable_to_dtype_map()
    assert sorted(shapes) == sorted(recorded)
    for name, info in recorded.items():
        assert shapes[name] == info["shape"] and kinds[name].name == info["dtype"]
        assert reader.has_tensor(name)
        np.testing.assert_array_equal(reader.get_tensor(name), arrays["var/" + name])
    assert not reader.has_tensor("nope")
    with pytest.raises(gf.errors.NotFoundError, match="nope"):
        reader.get_tensor("nope")
    assert b"conv/kernel (float32) [3, 3, 1, 4]" in reader.debug_string()


def test_directory_helpers_follow_tfs_state_file():
    assert gf.train.latest_checkpoint(str(FILES)) == PREFIX
    assert gf.train.get_checkpoint_state(str(FILES)).all_model_checkpoint_paths == [PREFIX]
    listed = dict(gf.train.list_variables(str(FILES)))
    assert listed["dense/kernel"] == [64, 3] and listed["global_step"] == []
    np.testing.assert_array_equal(gf.train.load_variable(str(FILES), "conv/bias:0"),
                                  load_arrays("tf_files")["var/conv/bias"])
    assert gf.train.load_checkpoint(PREFIX).has_tensor("global_step")
    with pytest.raises(gf.errors.NotFoundError, match="missing"):
        gf.train.load_checkpoint(str(FILES / "missing"))


def test_saver_restores_tfs_checkpoint_and_reproduces_tfs_outputs():
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default():
        x, probs, step = _cnn()
        with gf.Session() as sess:
            gf.train.Saver().restore(sess, PREFIX)
            np.testing.assert_allclose(sess.run(probs, {x: arrays["x"]}), arrays["probs"],
                                       rtol=1e-5, atol=1e-6)
            assert sess.run(step) == arrays["var/global_step"]


def test_restore_of_a_subset_by_name_map(tmp_path):
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default():
        mine = gf.Variable(np.zeros(3, np.float32), name="something_else")
        other = gf.Variable(np.ones(2, np.float32), name="untouched")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            gf.train.Saver({"dense/bias": mine}).restore(sess, PREFIX)
            np.testing.assert_array_equal(sess.run(mine), arrays["var/dense/bias"])
            np.testing.assert_array_equal(sess.run(other), np.ones(2))


def test_gradflow_writes_tfs_bytes_exactly(tmp_path):
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default():
        _cnn()
        assign = [v.assign(arrays["var/" + v.op.name]) for v in gf.global_variables()]
        with gf.Session() as sess:
            sess.run(assign)
            path = gf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / ("model.ckpt" + suffix)).read_bytes() == \
            (FILES / ("model.ckpt" + suffix)).read_bytes()
    assert (tmp_path / "checkpoint").read_text() == (FILES / "checkpoint").read_text()
    assert path == str(tmp_path / "model.ckpt")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16,
                                   np.int32, np.int64, np.uint8, np.uint16, np.bool_,
                                   np.complex64, np.complex128])
def test_bundle_round_trip_of_every_numeric_dtype(tmp_path, dtype):
    value = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    write_bundle(str(tmp_path / "b"), {"v": value, "empty": np.zeros((0, 2), dtype),
                                       "scalar": np.asarray(value.flat[3])})
    reader = BundleReader(str(tmp_path / "b"))
    assert reader.keys() == ["empty", "scalar", "v"]
    for name, expected in [("v", value), ("empty", np.zeros((0, 2), dtype)),
                           ("scalar", np.asarray(value.flat[3]))]:
        got = reader.read(name)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_many_tensors_span_several_table_blocks(tmp_path):
    tensors = {f"layer_{i:04d}/w": np.full(3, i, np.float32) for i in range(3000)}
    write_bundle(str(tmp_path / "many"), tensors)
    reader = BundleReader(str(tmp_path / "many"))
    assert reader.keys() == sorted(tensors)
    np.testing.assert_array_equal(reader.read("layer_2999/w"), np.full(3, 2999))


def test_old_npz_checkpoints_still_restore(tmp_path):
    with gf.Graph().as_default():
        w = gf.Variable(np.zeros((2, 2), np.float32), name="w")
        write_npz(str(tmp_path / "old.npz"), {"w": np.eye(2, dtype=np.float32)})
        assert gf.train.checkpoint_exists(str(tmp_path / "old"))
        with gf.Session() as sess:
            gf.train.Saver().restore(sess, str(tmp_path / "old"))
            np.testing.assert_array_equal(sess.run(w), np.eye(2))
        reader = gf.train.NewCheckpointReader(str(tmp_path / "old"))
        assert reader.get_variable_to_shape_map() == {"w": [2, 2]}


def test_write_version_v1_is_refused():
    with gf.Graph().as_default():
        gf.Variable(1.0, name="v")
        with pytest.raises(ValueError, match="write_version=1"):
            gf.train.Saver(write_version=1)


def test_max_to_keep_removes_every_file_of_old_checkpoints(tmp_path):
    with gf.Graph().as_default():
        gf.Variable(1.0, name="v")
        saver = gf.train.Saver(max_to_keep=1, sharded=True)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for step in range(3):
                saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-2.data-00000-of-00001",
                                            "m-2.index", "m-2.meta"]


TF_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_v2_behavior()
prefix, expected = sys.argv[1], np.load(sys.argv[2])
reader = tf1.train.NewCheckpointReader(prefix)
assert sorted(reader.get_variable_to_shape_map()) == sorted(expected.files)
for name in expected.files:
    value = reader.get_tensor(name)
    assert value.dtype == expected[name].dtype and np.array_equal(value, expected[name]), name
v = tf1.get_variable("conv/kernel", [3, 3, 1, 4])
with tf1.Session() as sess:
    tf1.train.Saver([v]).restore(sess, prefix)
    assert np.array_equal(sess.run(v), expected["conv/kernel"])
print("TF-OK")
"""


@pytest.mark.slow
def test_tf_restores_what_gradflow_writes(tmp_path):
    """Runs TF in a subprocess (TF and gradflow in one process is not needed)."""
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    if not (os.path.exists(python) or shutil.which(python)):
        pytest.skip("no TensorFlow interpreter (set GRADFLOW_TF_PYTHON)")
    arrays = load_arrays("tf_files")
    values = {name[4:]: value for name, value in arrays.items() if name.startswith("var/")}
    values["extra/int32"] = np.arange(5, dtype=np.int32)
    values["extra/float64"] = np.linspace(0, 1, 7)
    values["extra/bool"] = np.array([True, False])
    write_bundle(str(tmp_path / "gf"), values)
    np.savez(tmp_path / "expected.npz", **values)
    (tmp_path / "check.py").write_text(TF_SCRIPT)
    done = subprocess.run([python, str(tmp_path / "check.py"), str(tmp_path / "gf"),
                           str(tmp_path / "expected.npz")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode != 0 and "No module named 'tensorflow'" in done.stderr:
        pytest.skip("TensorFlow is not installed")
    assert done.returncode == 0 and "TF-OK" in done.stdout, done.stderr[-2000:]


def test_init_from_checkpoint_maps_scopes_and_names():
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default() as graph:
        with gf.variable_scope("net"):
            kernel = gf.get_variable("conv/kernel", [3, 3, 1, 4])
            bias = gf.get_variable("conv/bias", [4])
        other = gf.get_variable("other", [3])
        untouched = gf.get_variable("untouched", [2], initializer=gf.ones_initializer())
        gf.train.init_from_checkpoint(str(FILES), {"conv/": "net/conv/", "dense/bias": other})
        assert graph.get_operation_by_name("net/conv/kernel/checkpoint_initializer")
        assert kernel.initializer.name.startswith("net/conv/kernel/Assign")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for var, key in [(kernel, "conv/kernel"), (bias, "conv/bias"),
                             (other, "dense/bias")]:
                np.testing.assert_array_equal(sess.run(var), arrays["var/" + key])
            np.testing.assert_array_equal(sess.run(untouched), np.ones(2))


def test_init_from_checkpoint_errors_change_nothing():
    with gf.Graph().as_default() as graph:
        v = gf.get_variable("v", [5])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="Tensor nope is not found"):
            gf.train.init_from_checkpoint(str(FILES), {"nope": v})
        with pytest.raises(ValueError, match=r"Shape of variable v \(\(5,\)\)|Shape of "
                                             r"variable v"):
            gf.train.init_from_checkpoint(str(FILES), {"conv/bias": "v"})
        with pytest.raises(ValueError, match="Variable missing is not found"):
            gf.train.init_from_checkpoint(str(FILES), {"conv/bias": "missing"})
        assert [op.name for op in graph.get_operations()] == before
        assert v.initializer.name == "v/Assign"
