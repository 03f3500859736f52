"""convert_to_tensor packs (nested) lists and tuples holding tensors, as TF1 does:
names, dtypes, shapes and messages as TF 2.21 gives them for the same calls."""
import numpy as np
import pytest

import gradflow as gf


def _batch():
    x = gf.placeholder(gf.float32, [None, 4])
    return x, gf.shape(x)[0]


def test_a_list_with_a_tensor_becomes_one_pack():
    with gf.Graph().as_default():
        x, n = _batch()
        packed = gf.convert_to_tensor([n, 3])
        nested = gf.convert_to_tensor([[n, 1], [2, n]])
        named = gf.convert_to_tensor((n, 3), name="foo")
        assert (packed.op.name, packed.op.type, packed.dtype, packed.shape.as_list()) == \
            ("packed", "Pack", gf.int32, [2])
        assert [t.name for t in packed.op.inputs] == ["strided_slice:0", "packed/1:0"]
        assert nested.op.name == "packed_1" and nested.shape.as_list() == [2, 2]
        assert [t.name for t in nested.op.inputs[0].op.inputs] == \
            ["strided_slice:0", "packed_1/0/1:0"]
        assert named.op.name == "foo"
        with gf.Session() as sess:
            got = sess.run([packed, nested], {x: np.ones([5, 4])})
        np.testing.assert_array_equal(got[0], [5, 3])
        np.testing.assert_array_equal(got[1], [[5, 1], [2, 5]])


def test_ops_taking_lists_accept_tensors_inside():
    with gf.Graph().as_default():
        x, n = _batch()
        padded = gf.pad(x, [[0, n], [0, 0]])
        rows = gf.gather(x, [n - 1, 0])
        as_float = gf.cast([n, 2], gf.float32)
        wide = gf.convert_to_tensor([n, 2], dtype=gf.int64)
        with gf.Session() as sess:
            got = sess.run([padded, rows, as_float, wide], {x: np.arange(8.0).reshape(2, 4)})
        assert got[0].shape == (4, 4)
        np.testing.assert_array_equal(got[1], [[4, 5, 6, 7], [0, 1, 2, 3]])
        np.testing.assert_array_equal(got[2], [2.0, 2.0])
        assert got[3].dtype == np.int64


def test_mixed_dtypes_are_refused_with_tf_messages():
    with gf.Graph().as_default():
        x, n = _batch()
        with pytest.raises(TypeError, match="Expected int32, but got 2.5 of type 'float'"):
            gf.convert_to_tensor([n, 2.5])
        with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of "
                                            "dtype .*float32.* to .*int32"):
            gf.convert_to_tensor([n, x[0, 0]])


def test_lists_without_tensors_stay_constants():
    with gf.Graph().as_default():
        value = gf.convert_to_tensor([[1, 2], [3, 4]])
        assert value.op.type == "Const" and value.op.name == "Const"
