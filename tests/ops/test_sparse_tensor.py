"""SparseTensor, sparse placeholders and feeds, and the sparse ops, against TF 2.21."""
import numpy as np
import pytest
from gradcheck import gradient_error, second_order_error
from sequence_fixture import DATA, check

import gradflow as gf

CASES = DATA["sparse"]
SP_INDICES = np.array([[0, 1], [1, 0], [1, 3], [2, 2]], np.int64)
SP_SHAPE = [3, 4]


def sp(values, indices=SP_INDICES, shape=SP_SHAPE):
    return gf.SparseTensor(indices, values, shape)


def test_to_dense_and_sparse_to_dense_match_tf():
    out, _ = check("to_dense", lambda v: gf.sparse_tensor_to_dense(sp(v)))
    assert out.name == CASES["to_dense"]["out_name"]
    check("to_dense_default", lambda v, d: gf.sparse.to_dense(sp(v), default_value=d))
    out, graph = check("sparse_to_dense", lambda v: gf.sparse_to_dense([[0, 1], [2, 0]], [3, 2],
                                                                      v, 1.5))
    names = [op.name for op in graph.get_operations()]
    recorded = [n for n, _ in CASES["sparse_to_dense"]["ops"] if n.startswith("SparseToDense")]
    assert [n for n in names if n.startswith("SparseToDense")][:len(recorded)] == recorded
    check("sparse_to_dense_vector", lambda v: gf.sparse_to_dense([[1], [3]], [5], v))


@pytest.mark.parametrize("key", [k for k in CASES if k.startswith("reduce_sum")])
def test_sparse_reduce_sum_matches_tf(key):
    case = CASES[key]
    out, _ = check(key, lambda v: gf.sparse_reduce_sum(sp(v), axis=case["axis"],
                                                       keepdims=case["keepdims"]))
    assert out.shape.as_list() == case["out_shape"]
    assert out.name == case["out_name"]


@pytest.mark.parametrize("key", [k for k in CASES if k.startswith("matmul")])
def test_sparse_tensor_dense_matmul_matches_tf(key):
    case = CASES[key]
    out, _ = check(key, lambda v, b: gf.sparse_tensor_dense_matmul(
        sp(v, np.asarray(case["a_indices"]), case["a_shape"]), b,
        adjoint_a=case["adjoint_a"], adjoint_b=case["adjoint_b"]))
    assert out.name == case["out_name"]
    assert out.shape.as_list() == case["out_shape"]


def test_sparse_add_matches_tf():
    check("add_dense", lambda v, d: gf.sparse_add(sp(v), d))
    b_idx = np.asarray(CASES["add_sparse"]["b_indices"])
    check("add_sparse", lambda v, u: gf.sparse.add(sp(v), sp(u, b_idx)))
    check("add_sparse_threshold", lambda v, u: gf.sparse_add(sp(v), sp(u, b_idx),
                                                             threshold=0.25))


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_sparse_dense_matmul_numeric_gradients(adjoint_a, adjoint_b):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(4)
    b = rng.standard_normal((2, 4) if adjoint_b else (4, 2))
    indices = SP_INDICES[:, ::-1] if adjoint_a else SP_INDICES
    shape = SP_SHAPE[::-1] if adjoint_a else SP_SHAPE

    def build(v, dense):
        return gf.sparse_tensor_dense_matmul(sp(v, indices, shape), dense, adjoint_a=adjoint_a,
                                             adjoint_b=adjoint_b)
    assert gradient_error(build, [values, b]) < 1e-8
    assert second_order_error(lambda dense, v: build(v, dense), [b, values]) < 1e-7


def test_sparse_reduce_and_to_dense_numeric_gradients():
    values = np.random.default_rng(1).standard_normal(4)
    assert gradient_error(lambda v: gf.sparse_reduce_sum(sp(v), axis=0), [values]) < 1e-8
    assert gradient_error(lambda v: gf.sparse_tensor_to_dense(sp(v), default_value=0.5) ** 2,
                          [values]) < 1e-7
    assert gradient_error(lambda v, d: gf.sparse_to_dense([[0, 1], [1, 1]], [2, 3], v, d) ** 2,
                          [values[:2], np.float64(0.3)]) < 1e-7
    assert gradient_error(lambda v, d: gf.sparse_add(sp(v), d) ** 2,
                          [values, np.ones(SP_SHAPE)]) < 1e-7


