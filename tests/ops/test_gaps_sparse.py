"""The tf.sparse names added from the API gap list against TF 2.21 fixtures
(tests/fixtures/tf/make_gaps.py), with numeric gradient checks of the values paths."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error
from tf_fixtures import load_json

RECORDED = load_json("gaps")
# gradflow keeps a constant dense shape where TF's composition computes it
_SHAPE_MORE_PRECISE = {"expand"}


def _inputs():
    sp = gf.SparseTensor([[0, 1], [2, 3], [1, 0], [2, 0]], [1.0, 3.0, 2.0, 4.0], [3, 4])
    ids = gf.SparseTensor([[0, 0], [1, 0], [1, 1]], gf.constant([2, 0, 3], gf.int64), [2, 2])
    vals = gf.SparseTensor([[0, 0], [1, 0], [1, 1]], [1.0, 2.0, 3.0], [2, 2])
    empty_rows = gf.SparseTensor([[0, 1], [2, 3], [2, 0]], [1.0, 3.0, 4.0], [4, 4])
    hyp = gf.SparseTensor([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0]],
                          ["a", "b", "c", "x"], [2, 2, 2])
    truth = gf.SparseTensor([[0, 0, 0], [1, 0, 0], [1, 0, 1]], ["a", "c", "d"], [2, 2, 2])
    return sp, ids, vals, empty_rows, hyp, truth


def _cases(sp, ids, vals, empty_rows):
    return {
        "reorder": gf.sparse_reorder(sp),
        "reshape": gf.sparse_reshape(sp, [4, -1]),
        "retain": gf.sparse_retain(sp, [True, False, True, True]),
        "slice": gf.sparse_slice(sp, [0, 1], [2, 3]),
        "split0": gf.sparse_split(sp_input=sp, num_split=3, axis=1)[0],
        "split2": gf.sparse_split(sp_input=sp, num_split=3, axis=1)[2],
        "concat": gf.sparse_concat(1, [sp, sp]),
        "concat0": gf.sparse_concat(0, [sp, gf.sparse_reset_shape(sp, [3, 5])],
                                    expand_nonconcat_dim=True),
        "transpose": gf.sparse_transpose(sp),
        "softmax": gf.sparse_softmax(gf.sparse_reorder(sp)),
        "maximum": gf.sparse_maximum(sp, gf.SparseTensor([[0, 1], [1, 1]], [5.0, -2.0],
                                                          [3, 4])),
        "minimum": gf.sparse_minimum(sp, gf.SparseTensor([[0, 1], [1, 1]], [5.0, -2.0],
                                                          [3, 4])),
        "fill": gf.sparse_fill_empty_rows(empty_rows, -1.0)[0],
        "reduce_max_sparse": gf.sparse_reduce_max_sparse(sp, 1),
        "reduce_sum_sparse": gf.sparse_reduce_sum_sparse(sp, 0, keepdims=True),
        "from_dense": gf.sparse.from_dense(gf.constant([[0, 1], [2, 0]])),
        "eye": gf.sparse.eye(3, 4),
        "expand": gf.sparse.expand_dims(sp, -1),
        "merge": gf.sparse_merge(ids, vals, 5),
        "reset": gf.sparse_reset_shape(sp),
    }


def test_sparse_ops_match_tf1():
    graph = gf.Graph()
    with graph.as_default():
        sp, ids, vals, empty_rows, hyp, truth = _inputs()
        cases = _cases(sp, ids, vals, empty_rows)
        dense = {"reduce_max": gf.sparse_reduce_max(sp, 1),
                 "indicator": gf.sparse_to_indicator(ids, 5),
                 "edit": gf.edit_distance(hyp, truth),
                 "edit_raw": gf.edit_distance(hyp, truth, normalize=False)}
        for key, value in {**cases, **dense}.items():
            if key not in _SHAPE_MORE_PRECISE:
                shape = value.shape
                assert (None if shape.ndims is None else shape.as_list()) == \
                    RECORDED["shapes"]["sp_" + key], key
        for key in ("reorder", "slice", "concat", "softmax", "maximum", "fill",
                    "reduce_max_sparse", "merge", "transpose"):
            assert cases[key].values.name == RECORDED["names"]["sp_" + key], key
        for key in ("reduce_max", "indicator", "edit"):
            assert dense[key].name == RECORDED["names"]["sp_" + key], key
        with gf.Session() as session:
            got = session.run({**cases, **dense})
    for key, value in got.items():
        expected = RECORDED["values"]["sp_" + key]
        if hasattr(value, "indices"):
            assert value.indices.tolist() == expected[0], key
            np.testing.assert_allclose(value.values, expected[1], rtol=1e-6, err_msg=key)
            assert value.dense_shape.tolist() == expected[2], key
        else:
            np.testing.assert_allclose(np.asarray(value, dtype=float),
                                       np.asarray(expected, dtype=float), rtol=1e-6,
                                       err_msg=key)


def test_values_gradients_match_tf1():
    with gf.Graph().as_default():
        sp, _, _, empty_rows, _, _ = _inputs()
        w = gf.constant([[1.0, 2.0, -1.0, 0.5]])
        default = gf.constant(-1.0)
        filled = gf.sparse_fill_empty_rows(empty_rows, default)
        grads = {
            "reorder_grad": gf.gradients(gf.reduce_sum(gf.sparse_reorder(sp).values * w),
                                         sp.values)[0],
            "slice_grad": gf.gradients(gf.reduce_sum(
                gf.sparse_slice(sp, [1, 0], [2, 4]).values * 3.0), sp.values)[0],
            "softmax_grad": gf.gradients(gf.reduce_sum(
                gf.sparse_softmax(gf.sparse_reorder(sp)).values * w), sp.values)[0],
        }
        grads["fill_grad_values"], grads["fill_grad_default"] = gf.gradients(
            gf.reduce_sum(filled[0].values * gf.range(1.0, 6.0)), [empty_rows.values, default])
        with gf.Session() as session:
            got = session.run(grads)
    for key, value in got.items():
        np.testing.assert_allclose(value, RECORDED["values"]["sp_" + key], rtol=1e-6,
                                   err_msg=key)


def test_errors_match_tf1():
    graph = gf.Graph()
    with graph.as_default():
        sp = _inputs()[0]
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError) as raised:
            gf.sparse_reshape(sp, [5, 3])
        assert str(raised.value) == RECORDED["errors"]["sp_reshape_bad"]["message"]
        assert [op.name for op in graph.get_operations()] == before
        bad = gf.sparse_maximum(sp, gf.SparseTensor([[0, 0]], [1.0], [2, 2]))
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError) as raised:
                session.run(bad)
        assert str(raised.value).split("\n")[0] == \
            RECORDED["errors"]["sp_maximum_shapes"]["message"]
        with pytest.raises(LookupError, match="No gradient defined"):
            gf.gradients(gf.reduce_sum(gf.sparse_reduce_max(sp, 1)), sp.values)


INDICES = [[0, 1], [2, 3], [1, 0], [2, 0]]


@pytest.mark.parametrize("case", ["reorder", "slice", "softmax", "fill", "concat",
                                  "transpose", "retain"])
def test_values_gradients_float64(case):
    def values_of(build):
        def run(v):
            sp = gf.SparseTensor(INDICES, v, [3, 4])
            return build(sp)
        return run
    builds = {
        "reorder": lambda sp: gf.sparse_reorder(sp).values,
        "slice": lambda sp: gf.sparse_slice(sp, [1, 0], [2, 4]).values,
        "softmax": lambda sp: gf.sparse_softmax(gf.sparse_reorder(sp)).values,
        "fill": lambda sp: gf.sparse_fill_empty_rows(
            gf.SparseTensor([[0, 1], [2, 3], [2, 0]], sp.values[:3], [4, 4]),
            sp.values[3])[0].values,
        "concat": lambda sp: gf.sparse_tensor_to_dense(gf.sparse_concat(
            1, [sp, sp]), validate_indices=False),
        "transpose": lambda sp: gf.sparse_transpose(sp).values,
        "retain": lambda sp: gf.sparse_retain(sp, [True, False, True, True]).values,
    }
    if case == "concat":  # SparseConcat is not differentiable in TF: no gradient path
        with gf.Graph().as_default():
            sp = gf.SparseTensor(INDICES, gf.constant([1.0, 2, 3, 4], gf.float64), [3, 4])
            assert gf.gradients(gf.reduce_sum(builds[case](sp)), sp.values) == [None]
        return
    assert gradient_error(values_of(builds[case]), [np.array([0.3, -1.2, 0.5, 2.0])]) < 1e-6


def test_sparse_namespace_short_names():
    assert gf.sparse.mask is gf.sparse_mask
    assert gf.sparse.segment_sum is gf.sparse_segment_sum
    assert gf.sparse.segment_mean is gf.sparse_segment_mean
    assert gf.sparse.segment_sqrt_n is gf.sparse_segment_sqrt_n
    assert gf.sparse.reorder is gf.sparse_reorder
