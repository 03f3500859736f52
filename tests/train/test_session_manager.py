"""SessionManager, WorkerSessionCreator and MonitoredTrainingSession(master, is_chief)."""
import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.train import session_manager as session_manager_module

tf1 = gf.compat.v1


def _model():
    v = gf.Variable(np.float32(1.0), name="v")
    step = gf.train.get_or_create_global_step()
    return v, step


def _save_checkpoint(directory, value):
    """A checkpoint of v=value at step 3 in ``directory``, from its own graph."""
    with gf.Graph().as_default():
        v, step = _model()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run([v.assign(value), step.assign(3)])
            gf.train.Saver().save(sess, str(directory / "model.ckpt"), global_step=3)


def test_prepare_session_initializes_and_checks_readiness():
    v, _ = _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables())
    sess = manager.prepare_session("", init_op=gf.global_variables_initializer())
    assert sess.run(v) == 1.0
    sess.close()


def test_prepare_session_restores_the_latest_checkpoint(tmp_path):
    _save_checkpoint(tmp_path, 5.0)
    v, step = _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables())
    saver = gf.train.Saver()
    sess = manager.prepare_session("", init_op=gf.global_variables_initializer(),
                                   saver=saver, checkpoint_dir=str(tmp_path))
    assert (sess.run(v), sess.run(step)) == (5.0, 3)  # restored, init_op not run
    sess.close()


def test_prepare_session_errors():
    _model()
    with pytest.raises(RuntimeError, match="Model is not initialized and no init_op or "
                                           "init_fn or local_init_op was given"):
        gf.train.SessionManager().prepare_session("")
    ready = tf1.report_uninitialized_variables()
    manager = gf.train.SessionManager(ready_op=ready)
    with pytest.raises(RuntimeError, match="Init operations did not make model ready.*"
                                           "Variables not initialized: v, global_step"):
        manager.prepare_session("", init_op=gf.no_op())
    with pytest.raises(ValueError, match="Can not provide both checkpoint_dir and "
                                         "checkpoint_filename_with_path"):
        manager.prepare_session("", init_op=gf.no_op(), saver=gf.train.Saver(),
                                checkpoint_dir="/tmp/a", checkpoint_filename_with_path="/b")
    with pytest.raises(ValueError, match="ready_for_local_init_op you must also pass a "
                                         "local_init_op"):
        gf.train.SessionManager(ready_for_local_init_op=ready)


def test_local_init_waits_for_ready_for_local_init():
    v, _ = _model()
    local = gf.Variable(0.0, name="local", collections=[tf1.GraphKeys.LOCAL_VARIABLES])
    copy = local.assign(v)
    manager = gf.train.SessionManager(
        local_init_op=copy,
        ready_for_local_init_op=tf1.report_uninitialized_variables(gf.global_variables()),
        ready_op=tf1.report_uninitialized_variables())
    sess = manager.prepare_session("", init_op=gf.global_variables_initializer())
    assert sess.run(local) == 1.0
    sess.close()


def test_recover_session(tmp_path):
    v, _ = _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables())
    saver = gf.train.Saver()
    sess, initialized = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert not initialized
    sess.close()
    gf.reset_default_graph()
    _save_checkpoint(tmp_path, 7.0)
    v, _ = _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables())
    sess, initialized = manager.recover_session("", saver=gf.train.Saver(),
                                                checkpoint_dir=str(tmp_path))
    assert initialized and sess.run(v) == 7.0
    sess.close()


def test_wait_for_session_times_out_when_never_ready():
    _model()
    manager = gf.train.SessionManager(ready_op=tf1.report_uninitialized_variables(),
                                      recovery_wait_secs=0.01)
    with pytest.raises(gf.errors.DeadlineExceededError,
                       match="Session was not ready after waiting 0.05 secs"):
        manager.wait_for_session("", max_wait_secs=0.05)


def test_wait_for_session_returns_once_ready():
    ready_now = threading.Event()

    def report():  # what a ready op reports: the names not yet initialized
        return np.array([] if ready_now.is_set() else [b"v"], dtype=object)

    ready = gf.py_func(report, [], gf.string)
    manager = gf.train.SessionManager(ready_op=ready, recovery_wait_secs=0.01)
    timer = threading.Timer(0.1, ready_now.set)
    timer.start()
    sess = manager.wait_for_session("", max_wait_secs=30)
    assert ready_now.is_set()
    sess.close()


def test_master_reaches_the_session(monkeypatch):
    targets = []

    class Recording(gf.Session):
        def __init__(self, target="", graph=None, config=None):
            targets.append(target)  # recorded, then run in-process (no cluster here)
            super().__init__("", graph, config)

    monkeypatch.setattr(session_manager_module, "Session", Recording)
    v, _ = _model()
    train = v.assign_add(1.0)
    with gf.train.MonitoredTrainingSession(master="grpc://ps0:2222") as sess:
        sess.run(train)
    assert targets == ["grpc://ps0:2222"]


def test_worker_waits_for_the_chief_then_times_out(tmp_path):
    _model()
    with pytest.raises(gf.errors.DeadlineExceededError, match="not ready after waiting"):
        gf.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.05)


def test_worker_session_runs_only_the_callers_hooks(tmp_path):
    x = gf.constant(2.0)
    calls = []

    class Hook(gf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            calls.append("created")

    with gf.train.MonitoredTrainingSession(is_chief=False, checkpoint_dir=str(tmp_path),
                                           hooks=[Hook()]) as sess:
        assert sess.run(x) == 2.0
    assert calls == ["created"]
    assert not list(tmp_path.iterdir())  # a worker writes no checkpoint or summary


def test_an_aborted_run_recreates_the_session_from_the_checkpoint(tmp_path):
    v, step = _model()
    train = gf.group(v.assign_add(1.0), step.assign_add(1))
    aborts = [1]

    def maybe_abort():
        if aborts[0]:
            aborts[0] -= 1
            raise gf.errors.AbortedError(None, None, "task /job:ps/task:0 is gone")
        return np.float32(0)

    flaky = gf.py_func(maybe_abort, [], gf.float32)
    created = []

    class Hook(gf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            created.append(session)

    with gf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[Hook()],
                                           save_summaries_steps=None,
                                           log_step_count_steps=None) as sess:
        sess.run(train)
        sess.run(train)  # v = 3 in memory; the checkpoint (step 0) has v = 1
        value = sess.run([flaky, v])
    assert len(created) == 2 and created[0] is not created[1]
    assert value[1] == 1.0  # the new session restored the step-0 checkpoint
