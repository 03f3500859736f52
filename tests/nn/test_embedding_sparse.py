"""gf.nn.embedding_lookup (sharded, max_norm) and embedding_lookup_sparse against TF 2.21."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from sequence_fixture import DATA, check

import gradflow as gf

CASES = DATA["embedding"]
SPARSE = CASES["sparse_inputs"]


def sparse_ids():
    return gf.SparseTensor(np.asarray(SPARSE["indices"]), np.asarray(SPARSE["ids"]), [4, 3])


def sparse_weights(weights=None):
    values = np.asarray(SPARSE["weights"]) if weights is None else weights
    return gf.SparseTensor(np.asarray(SPARSE["indices"]), values, [4, 3])


@pytest.mark.parametrize("key", [k for k in CASES if k.startswith("lookup_") and
                                 k != "lookup_max_norm"])
def test_sharded_lookup_matches_tf(key):
    case = CASES[key]
    out, _ = check(key, lambda *tables: gf.nn.embedding_lookup(
        list(tables), np.asarray(case["ids"]), partition_strategy=case["strategy"]))
    assert out.shape.as_list() == case["out_shape"]


def test_lookup_max_norm_matches_tf():
    check("lookup_max_norm", lambda t: gf.nn.embedding_lookup(t, [0, 3, 3, 1], max_norm=1.5))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_matches_tf(combiner, weighted):
    key = f"sparse_{combiner}_{'weighted' if weighted else 'plain'}"
    out, _ = check(key, lambda t: gf.nn.embedding_lookup_sparse(
        t, sparse_ids(), sparse_weights() if weighted else None, combiner=combiner))
    assert out.name == CASES[key]["out_name"]
    # gradflow knows the row count of constant ids, where TF leaves it unknown.
    assert out.shape.is_compatible_with(CASES[key]["out_shape"])


def test_embedding_lookup_sparse_sharded_matches_tf():
    check("sparse_sharded_div", lambda a, b: gf.nn.embedding_lookup_sparse(
        [a, b], sparse_ids(), None, partition_strategy="div", combiner="sqrtn"))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_numeric_gradients(combiner):
    rng = np.random.default_rng(4)
    table = rng.standard_normal((5, 3))
    weights = rng.uniform(0.5, 2.0, size=len(SPARSE["ids"]))

    def build(t, w):
        return gf.nn.embedding_lookup_sparse(t, sparse_ids(), sparse_weights(w),
                                             combiner=combiner)
    assert gradient_error(build, [table, weights]) < 1e-7
    assert second_order_error(lambda w, t: build(t, w), [weights, table]) < 1e-6
    assert gradient_error(lambda t: gf.nn.embedding_lookup_sparse(
        t, sparse_ids(), None, combiner=combiner), [table]) < 1e-7


def test_embedding_lookup_sparse_gradient_is_sparse():
    table = gf.constant(np.ones((5, 3)))
    out = gf.nn.embedding_lookup_sparse(table, sparse_ids(), None)
    (grad,) = gf.gradients(out, [table])
    assert isinstance(grad, gf.IndexedSlices)


@pytest.mark.parametrize("key", ["bad_combiner", "dense_ids", "bad_strategy"])
def test_embedding_errors_match_tf_and_leave_graph_unchanged(key):
    case = CASES["errors"][key]
    table = gf.zeros([3, 2])
    ids = gf.SparseTensor([[0, 0]], np.asarray([1], np.int64), [1, 1])
    graph = gf.get_default_graph()
    before = [op.name for op in graph.get_operations()]
    calls = {"bad_combiner": lambda: gf.nn.embedding_lookup_sparse(table, ids, None,
                                                                   combiner="max"),
             "dense_ids": lambda: gf.nn.embedding_lookup_sparse(table, [[1]], None),
             "bad_strategy": lambda: gf.nn.embedding_lookup([table, table], [1],
                                                            partition_strategy="x")}
    with pytest.raises((TypeError, ValueError)) as info:
        calls[key]()
    assert type(info.value).__name__ == case["error"]
    assert str(info.value) == case["message"]
    assert [op.name for op in graph.get_operations()] == before
