"""tf.lookup.StaticVocabularyTable against TF 2.21: op names, ids of known and
out-of-vocabulary string and integer keys (TF's Fingerprint64 buckets), sizes, errors."""
import json
import pathlib
import sys

import pytest

import gradflow as gf
import gradflow.compat.v1 as tf
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
import vocabulary_table_cases  # noqa: E402

RECORDED = load_json("vocabulary_table")


def test_vocabulary_table_matches_tensorflow():
    got = json.loads(json.dumps(vocabulary_table_cases.run(tf)))
    for key in ("ops", "names", "values", "errors"):
        assert got[key] == RECORDED[key], key


def test_bad_tables_leave_the_graph_as_it_was():
    with gf.Graph().as_default() as g:
        init = tf.lookup.KeyValueTensorInitializer(["a"], [0], value_dtype=tf.int64)
        table = tf.lookup.StaticVocabularyTable(init, 2)
        int_keys = tf.constant([1])
        before = [op.name for op in g.get_operations()]
        with pytest.raises(TypeError, match="Dtype of argument `keys`"):
            table.lookup(int_keys)
        with pytest.raises(TypeError, match="expected integer or string"):
            tf.lookup.StaticVocabularyTable(init, 2, lookup_key_dtype=tf.bool)
        with pytest.raises(ValueError, match="num_oov_buckets"):
            tf.lookup.StaticVocabularyTable(init, 0)
        assert [op.name for op in g.get_operations()] == before
