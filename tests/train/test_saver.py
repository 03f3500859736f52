"""Checkpoints: save/restore round trips, the state file, retention and bad files."""
import os
import zipfile

import numpy as np
import pytest

import gradflow as gf


@pytest.fixture
def model():
    w = gf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="layer/w")
    b = gf.Variable(np.float64(0.5), name="b")
    step = gf.Variable(np.int64(0), name="step", trainable=False)
    return w, b, step


def test_round_trip_restores_every_variable(model, tmp_path):
    w, b, step = model
    saver = gf.train.Saver()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run([w.assign(w * 2.0), b.assign(7.0), step.assign(41)])
        path = saver.save(sess, str(tmp_path / "model"), global_step=step)
        assert path == str(tmp_path / "model-41")
        assert gf.train.checkpoint_exists(path)
    with gf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3) * 2.0)
        assert sess.run(b) == 7.0 and sess.run(step) == 41
    assert sorted(gf.train.NewCheckpointReader(path).get_variable_to_shape_map()) == \
        ["b", "layer/w", "step"]


def test_restore_into_a_new_graph_with_a_name_map(model, tmp_path):
    w, _, _ = model
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        path = gf.train.Saver([w]).save(sess, str(tmp_path / "ckpt"))
    with gf.Graph().as_default():
        other = gf.Variable(np.zeros((2, 3), np.float32), name="renamed")
        saver = gf.train.Saver({"layer/w": other})
        with gf.Session() as sess:
            assert gf.train.latest_checkpoint(str(tmp_path)) == path
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(other), np.arange(6).reshape(2, 3))


def test_state_file_latest_checkpoint_and_max_to_keep(model, tmp_path):
    saver = gf.train.Saver(max_to_keep=2)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "m"), global_step=i) for i in range(4)]
    assert saver.last_checkpoints == paths[2:]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-2.data-00000-of-00001", "m-2.index",
                                          "m-2.meta", "m-3.data-00000-of-00001", "m-3.index",
                                          "m-3.meta"]
    assert gf.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    state = gf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == paths[2:]
    assert (tmp_path / "checkpoint").read_text().splitlines()[0] == \
        'model_checkpoint_path: "m-3"'
    assert gf.train.latest_checkpoint(str(tmp_path / "empty")) is None


def test_pad_step_number_and_missing_parent_directory(model, tmp_path):
    saver = gf.train.Saver(pad_step_number=True)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "deep" / "dir" / "m"), global_step=7)
    assert path.endswith("m-00000007") and gf.train.checkpoint_exists(path)


def test_constructor_validation(model):
    w, b, _ = model
    with pytest.raises(ValueError, match="At least two variables have the same name: b"):
        gf.train.Saver([b, b])
    with pytest.raises(TypeError, match="string names to Variables"):
        gf.train.Saver({"c": gf.constant(1.0)})
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            gf.train.Saver()
        empty = gf.train.Saver(allow_empty=True)
        with gf.Session() as sess:
            assert empty.save(sess, "/nonexistent/x") is None


def test_restore_errors_change_nothing(model, tmp_path):
    w, b, _ = model
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        path = gf.train.Saver([w]).save(sess, str(tmp_path / "m"))
    with gf.Graph().as_default():
        wide = gf.Variable(np.zeros((3, 3), np.float32), name="layer/w")
        other_dtype = gf.Variable(np.zeros((2, 3)), name="x")
        missing = gf.Variable(1.0, name="missing")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            with pytest.raises(ValueError, match="Can't load save_path when it is None."):
                gf.train.Saver([wide]).restore(sess, None)
            with pytest.raises(ValueError, match="not a valid checkpoint"):
                gf.train.Saver([wide]).restore(sess, str(tmp_path / "nope"))
            with pytest.raises(gf.errors.InvalidArgumentError, match=r"shape \[2, 3\]"):
                gf.train.Saver([wide]).restore(sess, path)
            with pytest.raises(gf.errors.InvalidArgumentError, match="float32 .* float64"):
                gf.train.Saver({"layer/w": other_dtype}).restore(sess, path)
            with pytest.raises(gf.errors.NotFoundError, match="'missing'.*holds \\['layer/w'\\]"):
                gf.train.Saver([missing, wide]).restore(sess, path)
            assert sess.run(missing) == 1.0
            flat = gf.Variable(np.zeros(6, np.float32), name="flat")
            sess.run(flat.initializer)
            gf.train.Saver({"layer/w": flat}, reshape=True).restore(sess, path)
            np.testing.assert_array_equal(sess.run(flat), np.arange(6))


def test_malformed_checkpoints_are_rejected_without_unpickling(model, tmp_path):
    w, _, _ = model
    saver = gf.train.Saver([w])
    (tmp_path / "garbage.npz").write_bytes(b"not a zip at all")
    with zipfile.ZipFile(tmp_path / "objects.npz", "w") as archive:
        with archive.open("layer/w.npy", "w") as member:
            np.lib.format.write_array(member, np.array([{"x": 1}], dtype=object))
    with gf.Session() as sess:
        with pytest.raises(gf.errors.DataLossError, match="not an NPZ archive"):
            saver.restore(sess, str(tmp_path / "garbage"))
        with pytest.raises(gf.errors.DataLossError, match="Python objects"):
            saver.restore(sess, str(tmp_path / "objects"))


def test_unparseable_state_file_is_ignored(tmp_path):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: oops\n")
    assert gf.train.get_checkpoint_state(str(tmp_path)) is None
    assert gf.train.latest_checkpoint(str(tmp_path)) is None


def test_restore_ops_exist_before_finalize(model, tmp_path):
    saver = gf.train.Saver()
    init = gf.global_variables_initializer()
    gf.get_default_graph().finalize()
    with gf.Session() as sess:
        sess.run(init)
        saver.restore(sess, saver.save(sess, str(tmp_path / "m")))


def test_keep_checkpoint_every_n_hours_preserves_old_checkpoints(model, tmp_path):
    saver = gf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.0)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        for i in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=i)
    assert sorted(p.name for p in tmp_path.glob("*.index")) == \
        ["m-0.index", "m-1.index", "m-2.index"]
    assert saver.last_checkpoints == [str(tmp_path / "m-2")]