@pytest.mark.parametrize("key", ["plain", "named", "shaped", "named_shaped"])
def test_sparse_placeholder_names_shapes_feeds_and_fetches(key, sess):
    case = DATA["placeholders"][key]
    kwargs = dict(case["kwargs"])
    placeholder = gf.sparse_placeholder(gf.float32, **kwargs)
    dense = gf.sparse_tensor_to_dense(placeholder)
    ops = [[op.name, op.type] for op in gf.get_default_graph().get_operations()]
    assert ops == case["ops"]
    assert [placeholder.indices.name, placeholder.values.name,
            placeholder.dense_shape.name] == case["names"]
    expected_shape = case["shape"]
    assert (placeholder.shape.ndims is None if expected_shape is None
            else placeholder.shape.as_list() == expected_shape)
    feed = ([[0, 1], [1, 0]], [1.0, 2.0], [2, 5])
    for value in (feed, gf.SparseTensorValue(*feed)):
        fetched, dense_value = sess.run([placeholder, dense], {placeholder: value})
        assert isinstance(fetched, gf.SparseTensorValue)
        assert [fetched.indices.tolist(), fetched.values.tolist(),
                fetched.dense_shape.tolist()] == case["fetched"]
        assert dense_value.tolist() == case["dense"]


def test_constant_sparse_tensor_names_and_shape():
    case = DATA["placeholders"]["constant"]
    value = gf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert [[op.name, op.type] for op in gf.get_default_graph().get_operations()] == case["ops"]
    assert value.shape.as_list() == case["shape"] and value.dtype.name == case["dtype"]
    assert gf.SparseTensor.from_value(gf.SparseTensorValue([[0]], [1], [2])).shape == [2]


def test_sparse_feed_needs_three_parts(sess):
    placeholder = gf.sparse_placeholder(gf.float32)
    with pytest.raises(TypeError, match="SparseTensorValue"):
        sess.run(placeholder.values, {placeholder: [[0, 0], [1.0]]})


@pytest.mark.parametrize("key", ["repeated", "unordered", "out_of_bounds"])
def test_sparse_to_dense_index_errors_match_tf(key, sess):
    case = DATA["sparse_errors"][key]
    dense = gf.sparse_to_dense(case["indices"], [3, 2], [1.0, 2.0])
    with pytest.raises(gf.errors.InvalidArgumentError) as info:
        sess.run(dense)
    assert case["message"].strip().split(".")[0] in str(info.value)


def test_bad_sparse_calls_raise_and_leave_graph_unchanged():
    graph = gf.get_default_graph()
    value = sp(np.ones(4))
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(TypeError, match="SparseTensor"):
        gf.sparse_tensor_to_dense(np.ones((2, 2)))
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        gf.sparse_tensor_dense_matmul(value, np.ones((3, 2)))
    with pytest.raises(ValueError, match="Invalid reduction dimension"):
        gf.sparse_reduce_sum(value, axis=2)
    with pytest.raises(ValueError, match="rank 2"):
        gf.SparseTensor([0, 1], [1.0, 2.0], [3])
    assert [op.name for op in graph.get_operations()] == before


def test_sparse_placeholder_of_unknown_rank(sess):
    placeholder = gf.sparse_placeholder(gf.float64, shape=gf.TensorShape(None), name="u")
    assert placeholder.dense_shape.op.type == "Placeholder"
    assert placeholder.shape.ndims is None
    total = gf.sparse_reduce_sum(placeholder, axis=[0])
    value = sess.run(total, {placeholder: gf.SparseTensorValue([[1, 0], [1, 1]], [2.0, 3.0],
                                                               [2, 2])})
    np.testing.assert_array_equal(value, [2.0, 3.0])
