"""``tf.sets`` against TF 2.21: set operations of dense and sparse operands, set sizes,
names, shapes and messages (fixture ``make_sets.py``)."""
import pytest

import gradflow as gf
from tf_fixtures import load_json

RECORDED = load_json("sets")


def _operands():
    a = gf.constant([[1, 2, 3, 3], [4, 5, 6, 4]], dtype=gf.int64)
    b = gf.constant([[2, 3, 9], [0, 4, 4]], dtype=gf.int64)
    sp = gf.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]],
                         values=gf.constant([3, 7, 6], gf.int64), dense_shape=[2, 2])
    a3 = gf.constant([[[1, 2], [3, 3]], [[5, 5], [6, 7]]], dtype=gf.int32)
    b3 = gf.constant([[[2, 8, 1]], [[5, 0, 0]]], dtype=gf.int32)
    return a, b, sp, a3, b3


def test_set_operations_match_tensorflow():
    with gf.Graph().as_default():
        a, b, sp, a3, _ = _operands()
        results = {
            "intersection": gf.sets.set_intersection(a, b), "union": gf.sets.set_union(a, b),
            "difference": gf.sets.set_difference(a, b),
            "difference_ba": gf.sets.set_difference(a, b, aminusb=False),
            "dense_sparse": gf.sets.set_intersection(a, sp),
            "sparse_dense_difference": gf.sets.set_difference(sp, a),
            "sparse_sparse": gf.sets.set_union(sp, sp),
            "strings": gf.sets.intersection(gf.constant([["a", "b"], ["c", "d"]]),
                                            gf.constant([["b", "x"], ["d", "c"]])),
            "rank3_union": gf.sets.union(a3, gf.constant([[[9, 1], [0, 0]], [[0, 0], [7, 7]]],
                                                         gf.int32)),
        }
        sizes = {"size_sparse": gf.sets.set_size(sp),
                 "size_intersection": gf.sets.size(gf.sets.set_intersection(a, b))}
        with gf.Session() as sess:
            values, size_values = sess.run([results, sizes])
    for key, tensor in results.items():
        want = RECORDED["results"][key]
        got = values[key]
        assert got.indices.tolist() == want["indices"], key
        assert [v.decode() if isinstance(v, bytes) else v
                for v in got.values.tolist()] == want["values"], key
        assert got.dense_shape.tolist() == want["dense_shape"], key
        assert tensor.values.name == want["name"]
        assert tensor.dense_shape.shape.as_list() == want["shape_shape"]
        assert tensor.dtype.name == want["dtype"]
    for key, tensor in sizes.items():
        assert [size_values[key].tolist(), tensor.name, tensor.dtype.name] == \
            RECORDED["sizes"][key]


def test_bad_set_calls_raise_tensorflow_errors_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        a, _, _, a3, b3 = _operands()
        floats = gf.constant([[1.0]])
        vector, short = gf.constant([1, 2]), gf.constant([1])
        other_batch = gf.constant([[1, 2]], gf.int64)
        first_row = b3[:, :, :1][:1]
        before = [op.name for op in g.get_operations()]
        got = []
        for make in (lambda: gf.sets.set_size(a),
                     lambda: gf.sets.set_intersection(a, floats),
                     lambda: gf.sets.set_intersection(vector, short),
                     lambda: gf.sets.set_intersection(a, other_batch),
                     lambda: gf.sets.set_intersection(a3, first_row)):
            with pytest.raises((TypeError, ValueError)) as info:
                make()
            got.append([type(info.value).__name__, str(info.value).split(" for ")[0]])
        assert got == RECORDED["errors"]
        with pytest.raises(TypeError) as info:
            gf.sets.set_intersection(floats, floats)
        assert str(info.value).startswith(RECORDED["dtype_error"])
        assert [op.name for op in g.get_operations()] == before
