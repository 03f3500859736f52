"""``string_split`` (TF1's set-of-bytes separators, ``skip_empty``) and ``strings.split``
(a whole-string separator or whitespace, ``maxsplit``) against TF 2.21."""
from __future__ import annotations

import numpy as np
import pytest
from tf_fixtures import load_json

import gradflow as gf

FIXTURE = load_json("string_split")


def _call(fn: str, source, kwargs: dict):
    split = gf.string_split if fn == "string_split" else gf.strings.split
    return split(source, **kwargs) if source is not None else split(**kwargs)


@pytest.mark.parametrize("case", FIXTURE["cases"],
                         ids=lambda c: f"{c['fn']}-{sorted(c['kwargs'].items())}")
def test_split_matches_tf(case):
    with gf.Graph().as_default():
        sparse = _call(case["fn"], case["source"], case["kwargs"])
        assert isinstance(sparse, gf.SparseTensor)
        with gf.Session() as sess:
            value = sess.run(sparse)
    assert np.asarray(value.indices).tolist() == case["indices"]
    assert [v.decode("latin-1") for v in value.values] == case["values"]
    assert np.asarray(value.dense_shape).tolist() == case["dense_shape"]


@pytest.mark.parametrize("case", FIXTURE["errors"], ids=lambda c: c["message"][:30])
def test_split_errors_match_tf(case):
    graph = gf.Graph()
    with graph.as_default():
        with pytest.raises({"ValueError": ValueError, "TypeError": TypeError}[case["type"]]
                           ) as err:
            _call(case["fn"], case["source"], case["kwargs"])
        assert case["message"].split(" for ")[0] in str(err.value)
        assert graph.get_operations() == []


def test_ragged_results_are_refused_by_name():
    graph = gf.Graph()
    with graph.as_default():
        for split in (gf.string_split, gf.strings.split, gf.compat.v1.strings.split):
            with pytest.raises(ValueError, match="RaggedTensor"):
                split(["a b"], result_type="RaggedTensor")
        assert graph.get_operations() == []
