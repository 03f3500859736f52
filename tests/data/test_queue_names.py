"""Queue names as TF 2.21 gives them (graph mode).

``queue.name`` (and a ``QueueRunner``'s) is the whole op name, name scope included
(``tf.train.batch``'s runner is ``batch/fifo_queue``); the queue's method ops use the
last component (``myq_Size``). ``name=None`` gives the op type's name (``FIFOQueueV2``).
"""
import gradflow as gf


def test_queue_name_is_the_whole_op_name():
    with gf.Graph().as_default():
        with gf.name_scope("batch"):
            unnamed = gf.FIFOQueue(3, [gf.float32], name=None)
            named = gf.FIFOQueue(3, [gf.float32], name="myq")
            shuffled = gf.RandomShuffleQueue(3, 1, [gf.float32], name=None)
        padded = gf.PaddingFIFOQueue(3, [gf.float32], shapes=[[None]])
        assert [unnamed.name, named.name, shuffled.name, padded.name] == [
            "batch/FIFOQueueV2", "batch/myq", "batch/RandomShuffleQueueV2",
            "padding_fifo_queue"]
        assert [named.size().name, unnamed.dequeue().name, padded.close().name] == [
            "myq_Size:0", "FIFOQueueV2_Dequeue:0", "padding_fifo_queue_Close"]
        runner = gf.train.QueueRunner(unnamed, [unnamed.enqueue([1.0])])
        assert runner.name == "batch/FIFOQueueV2"


def test_batch_queue_runner_is_named_under_the_batch_scope():
    with gf.Graph().as_default():
        gf.train.batch([gf.constant(1.0)], 2)
        batched = gf.train.batch([gf.constant(1.0)], 2)
        assert batched.name == "batch_1:0"
        assert [r.name for r in gf.get_collection(gf.GraphKeys.QUEUE_RUNNERS)] == [
            "batch/fifo_queue", "batch_1/fifo_queue"]


def test_is_closed_op_name():
    with gf.Graph().as_default():
        queue = gf.FIFOQueue(3, [gf.float32])
        assert queue.is_closed().name == "fifo_queue_Is_Closed:0"
        assert queue.is_closed(name="closed").name == "closed:0"
