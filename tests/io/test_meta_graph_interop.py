"""MetaGraph both ways: TF 2.21's ``.meta`` + checkpoint restore in gradflow and training
continues with TF's numbers; ``Saver.save`` writes a ``.meta`` gradflow (and, where TF is
installed, TF) imports to continue training."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import FIXTURES, load_arrays

FILES = FIXTURES / "files"


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def test_tfs_meta_graph_restores_and_continues_training_like_tf():
    arrays = load_arrays("tf_files")
    with gf.Graph().as_default() as graph:
        saver = gf.train.import_meta_graph(str(FILES / "model.ckpt.meta"))
        assert sorted(v.op.name for v in gf.global_variables()) == [
            "conv/bias", "conv/kernel", "dense/bias", "dense/kernel", "global_step"]
        assert len(gf.trainable_variables()) == 4
        train_op = graph.get_collection("train_op")[0]
        loss = graph.get_collection("losses")[0]
        feed = {"x:0": arrays["x"]}
        with gf.Session() as sess:
            saver.restore(sess, gf.train.latest_checkpoint(str(FILES)))
            np.testing.assert_allclose(sess.run("probs:0", feed), arrays["probs"],
                                       rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(sess.run(loss, feed), arrays["loss_before"], rtol=1e-5)
            sess.run(train_op, feed)
            np.testing.assert_allclose(sess.run(loss, feed), arrays["loss_after"], rtol=1e-4)
            assert sess.run(gf.train.get_global_step()) == arrays["step_after"]


def _model():
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    labels = gf.placeholder(gf.int64, [None], name="labels")
    w = gf.get_variable("dense/kernel", initializer=np.linspace(-1, 1, 6, dtype=np.float32)
                        .reshape(3, 2))
    b = gf.get_variable("dense/bias", initializer=np.zeros(2, np.float32))
    logits = gf.nn.bias_add(gf.matmul(x, w), b, name="logits")
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), name="loss")
    step = gf.train.get_or_create_global_step()
    train = gf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    gf.add_to_collection("train_op", train)
    return x, labels, loss, train


FEED = {"x:0": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32),
        "labels:0": np.array([1, 0])}


def test_saver_writes_meta_that_reimports_and_continues_training(tmp_path):
    with gf.Graph().as_default():
        _, _, loss, train = _model()
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train, FEED)
            prefix = saver.save(sess, str(tmp_path / "model"), global_step=1)
            sess.run(train, FEED)
            expected = sess.run(loss, FEED)
        meta = gf.train.export_meta_graph()  # a proto, without a file
        assert "train_op" in meta.collection_def and not meta.HasField("saver_def")
    assert os.path.isfile(prefix + ".meta")
    with gf.Graph().as_default() as graph:
        restored = gf.train.import_meta_graph(prefix + ".meta")
        assert restored.saver_def.restore_op_name == "save/restore_all"
        train_op = graph.get_collection("train_op")[0]
        with gf.Session() as sess:
            restored.restore(sess, prefix)
            assert sess.run(gf.train.get_global_step()) == 1
            sess.run(train_op, FEED)
            np.testing.assert_allclose(sess.run("loss:0", FEED), expected, rtol=1e-6)


def test_import_scope_clear_devices_and_bad_files(tmp_path):
    with gf.Graph().as_default():
        with gf.device("/cpu:0"):
            _model()
        gf.train.export_meta_graph(str(tmp_path / "m.meta"), as_text=True)
    with gf.Graph().as_default() as graph:
        saver = gf.train.import_meta_graph(str(tmp_path / "m.meta"), import_scope="copy",
                                           clear_devices=True)
        assert graph.get_operation_by_name("copy/loss").device == ""
        assert sorted(saver._variables) == ["dense/bias", "dense/kernel", "global_step"]
        assert graph.get_collection("train_op")[0].name.startswith("copy/")
    (tmp_path / "bad.meta").write_bytes(b"\xff\x00garbage" * 10)
    with gf.Graph().as_default() as graph:
        before = _snapshot(graph)
        with pytest.raises(gf.errors.DataLossError, match="bad.meta"):
            gf.train.import_meta_graph(str(tmp_path / "bad.meta"))
        with pytest.raises(gf.errors.NotFoundError, match="missing.meta"):
            gf.train.import_meta_graph(str(tmp_path / "missing.meta"))
        with pytest.raises(ValueError, match="not supported"):
            gf.train.import_meta_graph(str(tmp_path / "m.meta"), unknown_option=True)
        assert _snapshot(graph) == before


TF_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_v2_behavior()
prefix, expected = sys.argv[1], float(sys.argv[2])
feed = {"x:0": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32),
        "labels:0": np.array([1, 0])}
with tf1.Graph().as_default() as graph:
    saver = tf1.train.import_meta_graph(prefix + ".meta")
    train_op = graph.get_collection("train_op")[0]
    with tf1.Session() as sess:
        saver.restore(sess, prefix)
        assert sess.run(tf1.train.get_global_step()) == 1
        sess.run(train_op, feed)
        got = sess.run("loss:0", feed)
        assert np.isclose(got, expected, rtol=1e-5), (got, expected)
        saver.save(sess, prefix + "-tf")
print("TF-OK")
"""


@pytest.mark.slow
def test_tf_continues_training_from_gradflows_meta_and_checkpoint(tmp_path):
    python = os.environ.get("GRADFLOW_TF_PYTHON", "/opt/tfenv/bin/python")
    if not (os.path.exists(python) or shutil.which(python)):
        pytest.skip("no TensorFlow interpreter (set GRADFLOW_TF_PYTHON)")
    with gf.Graph().as_default():
        _, _, loss, train = _model()
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train, FEED)
            prefix = saver.save(sess, str(tmp_path / "model"), global_step=1)
            sess.run(train, FEED)
            expected = sess.run(loss, FEED)
    (tmp_path / "check.py").write_text(TF_SCRIPT)
    done = subprocess.run([python, str(tmp_path / "check.py"), prefix, repr(float(expected))],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode != 0 and "No module named 'tensorflow'" in done.stderr:
        pytest.skip("TensorFlow is not installed")
    assert done.returncode == 0 and "TF-OK" in done.stdout, done.stderr[-3000:]
    # and what TF saved from gradflow's graph restores here
    assert gf.train.NewCheckpointReader(prefix + "-tf").get_tensor("global_step") == 2
