"""Queues, readers, queue runners and the train input helpers (names and messages as TF
2.21's; blocking, closing, cancelling, and no thread left after Session.close)."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from data_helpers import FIXTURE_DIR
from tf_fixtures import load_json

import gradflow as gf

QUEUES = load_json("data")["queues"]


def _runner_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("gradflow-")]


def _message_tail(message: str) -> str:
    """A queue message without its session-specific '_N_' resource prefix."""
    return message.split("\n")[0].split("_", 2)[-1]


def test_fifo_queue_ops_shapes_and_messages_as_tf():
    graph = gf.Graph()
    with graph.as_default():
        q = gf.FIFOQueue(3, [gf.int32], shapes=[[]])
        enqueue, dequeue = q.enqueue(1), q.dequeue()
        many, up_to, close = q.dequeue_many(2), q.dequeue_up_to(5), q.close()
        assert [[o.name, o.type] for o in graph.get_operations()] == QUEUES["fifo_ops"]
        assert [t.shape.as_list() for t in (dequeue, many, up_to)] == QUEUES["fifo_shapes"]
        with gf.Session() as sess:
            sess.run([enqueue, enqueue])
            sess.run(close)
            for key, op in (("enqueue_closed", enqueue), ("dequeue_many_closed", many)):
                kind, message = QUEUES[key]
                with pytest.raises(getattr(gf.errors, kind)) as err:
                    sess.run(op)
                assert _message_tail(err.value.message) == message.split("_", 2)[-1]
            assert sess.run(up_to).tolist() == QUEUES["up_to"]
            assert sess.run(q.is_closed())


def test_blocked_dequeue_wakes_on_close_and_session_close():
    q = gf.FIFOQueue(2, gf.float32, shapes=[])
    dequeue, close = q.dequeue(), q.close()
    sess = gf.Session()
    caught = []

    def wait_for(op):
        try:
            sess.run(op)
        except gf.errors.OpError as err:
            caught.append(type(err))

    waiter = threading.Thread(target=wait_for, args=(dequeue,))
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive()  # really blocked
    sess.run(close)
    waiter.join(5)
    assert caught == [gf.errors.OutOfRangeError]
    # a dequeue blocked when the session closes is cancelled
    q2 = gf.FIFOQueue(2, gf.float32, shapes=[])
    waiter = threading.Thread(target=wait_for, args=(q2.dequeue(),))
    waiter.start()
    time.sleep(0.1)
    sess.close()
    waiter.join(5)
    assert caught[-1] is gf.errors.CancelledError and not waiter.is_alive()


def test_blocked_enqueue_cancelled_by_close_with_cancel_pending():
    q = gf.FIFOQueue(1, gf.int32, shapes=[])
    enqueue = q.enqueue(5)
    cancel = q.close(cancel_pending_enqueues=True)
    with gf.Session() as sess:
        sess.run(enqueue)
        caught = []

        def blocked():
            try:
                sess.run(enqueue)
            except gf.errors.OpError as err:
                caught.append(type(err))

        thread = threading.Thread(target=blocked)
        thread.start()
        time.sleep(0.1)
        assert thread.is_alive()
        sess.run(cancel)
        thread.join(5)
        assert caught == [gf.errors.CancelledError]


def test_random_shuffle_padding_and_priority_queues():
    shuffle = gf.RandomShuffleQueue(20, 5, gf.int64, shapes=[], seed=3)
    fill = shuffle.enqueue_many([np.arange(10)])
    take = shuffle.dequeue_up_to(10)
    padding = gf.PaddingFIFOQueue(5, [gf.int32], shapes=[[None]])
    pads = [padding.enqueue([np.arange(n, dtype=np.int32)]) for n in (1, 3)]
    priority = gf.PriorityQueue(5, [gf.string], shapes=[[]])
    prios = [priority.enqueue((p, s)) for p, s in ((3, "c"), (1, "a"), (2, "b"))]
    with gf.Session() as sess:
        sess.run(fill)
        # min_after_dequeue: only 5 of 10 can leave while the queue is open
        assert len(sess.run(shuffle.dequeue_many(5))) == 5
        sess.run(shuffle.close())
        rest = sess.run(take)
        assert len(rest) == 5
        sess.run(pads)
        np.testing.assert_array_equal(sess.run(padding.dequeue_many(2)), [[0, 0, 0], [0, 1, 2]])
        sess.run(prios)
        priorities, values = sess.run(priority.dequeue_many(3))
        assert priorities.tolist() == [1, 2, 3]
        assert [v.decode() if isinstance(v, bytes) else v for v in values] == ["a", "b", "c"]


def test_producer_reader_batch_graph_as_tf():
    graph = gf.Graph()
    with graph.as_default():
        fq = gf.train.string_input_producer(["a", "b"], num_epochs=1, shuffle=False)
        _, value = gf.TFRecordReader().read(fq)
        batched = gf.train.batch([value], 2)
        names = [[o.name, o.type] for o in graph.get_operations()
                 if o.type not in ("Cast", "Mul", "Greater", "Assert", "Identity", "Fill",
                                   "ReadVariableOp") and "Const" not in o.type and
                 "fraction_of" not in o.name]
        # with the QueueSizeV2 ops of TF's fraction_of_N_full summaries of both queues
        assert names == QUEUES["producer_ops"]
        assert [t.name for t in graph.get_collection(gf.GraphKeys.SUMMARIES)] == [
            "input_producer/fraction_of_32_full:0", "batch/fraction_of_32_full:0"]
        assert [v.name for v in gf.local_variables()] == QUEUES["producer_locals"]
        assert batched.name == "batch:0"


def test_tfrecord_pipeline_with_runners_reads_every_record_and_stops():
    path = str(FIXTURE_DIR / "data_examples.tfrecord")
    with gf.Graph().as_default():
        files = gf.train.string_input_producer([path, path], num_epochs=2, shuffle=True, seed=1)
        _, serialized = gf.TFRecordReader().read(files)
        parsed = gf.parse_single_example(serialized, {"id": gf.FixedLenFeature([], gf.int64)})
        ids = gf.train.shuffle_batch([parsed["id"]], 4, capacity=20, min_after_dequeue=2,
                                     seed=2, allow_smaller_final_batch=True)
        with gf.Session() as sess:
            sess.run(gf.local_variables_initializer())
            coord = gf.train.Coordinator()
            threads = gf.train.start_queue_runners(sess, coord)
            seen = []
            try:
                while not coord.should_stop():
                    seen.extend(sess.run(ids).tolist())
            except gf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
    assert sorted(seen) == sorted([1, 2, 3] * 4)
    assert _runner_threads() == []


def test_session_close_stops_every_runner_thread():
    with gf.Graph().as_default():
        queue = gf.train.input_producer(np.arange(5), shuffle=False, capacity=2)
        element = queue.dequeue()
        sess = gf.Session()
        threads = gf.train.start_queue_runners(sess)  # no coordinator: runs forever
        assert sess.run(element) == 0
        assert any(t.is_alive() for t in threads)
        sess.close()
        assert not any(t.is_alive() for t in threads)
        assert _runner_threads() == []


def test_slice_producer_and_limit_epochs(tmp_path):
    with gf.Graph().as_default():
        x, y = gf.train.slice_input_producer([np.arange(4), np.arange(4) * 10], num_epochs=1,
                                             shuffle=False)
        with gf.Session() as sess:
            sess.run(gf.local_variables_initializer())
            coord = gf.train.Coordinator()
            threads = gf.train.start_queue_runners(sess, coord)
            pairs = []
            with pytest.raises(gf.errors.OutOfRangeError):
                while True:
                    pairs.append(tuple(int(v) for v in sess.run([x, y])))
            coord.request_stop()
            coord.join(threads)
    assert pairs == [(i, i * 10) for i in range(4)]


def test_whole_file_and_text_line_readers(tmp_path):
    for name, text in (("a.txt", b"h\n1\n2\n"), ("b.txt", b"h\n3")):
        (tmp_path / name).write_bytes(text)
    with gf.Graph().as_default():
        files = gf.train.match_filenames_once(os.path.join(str(tmp_path), "*.txt"))
        queue = gf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        key, line = gf.TextLineReader(skip_header_lines=1).read(queue)
        queue2 = gf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        name, contents = gf.WholeFileReader().read(queue2)
        with gf.Session() as sess:
            sess.run(gf.local_variables_initializer())
            threads = gf.train.start_queue_runners(sess)
            lines = [sess.run([key, line]) for _ in range(3)]
            whole = sess.run([name, contents])
    assert [v for _, v in lines] == [b"1", b"2", b"3"]
    assert lines[0][0].endswith(b"a.txt:2")
    assert whole[0].endswith(b"a.txt") and whole[1] == b"h\n1\n2\n"
    assert not any(t.is_alive() for t in threads)


def test_coordinator_reports_the_first_error():
    coord = gf.train.Coordinator()

    def worker():
        with coord.stop_on_exception():
            raise ValueError("boom")

    thread = threading.Thread(target=worker)
    coord.register_thread(thread)
    thread.start()
    with pytest.raises(ValueError, match="boom"):
        coord.join()
    clean = gf.train.Coordinator()
    clean.request_stop(gf.errors.OutOfRangeError(None, None, "done"))
    clean.join()  # a clean stop raises nothing
    assert clean.should_stop() and clean.joined


def test_bad_queue_calls_leave_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        q = gf.FIFOQueue(2, [gf.int32, gf.float32], shapes=[[], [2]])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="components"):
            q.enqueue([1])
        with pytest.raises(ValueError, match="incompatible"):
            q.enqueue([1, [1.0, 2.0, 3.0]])
        with pytest.raises(ValueError, match="fully defined"):
            gf.train.batch([gf.placeholder(gf.float32, [None])], 2)
        with pytest.raises(ValueError, match="not supported"):
            gf.train.QueueRunner(q, [q.enqueue([1, [1.0, 2.0]])], queue_runner_def=object())
        after = [op.name for op in graph.get_operations()]
        assert after[:len(before)] == before
        assert not any(n.startswith("batch") for n in after)
