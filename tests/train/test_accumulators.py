"""ConditionalAccumulator and SparseConditionalAccumulator against TF 2.21."""
import threading
import time

import numpy as np
import pytest

import gradflow as gf
from gradflow.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from tf_fixtures import load_json

tf1 = gf.compat.v1
FIXTURE = load_json("distributed_api")["accumulators"]


def _build():
    """The fixture script's accumulators and ops, in its order (so names agree)."""
    graph = gf.get_default_graph()
    acc = ConditionalAccumulator(gf.float32, shape=[2], name="acc")
    first = len(graph.get_operations())
    ops = {"a1": acc.apply_grad([1.0, 2.0], local_step=0),
           "a2": acc.apply_grad(gf.constant([3.0, 4.0]), local_step=1),
           "n": acc.num_accumulated(), "take": acc.take_grad(2),
           "set5": acc.set_global_step(5),
           "late": acc.apply_grad([1.0, 1.0], local_step=5)}
    dense_ops = [[op.name, op.type, [t.name for t in op.inputs]]
                 for op in graph.get_operations()[first:]]
    sacc = SparseConditionalAccumulator(gf.float32, shape=[3, 1], name="sacc")
    first = len(graph.get_operations())
    ops["s1"] = sacc.apply_grad([0, 1], [[1.0], [2.0]], local_step=0)
    ops["s2"] = sacc.apply_indexed_slices_grad(gf.IndexedSlices(
        gf.constant([[3.0], [4.0]]), gf.constant([1, 2], gf.int64)), local_step=0)
    ops["stake"] = sacc.take_indexed_slices_grad(2)
    sparse_ops = [[op.name, op.type] for op in graph.get_operations()[first:]]
    s0 = SparseConditionalAccumulator(gf.float32, shape=(), name="s0")
    ops["s0a"] = s0.apply_grad([2, 0], [[1.0, 2.0], [3.0, 4.0]], grad_shape=[4, 2])
    ops["s0b"] = s0.apply_grad([2], [[5.0, 6.0]], grad_shape=[4, 2])
    ops["s0take"] = s0.take_grad(2)
    ssum = SparseConditionalAccumulator(gf.float32, shape=[None, 2], name="ssum",
                                        reduction_type="SUM")
    ops["ssa"] = ssum.apply_grad([3, 1], [[1.0, 1.0], [2.0, 2.0]], grad_shape=[5, 2])
    ops["ssb"] = ssum.apply_grad([3], [[1.0, 1.0]], grad_shape=[5, 2])
    ops["sstake"] = ssum.take_grad(2)
    bad = {"dense_shape": acc.apply_grad(tf1.placeholder_with_default([1.0, 2, 3], [None]),
                                         local_step=10),
           "num_required": acc.take_grad(0),
           "sparse_index": sacc.apply_grad([0, 5], [[1.0], [2.0]], local_step=10),
           "sparse_row": sacc.apply_grad([0, 1], [[1.0, 2.0], [2.0, 3.0]], local_step=10)}
    return acc, ops, bad, dense_ops, sparse_ops


def test_op_names_and_inputs_are_tfs():
    _, _, _, dense_ops, sparse_ops = _build()
    assert dense_ops == FIXTURE["ops"]
    assert sparse_ops == [list(op) for op in FIXTURE["sparse_ops"]]


