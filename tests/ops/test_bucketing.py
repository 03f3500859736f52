"""``searchsorted`` and ``histogram_fixed_width`` against TF 2.21: results, dtypes,
static shapes, output names and messages (fixture ``make_bucketing.py``)."""
import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

RECORDED = load_json("bucketing")


@pytest.mark.parametrize("key", sorted(RECORDED["search"]))
def test_searchsorted_matches_tensorflow(key):
    case = RECORDED["search"][key]
    with gf.Graph().as_default():
        result = gf.searchsorted(case["sequence"], case["values"], side=case["side"],
                                 out_type=getattr(gf, case["out_type"]))
        with gf.Session() as sess:
            got = sess.run(result)
    assert got.tolist() == case["result"]
    assert (result.dtype.name, result.shape.as_list()) == (case["dtype"], case["shape"])


@pytest.mark.parametrize("key", sorted(RECORDED["histograms"]))
def test_histogram_fixed_width_matches_tensorflow(key):
    case = RECORDED["histograms"][key]
    with gf.Graph().as_default():
        hist = gf.histogram_fixed_width(case["values"], case["value_range"],
                                        nbins=case["nbins"], dtype=getattr(gf, case["dtype"]))
        with gf.Session() as sess:
            got = sess.run(hist)
    assert got.tolist() == case["result"]
    assert got.dtype == getattr(gf, case["dtype"]).as_numpy_dtype
    assert hist.shape.as_list() == case["shape"]


def test_names_shapes_no_gradient_and_errors():
    with gf.Graph().as_default() as g:
        seq = gf.constant([[0., 3., 9.], [1., 2., 3.]], name="seq")
        vals = gf.placeholder(gf.float32, [2, None], name="vals")
        found = gf.searchsorted(seq, vals)
        hist = gf.histogram_fixed_width(gf.placeholder(gf.float32, [None]), [0.0, 1.0],
                                        nbins=4, name="hist")
        assert [found.name, found.shape.as_list(), hist.name, hist.shape.as_list(),
                [op.name for op in g.get_operations() if op.type in (
                    "LowerBound", "HistogramFixedWidth", "Reshape")]] == RECORDED["names"]
        assert gf.gradients(gf.cast(found, gf.float32), vals) == [None]
        before = [op.name for op in g.get_operations()]
        got = []
        for make in (lambda: gf.searchsorted(seq, vals, side="middle"),
                     lambda: gf.searchsorted(seq, gf.constant([[1, 2], [3, 4]])),
                     lambda: gf.histogram_fixed_width(gf.constant([1.0]), [0.0, 1.0, 2.0]),
                     lambda: gf.histogram_fixed_width([1.0], [0.0, 1.0], nbins=0)):
            with pytest.raises((TypeError, ValueError)) as info:
                make()
            got.append([type(info.value).__name__, str(info.value).split(" for ")[0]])
        assert got == RECORDED["build_errors"]
        # The failed calls left nothing but the two constants their callers made.
        assert [op.name for op in g.get_operations()] == before + ["Const", "Const_1"]
        messages = []
        for make in (lambda: gf.searchsorted(seq, gf.constant([1.0, 2.0])),
                     lambda: gf.histogram_fixed_width(
                         [1.0], [0.0, 1.0], nbins=gf.placeholder_with_default(0, [])),
                     lambda: gf.histogram_fixed_width([1.0], [5.0, 1.0], nbins=3)):
            with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError) as info:
                sess.run(make())
            messages.append(info.value.message.splitlines()[0])
        assert messages == RECORDED["run_errors"]


def test_searchsorted_fed_shapes():
    with gf.Graph().as_default():
        seq = gf.placeholder(gf.float64, [None, None])
        vals = gf.placeholder(gf.float64, None)
        found = gf.searchsorted(seq, vals, side="right")
        with gf.Session() as sess:
            got = sess.run(found, {seq: [[1.0, 2.0, 2.0]], vals: [[2.0, 0.5]]})
    assert got.tolist() == [[3, 0]]
    assert np.asarray(got).dtype == np.int32
