"""reverse_sequence against TF 2.21: values, gradients, names, errors."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from sequence_fixture import DATA, check

import gradflow as gf

CASES = DATA["reverse"]


@pytest.mark.parametrize("key", ["seq1_batch0", "seq0_batch1", "seq2_batch0"])
def test_reverse_sequence_matches_tf(key):
    case = CASES[key]
    out, graph = check(f"reverse_{key}",
                       lambda x: gf.reverse_sequence(x, case["lengths"], **case["kwargs"]))
    assert out.name == case["out_name"] and out.shape.as_list() == case["out_shape"]
    recorded = [op for op in case["ops"] if op[0].startswith("ReverseSequence")]
    made = [[op.name, op.type] for op in graph.get_operations()
            if op.name.startswith("ReverseSequence")]
    assert made == recorded


def test_reverse_sequence_numeric_gradients():
    x = np.random.default_rng(2).standard_normal((3, 4, 2))
    assert gradient_error(lambda v: gf.reverse_sequence(v, [4, 0, 2], seq_axis=1), [x]) < 1e-8
    assert second_order_error(lambda v: gf.reverse_sequence(v, [1, 3, 2, 3], seq_axis=0,
                                                            batch_axis=1) ** 2, [x]) < 1e-7


def test_reverse_sequence_deprecated_names(sess):
    x = np.arange(6.0).reshape(2, 3)
    value = sess.run(gf.reverse_sequence(x, [2, 3], seq_dim=1, batch_dim=0))
    np.testing.assert_array_equal(value, [[1, 0, 2], [5, 4, 3]])
    with pytest.raises(ValueError, match="seq_axis"):
        gf.reverse_sequence(x, [2, 3])


def test_reverse_sequence_errors_leave_graph_unchanged(sess):
    x = gf.zeros([3, 4])
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="must not be equal|equal"):
        gf.reverse_sequence(x, [1, 2, 3, 4], seq_axis=1, batch_axis=1)
    with pytest.raises(ValueError, match=CASES["length_mismatch"]["message"][:40]):
        gf.reverse_sequence(x, [1, 2], seq_axis=1, batch_axis=0)
    assert [op.name for op in graph.get_operations()] == before
    too_long = gf.reverse_sequence(x, [1, 5, 2], seq_axis=1)
    with pytest.raises(gf.errors.InvalidArgumentError, match=r"seq_lens\(1\) > input.dims"):
        sess.run(too_long)
