"""A monitored session starts the graph's queue runners under its coordinator and stops
them on close, as TF1's does (values from TF 2.21 running the same program)."""
import threading

import pytest

import gradflow as gf


def _batches():
    data = gf.train.limit_epochs(gf.constant([1.0, 2.0, 3.0]), num_epochs=2)
    return gf.train.batch([data], batch_size=2, enqueue_many=True)


def test_queue_fed_loop_reads_every_batch_and_stops():
    threads_before = threading.active_count()
    with gf.Graph().as_default():
        batch = _batches()
        seen = []
        with gf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                seen.append(sess.run(batch).tolist())
    assert seen == [[1.0, 2.0], [3.0, 1.0], [2.0, 3.0]]
    assert threading.active_count() == threads_before


def test_hooks_receive_the_coordinator():
    received = []

    class Recording(gf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            received.append(coord)

    with gf.Graph().as_default():
        _batches()
        with gf.train.MonitoredTrainingSession(hooks=[Recording()]):
            pass
    assert len(received) == 1 and isinstance(received[0], gf.train.Coordinator)


def test_a_thread_error_is_raised_by_close():
    class Failing(gf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            try:
                raise ValueError("worker thread failed")
            except ValueError as err:
                coord.request_stop(err)

    with gf.Graph().as_default():
        gf.Variable(1.0)
        sess = gf.train.MonitoredTrainingSession(hooks=[Failing()])
        assert sess.should_stop()
        with pytest.raises(ValueError, match="worker thread failed"):
            sess.close()
