"""tf.train.Supervisor basics: defaults, managed sessions, checkpoints, stopping."""
import numpy as np
import pytest

import gradflow as gf

tf1 = gf.compat.v1


def _model():
    v = gf.Variable(np.float32(1.0), name="v")
    step = gf.train.get_or_create_global_step()
    train = gf.group(v.assign_add(1.0), step.assign_add(1))
    return v, step, train


def test_defaults_come_from_the_graph_and_finalize_it():
    _model()
    sv = gf.train.Supervisor()
    graph = gf.get_default_graph()
    assert graph.finalized
    assert sv.init_op is graph.get_collection("init_op")[0]
    assert sv.ready_op is graph.get_collection("ready_op")[0]
    assert sv.ready_for_local_init_op is None
    assert isinstance(sv.saver, gf.train.Saver)
    assert sv.global_step is gf.train.get_global_step()
    assert sv.summary_op is None  # no summaries in the graph
    assert sv.save_path is None and sv.is_chief


def test_managed_session_initializes_trains_and_saves(tmp_path):
    v, step, train = _model()
    sv = gf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with sv.managed_session() as sess:
        for _ in range(3):
            if sv.should_stop():
                break
            sess.run(train)
        sv.saver.save(sess, sv.save_path, global_step=step)
        assert sess.run(v) == 4.0
    assert sv.should_stop()
    assert gf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")
    # A new supervisor on the same logdir restores instead of initializing.
    gf.reset_default_graph()
    v, step, train = _model()
    sv = gf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with sv.managed_session() as sess:
        assert (sess.run(v), sess.run(step)) == (4.0, 3)


def test_the_checkpoint_thread_saves_periodically(tmp_path):
    _, _, train = _model()
    sv = gf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0.05,
                             save_summaries_secs=0)
    with sv.managed_session() as sess:
        sess.run(train)
        for _ in range(200):
            if gf.train.latest_checkpoint(str(tmp_path)) is not None:
                break
            sv.coord.wait_for_stop(0.02)
    assert gf.train.latest_checkpoint(str(tmp_path)) is not None


def test_end_of_input_stops_cleanly_and_other_errors_propagate():
    _, _, train = _model()
    sv = gf.train.Supervisor()
    with sv.managed_session() as sess:
        sess.run(train)
        raise gf.errors.OutOfRangeError(None, None, "end of input")
    assert sv.should_stop()
    gf.reset_default_graph()
    _model()
    sv = gf.train.Supervisor()
    with pytest.raises(ValueError, match="boom"):
        with sv.managed_session():
            raise ValueError("boom")


def test_loop_runs_until_stop():
    _model()
    sv = gf.train.Supervisor()
    calls = []
    with sv.managed_session():
        sv.Loop(0.01, lambda: calls.append(1))
        while len(calls) < 3:
            sv.coord.wait_for_stop(0.01)
    assert len(calls) >= 3


def test_non_chief_waits_and_cannot_start_services():
    _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables(),
                                      recovery_wait_secs=0.01)
    sv = gf.train.Supervisor(is_chief=False, session_manager=manager)
    with pytest.raises(gf.errors.DeadlineExceededError):
        sv.prepare_or_wait_for_session(max_wait_secs=0.05)
    with gf.Session() as sess, pytest.raises(RuntimeError, match="Only chief supervisor"):
        sv.start_standard_services(sess)


def test_a_bad_call_leaves_the_graph_as_it_was():
    _model()
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    collections = {key: list(graph.get_collection(key))
                   for key in graph.get_all_collection_keys()}
    ready = gf.constant([b""], name="ready_for_local")
    before.append(ready.op.name)
    with pytest.raises(ValueError, match="must also pass a local_init_op"):
        gf.train.Supervisor(ready_for_local_init_op=ready, local_init_op=None)
    assert [op.name for op in graph.get_operations()] == before
    assert {key: list(graph.get_collection(key))
            for key in graph.get_all_collection_keys()} == collections
    assert not graph.finalized
