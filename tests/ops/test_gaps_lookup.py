"""``tf.lookup`` tables (StaticHashTable with key-value and text-file initializers,
tables_initializer) against TF 2.21 fixtures (tests/fixtures/tf/make_gaps.py)."""
import pathlib

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import FIXTURES, load_json

RECORDED = load_json("gaps")
VOCAB = str(FIXTURES / "files" / "gaps_vocab.txt")


def _tables():
    init = gf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [1, 2, 3],
                                               key_dtype=gf.string, value_dtype=gf.int64)
    table = gf.lookup.StaticHashTable(init, -1)
    out = {"kv": table.lookup(gf.constant(["a", "z", "c"])), "size": table.size()}
    whole = gf.lookup.StaticHashTable(gf.lookup.TextFileInitializer(
        VOCAB, gf.string, gf.lookup.TextFileIndex.WHOLE_LINE, gf.int64,
        gf.lookup.TextFileIndex.LINE_NUMBER), -1)
    column = gf.lookup.StaticHashTable(gf.lookup.TextFileInitializer(
        VOCAB, gf.string, 0, gf.int64, 1, delimiter="\t", name="columns"), -5,
        name="by_column")
    inverse = gf.lookup.StaticHashTable(gf.lookup.TextFileInitializer(
        VOCAB, gf.int64, gf.lookup.TextFileIndex.LINE_NUMBER, gf.string, 0, vocab_size=3),
        "UNK")
    int_keys = gf.lookup.StaticHashTable(gf.lookup.KeyValueTensorInitializer(
        gf.constant([3, 5], gf.int64), gf.constant([0.5, 1.5])), 0.0)
    # bytes keys, as strings hold them, and str keys find the same entries
    out["whole"] = whole.lookup(gf.constant([[b"the\t10", "x"], ["fox\t30", b"the"]]))
    out["column"] = column.lookup(gf.constant(["quick", b"jumps", "cat"]))
    out["inverse"] = inverse.lookup(gf.constant([0, 2, 3], gf.int64))
    out["int_keys"] = int_keys.lookup(gf.constant([5, 4, 3], gf.int64))
    return table, out


def test_tables_match_tf1():
    graph = gf.Graph()
    with graph.as_default():
        table, out = _tables()
        for key, tensor in out.items():
            assert tensor.name == RECORDED["names"]["lk_" + key], key
            assert tensor.shape.as_list() == RECORDED["shapes"]["lk_" + key], key
        assert [op.name for op in graph.get_operations()] == RECORDED["misc"]["lk_ops"]
        assert [op.name for op in graph.get_collection(gf.GraphKeys.TABLE_INITIALIZERS)] == \
            RECORDED["misc"]["lk_table_initializers"]
        assert gf.tables_initializer().name == RECORDED["names"]["lk_init"]
        assert gf.initialize_all_tables().name == RECORDED["names"]["lk_init_all"]
        with gf.Session() as session:
            with pytest.raises(gf.errors.FailedPreconditionError) as raised:
                session.run(out["kv"])
            assert str(raised.value).split("\n")[0] == \
                RECORDED["errors"]["lk_uninitialized"]["message"]
            session.run(gf.tables_initializer())
            got = session.run(out)
    for key, value in got.items():
        value = np.asarray(value)
        if value.dtype == object:
            assert all(isinstance(v, bytes) for v in value.reshape(-1))
            value = np.vectorize(bytes.decode)(value)
        assert value.tolist() == RECORDED["values"]["lk_" + key], key


def test_table_errors_match_tf1_and_leave_graph_unchanged(tmp_path: pathlib.Path):
    graph = gf.Graph()
    with graph.as_default():
        table, _ = _tables()
        ints = gf.constant([1, 2])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(TypeError) as raised:
            table.lookup(ints)
        assert str(raised.value) == RECORDED["errors"]["lk_key_dtype"]["message"]
        with pytest.raises(ValueError) as raised:
            gf.lookup.TextFileInitializer(VOCAB, gf.int32, gf.lookup.TextFileIndex.LINE_NUMBER,
                                          gf.string, 0)
        assert str(raised.value) == RECORDED["errors"]["lk_line_number_dtype"]["message"]
        assert [op.name for op in graph.get_operations()] == before
        missing = gf.lookup.StaticHashTable(gf.lookup.TextFileInitializer(
            str(tmp_path / "no_such_vocab.txt"), gf.string, 0, gf.int64, 1), -1)
        with gf.Session() as session:
            with pytest.raises(gf.errors.NotFoundError, match="No such file or directory"):
                session.run(missing.initializer)
    assert RECORDED["errors"]["lk_missing_file"]["error"] == "NotFoundError"


def test_conflicting_duplicate_keys_fail_and_sessions_hold_their_own_tables():
    with gf.Graph().as_default():
        bad = gf.lookup.StaticHashTable(gf.lookup.KeyValueTensorInitializer(
            ["a", "a"], [1, 2], value_dtype=gf.int64), -1)
        good = gf.lookup.StaticHashTable(gf.lookup.KeyValueTensorInitializer(
            ["a", "a"], [7, 7], value_dtype=gf.int64), -1)
        found = good.lookup(gf.constant(["a"]))
        with gf.Session() as session:
            with pytest.raises(gf.errors.FailedPreconditionError, match="different value"):
                session.run(bad.initializer)
            session.run(good.initializer)
            assert session.run(found).tolist() == [7]
        with gf.Session() as session:  # a new session starts with an empty table
            with pytest.raises(gf.errors.FailedPreconditionError):
                session.run(found)


def test_bad_initializer_and_table_calls_leave_the_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(TypeError, match="keys must be string, int32 or int64"):
            gf.lookup.KeyValueTensorInitializer([1.5, 2.5], [1, 2])
        init = gf.lookup.KeyValueTensorInitializer(["a"], [1], value_dtype=gf.int64)
        after_init = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError, match="default_value must be a scalar"):
            gf.lookup.StaticHashTable(init, [-1, -2])
        assert [op.name for op in graph.get_operations()] == after_init
        assert graph.get_collection(gf.GraphKeys.TABLE_INITIALIZERS) == []
        assert after_init[:len(before)] == before
