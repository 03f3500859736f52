"""Strings and ``tf.io`` byte ops against TF 2.21: every case of
``tests/fixtures/tf/strings_io_cases.py`` gives TF's values (strings as bytes), static
dtypes and shapes, op names and types, and error types and messages."""
import sys

import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf1
from gradflow.ops.string_hash import fingerprint64, murmur64, siphash24
from tf_fixtures import FIXTURES, load_json

sys.path.insert(0, str(FIXTURES))
from strings_io_cases import CASES, HASH_KEY, SEQ, text_program  # noqa: E402

RECORDED = load_json("strings_io")
# Messages that name something gradflow spells differently (py_func's token, RE2's
# wording of a bad pattern). A shape error's message is compared up to TF's NodeDef.
MESSAGE_DIFFERS = {"py_func_int", "regex_bad"}
# Static shapes gradflow knows less of than TF (TF folds the split of a constant).
SHAPE_LOOSER = {"unicode_split", "unicode_split_offsets"}


def encode(value):
    """A fetched value in the fixture's JSON form (see make_strings_io.py)."""
    if isinstance(value, gf.SparseTensorValue):
        return {"sparse": [encode(value.indices), encode(value.values),
                           encode(value.dense_shape)]}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    array = np.asarray(value)
    flat = [v.hex() if isinstance(v, bytes) else v for v in array.reshape(-1).tolist()]
    flat = [None if isinstance(v, float) and np.isnan(v) else
            ("inf" if v == np.inf else "-inf" if v == -np.inf else v)
            if isinstance(v, float) else v for v in flat]
    return {"dtype": "string" if array.dtype == object else array.dtype.name,
            "shape": list(array.shape), "value": flat}


def static(result):
    if isinstance(result, gf.SparseTensor):
        return static([result.indices, result.values, result.dense_shape])
    if isinstance(result, dict):
        return {k: static(v) for k, v in result.items()}
    if isinstance(result, (list, tuple)):
        return [static(r) for r in result]
    if isinstance(result, gf.Operation):
        return None
    shape = result.shape
    return {"dtype": result.dtype.name, "shape": None if shape.ndims is None else
            shape.as_list()}


def dtypes_of(entry) -> list:
    return [e["dtype"] for e in entry] if isinstance(entry, list) else [entry["dtype"]]


def check_error(key: str, err: Exception, recorded: dict) -> None:
    assert type(err).__name__ == recorded["type"], (key, err)
    if key not in MESSAGE_DIFFERS:
        expected = recorded["message"].split(" for '{{node ")[0]
        assert expected in str(err), (key, str(err), expected)


@pytest.mark.parametrize("key,expression,check_names", CASES, ids=[c[0] for c in CASES])
def test_case_matches_tf(key, expression, check_names):
    recorded = RECORDED["cases"][key]
    graph = gf.Graph()
    with graph.as_default():
        try:
            result = eval(expression, {"tf": tf1, "np": np, "SEQ": SEQ})  # noqa: S307 - the case table
        except (TypeError, ValueError) as err:
            assert "build_error" in recorded, (key, err)
            check_error(key, err, recorded["build_error"])
            if check_names:  # what was built before the bad call (TF may leave more)
                names = [op.name for op in graph.get_operations()]
                assert names == [name for name, _ in recorded["ops"]][:len(names)]
            return
        assert "build_error" not in recorded, key
        if check_names:
            assert [[op.name, op.type] for op in graph.get_operations()] == recorded["ops"]
        if key in SHAPE_LOOSER:
            assert dtypes_of(static(result)) == dtypes_of(recorded["static"])
        else:
            assert static(result) == recorded["static"]
        with gf.Session(graph=graph) as sess:
            try:
                value = sess.run(result)
            except gf.errors.OpError as err:
                assert "run_error" in recorded, (key, err)
                check_error(key, err, recorded["run_error"])
                return
    assert "run_error" not in recorded, key
    assert encode(value) == recorded["value"]


def test_hash_buckets_match_tf_on_many_strings():
    recorded = RECORDED["hashes"]
    strings = [bytes.fromhex(s) for s in recorded["strings"]]
    hashes = {"fast": fingerprint64, "legacy": murmur64,
              "strong": lambda s: siphash24(*HASH_KEY, s)}
    for buckets, by_kind in ((int(k), v) for k, v in recorded.items() if k != "strings"):
        for kind, expected in by_kind.items():
            assert [hashes[kind](s) % buckets for s in strings] == expected, (kind, buckets)


def test_hash_bucket_ops_match_tf_on_many_strings(sess):
    recorded = RECORDED["hashes"]
    strings = [bytes.fromhex(s) for s in recorded["strings"]]
    fetched = sess.run({
        "fast": gf.strings.to_hash_bucket_fast(strings, 1000),
        "legacy": gf.strings.to_hash_bucket(strings, 1000),
        "strong": gf.strings.to_hash_bucket_strong(strings, 1000, list(HASH_KEY))})
    assert {k: v.tolist() for k, v in fetched.items()} == recorded["1000"]


def test_text_program_matches_tf(tmp_path):
    recorded = RECORDED["text_program"]
    result = text_program(gf.compat.v1, str(tmp_path / "lines.txt"))
    for key in ("lines", "ids", "indices", "shout"):
        assert result[key] == recorded[key], key
    np.testing.assert_allclose([result["loss"], result["loss_after_step"]],
                               [recorded["loss"], recorded["loss_after_step"]], rtol=1e-6)
