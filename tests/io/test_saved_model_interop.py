"""TF1-style SavedModels both ways: TF 2.21's (tests/fixtures/tf/files/saved_model) loads
and serves TF's predictions; gradflow's ``simple_save``/``SavedModelBuilder`` output
reloads here and (where TF is installed) in TF."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import gradflow as gf
from gradflow.saved_model import signature_constants, tag_constants
from tf_fixtures import FIXTURES, load_arrays

TF_MODEL = FIXTURES / "files" / "saved_model"


def _serve(export_dir, x_value, tags=(tag_constants.SERVING,), key="x", out="probs"):
    with gf.Graph().as_default():
        with gf.Session() as sess:
            meta = gf.saved_model.loader.load(sess, list(tags), str(export_dir))
            signature = meta.signature_def[signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
            x = gf.saved_model.utils.get_tensor_from_tensor_info(signature.inputs[key])
            y = gf.saved_model.utils.get_tensor_from_tensor_info(signature.outputs[out])
            return sess.run(y, {x: x_value}), signature


def test_tfs_saved_model_serves_tfs_predictions():
    arrays = load_arrays("tf_files")
    got, signature = _serve(TF_MODEL, arrays["x"])
    np.testing.assert_allclose(got, arrays["probs"], rtol=1e-5, atol=1e-7)
    assert signature.method_name == signature_constants.PREDICT_METHOD_NAME
    assert gf.saved_model.signature_def_utils.is_valid_signature(signature)
    assert gf.saved_model.loader.maybe_saved_model_directory(str(TF_MODEL))


def test_load_errors():
    with gf.Graph().as_default() as graph, gf.Session() as sess:
        with pytest.raises(RuntimeError, match=r"could not be found in SavedModel, with "
                                               r"available tags '\[\['serve'\]\]'"):
            gf.saved_model.loader.load(sess, ["train"], str(TF_MODEL))
        with pytest.raises(OSError, match="SavedModel file does not exist"):
            gf.saved_model.loader.load(sess, ["serve"], str(FIXTURES / "nowhere"))
        assert graph.get_operations() == []


def _model():
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    w = gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 6.0, name="w")
    return x, gf.nn.softmax(gf.matmul(x, w), name="y")


X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], np.float32)


def test_simple_save_round_trip(tmp_path):
    with gf.Graph().as_default():
        x, y = _model()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(gf.global_variables()[0].assign(np.ones((3, 2), np.float32)))
            expected = sess.run(y, {x: X})
            gf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    assert sorted(os.listdir(tmp_path / "m" / "variables")) == [
        "variables.data-00000-of-00001", "variables.index"]
    got, _ = _serve(tmp_path / "m", X, out="y")
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_builder_with_two_tag_sets_main_op_and_text_format(tmp_path):
    export_dir = str(tmp_path / "built")
    with gf.Graph().as_default():
        x, y = _model()
        counter = gf.Variable(0.0, name="counter")
        main_op = gf.group(counter.assign_add(1.0), name="main")
        signature = gf.saved_model.signature_def_utils.build_signature_def(
            {"x": gf.saved_model.utils.build_tensor_info(x)},
            {"y": gf.saved_model.utils.build_tensor_info(y)},
            signature_constants.PREDICT_METHOD_NAME)
        builder = gf.saved_model.builder.SavedModelBuilder(export_dir)
        with pytest.raises(AssertionError, match="has not been saved yet"):
            builder.add_meta_graph(["eval"])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            builder.add_meta_graph_and_variables(
                sess, ["serve"], {"serving_default": signature}, main_op=main_op)
            with pytest.raises(AssertionError, match="already been saved"):
                builder.add_meta_graph_and_variables(sess, ["other"])
            with pytest.raises(TypeError, match="SignatureDef"):
                builder.add_meta_graph(["bad"], {"k": "not a signature"})
            builder.add_meta_graph(["serve", "gpu"], {"serving_default": signature})
        path = builder.save(as_text=True)
    assert path.endswith("saved_model.pbtxt")
    with pytest.raises(AssertionError, match="isn't empty"):
        gf.saved_model.builder.SavedModelBuilder(export_dir)
    with gf.Graph().as_default() as graph, gf.Session() as sess:
        gf.saved_model.loader.load(sess, ["serve"], export_dir, import_scope="m")
        assert sess.run(graph.get_tensor_by_name("m/counter/read:0")) == 1.0  # main op ran
    got, _ = _serve(export_dir, X, tags=("gpu", "serve"), out="y")
    assert got.shape == (2, 2)


def test_corrupt_saved_model_names_the_file(tmp_path):
    shutil.copytree(TF_MODEL, tmp_path / "m")
    (tmp_path / "m" / "saved_model.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f junk")
    with gf.Graph().as_default(), gf.Session() as sess:
        with pytest.raises(gf.errors.DataLossError, match="saved_model.pb"):
            gf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))


TF_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_v2_behavior()
data = np.load(sys.argv[2])
with tf1.Graph().as_default(), tf1.Session() as sess:
    meta = tf1.saved_model.loader.load(sess, ["serve"], sys.argv[1])
    signature = meta.signature_def["serving_default"]
    got = sess.run(signature.outputs["y"].name, {signature.inputs["x"].name: data["x"]})
assert np.allclose(got, data["expected"], rtol=1e-6), (got, data["expected"])
print("TF-OK")
"""


@pytest.mark.slow
def test_tf_loads_gradflows_saved_model(tmp_path):
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    if not (os.path.exists(python) or shutil.which(python)):
        pytest.skip("no TensorFlow interpreter (set GRADFLOW_TF_PYTHON)")
    with gf.Graph().as_default():
        x, y = _model()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            expected = sess.run(y, {x: X})
            gf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    np.savez(tmp_path / "data.npz", x=X, expected=expected)
    (tmp_path / "check.py").write_text(TF_SCRIPT)
    done = subprocess.run([python, str(tmp_path / "check.py"), str(tmp_path / "m"),
                           str(tmp_path / "data.npz")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode != 0 and "No module named 'tensorflow'" in done.stderr:
        pytest.skip("TensorFlow is not installed")
    assert done.returncode == 0 and "TF-OK" in done.stdout, done.stderr[-3000:]