def test_values_counts_and_staleness_match_tf(sess):
    _, ops, _, _, _ = _build()
    counts = []
    sess.run(ops["a1"])
    counts.append(int(sess.run(ops["n"])))
    sess.run(ops["a2"])
    counts.append(int(sess.run(ops["n"])))
    np.testing.assert_allclose(sess.run(ops["take"]), FIXTURE["take"])
    counts.append(int(sess.run(ops["n"])))
    sess.run(ops["a1"])  # local step 0 is stale after the take
    counts.append(int(sess.run(ops["n"])))
    sess.run(ops["set5"])
    sess.run(ops["a2"])
    counts.append(int(sess.run(ops["n"])))
    sess.run(ops["late"])
    counts.append(int(sess.run(ops["n"])))
    assert counts == FIXTURE["counts"]
    sess.run(ops["s1"])
    sess.run(ops["s2"])
    value = sess.run(ops["stake"])
    indices, values, shape = FIXTURE["sparse_take"]
    assert value.indices.tolist() == indices and value.dense_shape.tolist() == shape
    np.testing.assert_allclose(value.values, values)
    for apply_a, apply_b, take, key in (("s0a", "s0b", "s0take", "sparse_unknown_shape"),
                                        ("ssa", "ssb", "sstake", "sparse_sum")):
        sess.run(ops[apply_a])
        sess.run(ops[apply_b])
        got = sess.run(ops[take])
        assert got.indices.tolist() == FIXTURE[key][0]
        np.testing.assert_allclose(got.values, FIXTURE[key][1])
        assert got.shape.tolist() == FIXTURE[key][2]


@pytest.mark.parametrize("key", sorted(FIXTURE["messages"]))
def test_run_time_errors_match_tf(sess, key):
    acc, ops, bad, _, _ = _build()
    sess.run(ops["a1"])  # the dense accumulator now holds a [2] gradient
    error_type, message = FIXTURE["messages"][key]
    with pytest.raises(getattr(gf.errors, error_type), match=message.replace("[", r"\[")):
        sess.run(bad[key])


def test_build_time_errors_match_tf_and_change_nothing():
    acc, _, _, _, _ = _build()
    ints = gf.constant([1, 2])
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    for key, call in {"apply_shape": lambda: acc.apply_grad([1.0, 2.0, 3.0]),
                      "apply_dtype": lambda: acc.apply_grad(ints),
                      "reduction": lambda: ConditionalAccumulator(
                          gf.float32, reduction_type="MAX")}.items():
        error_type, message = FIXTURE["static_errors"][key]
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        assert type(info.value).__name__ == error_type
        if key != "apply_dtype":  # TF's names the tensor by its own counter
            assert str(info.value) == message
        assert [op.name for op in graph.get_operations()] == before


def test_integer_dtype_is_refused():
    with pytest.raises(TypeError, match="dtype"):
        ConditionalAccumulator(gf.int32)


def test_take_grad_waits_for_enough_gradients(sess):
    acc = ConditionalAccumulator(gf.float64, shape=[2])
    grad = tf1.placeholder(gf.float64, [2])
    apply = acc.apply_grad(grad)
    take = acc.take_grad(2)
    result = []
    taker = threading.Thread(target=lambda: result.append(sess.run(take)))
    taker.start()
    sess.run(apply, {grad: [1.0, 3.0]})
    time.sleep(0.05)
    assert not result  # one gradient of two
    sess.run(apply, {grad: [3.0, 5.0]})
    taker.join(10)
    np.testing.assert_allclose(result[0], [2.0, 4.0])


def test_closing_the_session_wakes_a_waiting_take():
    acc = ConditionalAccumulator(gf.float32, shape=[])
    take = acc.take_grad(1)
    session = gf.Session()
    errors = []

    def wait():
        try:
            session.run(take)
        except gf.errors.CancelledError as err:
            errors.append(err)

    taker = threading.Thread(target=wait)
    taker.start()
    time.sleep(0.05)
    session.close()
    taker.join(10)
    assert not taker.is_alive() and len(errors) == 1


def test_shared_name_shares_one_accumulator(sess):
    first = ConditionalAccumulator(gf.float32, shape=[], shared_name="shared")
    second = ConditionalAccumulator(gf.float32, shape=[], shared_name="shared")
    sess.run(first.apply_grad(2.0))
    sess.run(second.apply_grad(4.0))
    assert sess.run(first.num_accumulated()) == 2
    assert sess.run(second.take_grad(2)) == 3.0
