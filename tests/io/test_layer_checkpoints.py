"""Checkpoints of ``tf.layers`` and ``rnn_cell`` models map one to one between TF 2.21 and
gradflow (issue 15, item 5). The models (tests/fixtures/tf/layer_checkpoint_models.py)
are the very code TF ran in make_layer_checkpoints.py, with gradflow as the ``tf``
module: a plain ``Saver()`` (no var_list) restores TF's checkpoint, and TF's restores
gradflow's."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from tf_fixtures import FIXTURES, load_arrays, load_json

import gradflow as gf
from gradflow.io.tensor_bundle import BundleReader

sys.path.insert(0, str(FIXTURES))
import layer_checkpoint_models as models  # noqa: E402

CKPT_DIR = FIXTURES / "files" / "layer_ckpt"
PREFIX = str(CKPT_DIR / "model.ckpt")


def _feeds(built: dict, arrays: dict) -> dict:
    return {placeholder: arrays["in/" + name]
            for inputs, _ in built.values() for name, placeholder in inputs.items()}


def _outputs(sess, built: dict, arrays: dict) -> dict:
    return sess.run({name: out for name, (_, out) in built.items()}, _feeds(built, arrays))


def test_variable_names_equal_the_checkpoints_names():
    recorded = load_json("layer_checkpoints")
    with gf.Graph().as_default():
        models.build_all(gf)
        names = [v.op.name for v in gf.global_variables()]
        shapes = {v.op.name: v.shape.as_list() for v in gf.global_variables()}
    assert names == recorded["global_variables"]
    assert shapes == recorded["checkpoint"]
    assert sorted(BundleReader(PREFIX).keys()) == sorted(recorded["checkpoint"])


@pytest.mark.parametrize("model", sorted(models.MODELS))
def test_plain_saver_restores_tfs_checkpoint_with_tfs_outputs(model):
    arrays = load_arrays("layer_checkpoints")
    with gf.Graph().as_default():
        built = {model: models.MODELS[model](gf)}
        with gf.Session() as sess:
            # only this model's variables are in the graph: the rest of the file is unused
            gf.train.Saver().restore(sess, PREFIX)
            got = _outputs(sess, built, arrays)[model]
    np.testing.assert_allclose(got, arrays["out/" + model], rtol=1e-5, atol=1e-5)


def test_gradflow_saves_tfs_key_set_values_and_bytes(tmp_path):
    recorded = load_json("layer_checkpoints")
    with gf.Graph().as_default():
        models.build_all(gf)
        saver = gf.train.Saver()
        with gf.Session() as sess:
            saver.restore(sess, PREFIX)
            saver.save(sess, str(tmp_path / "model.ckpt"))
    ours, theirs = BundleReader(str(tmp_path / "model.ckpt")), BundleReader(PREFIX)
    assert sorted(ours.keys()) == sorted(recorded["checkpoint"])
    for key in theirs.keys():
        np.testing.assert_array_equal(ours.read(key), theirs.read(key))
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / ("model.ckpt" + suffix)).read_bytes() == \
            (CKPT_DIR / ("model.ckpt" + suffix)).read_bytes()


TF_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf_root
tf = tf_root.compat.v1
tf.disable_v2_behavior()
sys.path.insert(0, sys.argv[1])
import layer_checkpoint_models as models
prefix, expected = sys.argv[2], np.load(sys.argv[3])
with tf.Graph().as_default():
    built = models.build_all(tf)
    feeds = {p: expected["in/" + n] for inputs, _ in built.values() for n, p in inputs.items()}
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        got = sess.run({name: out for name, (_, out) in built.items()}, feeds)
for name, value in got.items():
    np.testing.assert_allclose(value, expected["out/" + name], rtol=1e-5, atol=1e-5)
print("TF-OK")
"""


@pytest.mark.slow
def test_tf_restores_gradflows_checkpoint_with_plain_saver(tmp_path):
    """TF (subprocess) restores, with a plain ``Saver()``, a checkpoint gradflow wrote of
    values TF never saw (TF's halved), and reproduces gradflow's outputs."""
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    if not (os.path.exists(python) or shutil.which(python)):
        pytest.skip("no TensorFlow interpreter (set GRADFLOW_TF_PYTHON)")
    arrays = load_arrays("layer_checkpoints")
    with gf.Graph().as_default():
        built = models.build_all(gf)
        saver = gf.train.Saver()
        halve = [v.assign(v * 0.5) for v in gf.global_variables()]
        with gf.Session() as sess:
            saver.restore(sess, PREFIX)
            sess.run(halve)
            outputs = _outputs(sess, built, arrays)
            saver.save(sess, str(tmp_path / "gf.ckpt"))
    expected = {key: value for key, value in arrays.items() if key.startswith("in/")}
    expected.update({"out/" + name: value for name, value in outputs.items()})
    assert not np.allclose(outputs["gru"], arrays["out/gru"])  # really new values
    np.savez(tmp_path / "expected.npz", **expected)
    (tmp_path / "check.py").write_text(TF_SCRIPT)
    done = subprocess.run([python, str(tmp_path / "check.py"), str(FIXTURES),
                           str(tmp_path / "gf.ckpt"), str(tmp_path / "expected.npz")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                               "TF_USE_LEGACY_KERAS": "1"})
    if done.returncode != 0 and "No module named 'tensorflow'" in done.stderr:
        pytest.skip("TensorFlow is not installed")
    assert done.returncode == 0 and "TF-OK" in done.stdout, done.stderr[-2000:]
