"""TF1 helper names from the API gap list (casts, checks, tensor_util, error codes,
deprecated aliases) against TF 2.21 fixtures (tests/fixtures/tf/make_gaps.py)."""
import re
import warnings

import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf1
from gradcheck import gradient_error
from tf_fixtures import load_arrays, load_json

RECORDED = load_json("gaps")
ARRAYS = load_arrays("gaps")


def _snapshot(graph):
    return ([op.name for op in graph.get_operations()],
            {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()})


def test_casts_match_tf1_values_and_names():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant([1.5, -2.0, 300.0, -1e10, 1e10])
        d = gf.constant([1e300, -1e300, 2.5, np.inf], gf.float64)
        i = gf.constant([-5, 70000, 255, 256])
        casts = {"sat_f32_u8": gf.saturate_cast(x, gf.uint8),
                 "sat_f32_i32": gf.saturate_cast(x, gf.int32),
                 "sat_f32_i8": gf.saturate_cast(x, gf.int8),
                 "sat_f64_f32": gf.dtypes.saturate_cast(d, gf.float32),
                 "sat_f32_f32": gf.saturate_cast(x, gf.float32),
                 "sat_i32_u8": gf.saturate_cast(i, gf.uint8),
                 "sat_i32_i16": gf.saturate_cast(i, gf.int16),
                 "to_c64": gf.to_complex64(x), "to_c128": gf.to_complex128(x)}
        for key, tensor in casts.items():
            assert tensor.name == RECORDED["names"][key], key
        with gf.Session() as session:
            got = session.run(casts)
    for key, value in got.items():
        assert value.dtype == ARRAYS[key].dtype, key
        np.testing.assert_array_equal(value, ARRAYS[key], err_msg=key)


def test_clip_by_value_op_gradient():
    x = np.array([-2.0, 0.1, 0.5, 3.0])
    assert gradient_error(lambda t: gf.saturate_cast(t * t, gf.float64), [x]) < 1e-6
    # Values clipped to float32's range: the gradient stops where a bound was used.
    graph = gf.Graph()
    with graph.as_default():
        t = gf.constant(x * [1e39, 1, 1, 1e39])
        (grad,) = gf.gradients(gf.saturate_cast(t, gf.float32), [t])
        with gf.Session() as session:
            np.testing.assert_array_equal(session.run(grad), [0.0, 1.0, 1.0, 0.0])


def test_ensure_shape_refines_and_checks():
    graph = gf.Graph()
    with graph.as_default():
        e = gf.ensure_shape(gf.placeholder(gf.float32, [None, 2]), [4, None])
        assert e.name == RECORDED["names"]["ensure_shape"]
        assert e.shape.as_list() == RECORDED["shapes"]["ensure_shape"]
        p = gf.placeholder(gf.float32, [None])
        fed = gf.ensure_shape(p, [3])
        x = gf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        before = _snapshot(graph)
        for label, shape in (("ensure_shape_static", [4]), ("ensure_shape_rank", [5, 1])):
            expected = RECORDED["errors"][label]
            with pytest.raises(ValueError) as raised:
                gf.ensure_shape(x, shape)
            assert str(raised.value).split(" for '")[0] == expected["message"].split(" for '")[0]
        assert _snapshot(graph) == before
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match=re.escape("[2] is not compatible with expected shape [3].")):
                session.run(fed, {p: [1.0, 2.0]})
            assert RECORDED["errors"]["ensure_shape_run"]["error"] == "InvalidArgumentError"
    assert gradient_error(lambda t: gf.ensure_shape(t * t, [3]), [np.array([1.0, 2, 3])]) < 1e-6


def test_assert_near_and_rank_in():
    graph = gf.Graph()
    with graph.as_default():
        q = gf.placeholder(gf.float32, [2])
        near = gf.assert_near(q, gf.constant([1.0, 2.0]), atol=0.1)
        ok = gf.debugging.assert_rank_in(gf.constant([1.0]), [1, 2])
        assert ok.name == RECORDED["names"]["assert_rank_in"]
        r = gf.placeholder(gf.float32)
        rank_check = gf.assert_rank_in(r, [0, 2])
        five = gf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        before = _snapshot(graph)
        with pytest.raises(ValueError) as raised:
            gf.assert_rank_in(five, [2, 3])
        assert re.sub(r"Const\S*", "", str(raised.value)) == re.sub(
            r"Const\S*", "", RECORDED["errors"]["assert_rank_in_static"]["message"])
        assert _snapshot(graph) == before
        with gf.Session() as session:
            session.run(near, {q: [1.0, 2.05]})
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match="x and y not equal to tolerance"):
                session.run(near, {q: [1.0, 2.5]})
            with pytest.raises(gf.errors.InvalidArgumentError, match="must have rank in"):
                session.run(rank_check, {r: [1.0]})
            session.run(rank_check, {r: 3.0})


def test_assert_same_float_dtype():
    with gf.Graph().as_default():
        x = gf.constant([1.0])
        assert gf.assert_same_float_dtype([]).name == RECORDED["misc"]["same_float_empty"]
        assert gf.assert_same_float_dtype([None, gf.constant(1.0, gf.float64)]).name == \
            RECORDED["misc"]["same_float_f64"]
        with pytest.raises(ValueError, match=re.escape(
                "type=<dtype: 'float64'>, must be of the same type (<dtype: 'float32'>) as")):
            gf.assert_same_float_dtype([x, gf.constant([1.0], gf.float64)])
        with pytest.raises(ValueError) as raised:
            gf.assert_same_float_dtype([gf.constant([1])])
        assert str(raised.value) == RECORDED["errors"]["same_float_int"]["message"]


def test_verify_tensor_all_finite():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant([1.0, 2.0])
        assert gf.verify_tensor_all_finite(x, "bad values").name == \
            RECORDED["names"]["verify_finite"]
        nan = gf.placeholder(gf.float32, [1])
        checked = gf.debugging.assert_all_finite(nan, "bad values")
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError, match="bad values"):
                session.run(checked, {nan: [np.nan]})
            assert session.run(checked, {nan: [1.0]}) == [1.0]


def test_deprecated_aliases_and_collections():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(1.0, name="v")
        gf.Variable(2.0, name="lv", collections=[gf.GraphKeys.LOCAL_VARIABLES])
        assert gf.initialize_variables([v]).name == RECORDED["names"]["initialize_variables"]
        assert gf.initialize_local_variables().name == \
            RECORDED["names"]["initialize_local_variables"]
        assert [u.name for u in gf.all_variables()] == RECORDED["misc"]["all_variables"]
        gf.add_to_collections(["a", "b", "a"], 3)
        assert [graph.get_collection("a"), graph.get_collection("b")] == \
            RECORDED["misc"]["collections"]


def test_tensor_util_helpers():
    assert gf.make_ndarray(gf.make_tensor_proto([1.0, 2.0], shape=[2, 2])).tolist() == \
        RECORDED["values"]["proto_padded"]
    assert gf.make_ndarray(gf.make_tensor_proto(5, shape=[2, 3])).tolist() == \
        RECORDED["values"]["proto_scalar"]
    assert str(gf.make_ndarray(gf.make_tensor_proto(5, dtype=gf.float64, shape=[2])).dtype) \
        == RECORDED["values"]["proto_dtype"]
    for label, call in (("proto_verify", lambda: gf.make_tensor_proto(
            [1.0, 2.0], shape=[3], verify_shape=True)),
            ("proto_too_many", lambda: gf.make_tensor_proto([1.0, 2.0, 3.0], shape=[2]))):
        with pytest.raises(Exception) as raised:
            call()
        assert type(raised.value).__name__ == RECORDED["errors"][label]["error"]
        assert str(raised.value) == RECORDED["errors"][label]["message"]
    with gf.Graph().as_default():
        np.testing.assert_array_equal(gf.get_static_value(gf.constant([1.5, 2.0])), [1.5, 2.0])
        assert gf.get_static_value(gf.placeholder(gf.float32)) is None
        with pytest.raises(ValueError, match="partial"):
            gf.get_static_value(gf.constant(1.0), partial=True)


def test_error_codes_match_tf1():
    misc = RECORDED["misc"]
    for name, code in misc["codes"].items():
        assert getattr(tf1.errors, name) == code
    for code, type_name in misc["code_types"].items():
        cls = tf1.errors.exception_type_from_error_code(int(code))
        assert cls.__name__ == type_name
        assert tf1.errors.error_code_from_exception_type(cls) == misc["type_codes"][type_name]
    with pytest.raises(KeyError):
        tf1.errors.exception_type_from_error_code(99)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tf1.errors.error_code_from_exception_type(ValueError) == tf1.errors.UNKNOWN
    assert [str(w.message) for w in caught] == misc["unknown_class_warning"]


def test_namespaces_and_constants():
    missing = [n for n in RECORDED["misc"]["dtypes_names"]
               if n not in ("experimental", "as_string") and not hasattr(tf1.dtypes, n)]
    assert missing == []
    assert tf1.VERSION == gf.__version__
    assert isinstance(tf1.GRAPH_DEF_VERSION, int) and isinstance(tf1.COMPILER_VERSION, str)
    assert tf1.get_logger() is gf.logging.get_logger()
    for name in ("log_softmax", "top_k", "in_top_k", "l2_normalize", "softmax"):
        assert getattr(tf1.math, name) is getattr(tf1.nn, name)
    for name in ("is_finite", "is_inf", "is_nan"):
        assert getattr(tf1.debugging, name) is getattr(tf1.math, name)
    assert tf1.nn.zero_fraction is tf1.math.zero_fraction


def test_small_conversions_and_scopes_match_tf1():
    misc = RECORDED["misc"]
    assert [str(gf.dimension_at_index(gf.TensorShape([2, 3]), 1)),
            str(gf.dimension_at_index(gf.TensorShape(None), 0))] == misc["dimension_at_index"]
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant(1.0)
        with gf.control_dependencies([x.op]):
            with gf.init_scope():
                y = gf.constant(2.0, name="lifted")
            z = gf.constant(3.0, name="kept")
        assert [[op.name for op in y.op.control_inputs],
                [op.name for op in z.op.control_inputs]] == misc["init_scope_controls"]
        sp = gf.convert_to_tensor_or_sparse_tensor(gf.SparseTensorValue([[0]], [1.0], [2]))
        dense = gf.convert_to_tensor_or_indexed_slices([1, 2])
        assert [type(sp).__name__, dense.name] == misc["convert_kinds"]
        with pytest.raises(RuntimeError) as raised:
            gf.convert_to_tensor_or_sparse_tensor(sp, dtype=gf.int32)
        assert str(raised.value) == RECORDED["errors"]["convert_sparse_dtype"]["message"]
    assert (tf1.NoGradient is tf1.NotDifferentiable) is misc["no_gradient_is_not_differentiable"]
    assert (tf1.OpError is tf1.errors.OpError) is misc["op_error"]


_SHAPE_CASES = {"good": lambda x, y, q, s: [(x, ("N", "Q")), (y, ("N", "D")), (q, ("Q",)),
                                            (s, ())],
                "symbol": lambda x, y, q, s: [(x, ("N", "Q")), (q, ("N",))],
                "rank_in": lambda x, y, q, s: [(x, ("N",))],
                "dot": lambda x, y, q, s: [(x, (3, "."))],
                "star": lambda x, y, q, s: [(x, ("*", "Q")), (q, ("Q",))],
                "explicit": lambda x, y, q, s: [(x, (2, 2))],
                "empty_matrix": lambda x, y, q, s: [(x, ())],
                "empty_vector": lambda x, y, q, s: [(q, ())],
                "scalar": lambda x, y, q, s: [(s, ("N",))],
                "star_short": lambda x, y, q, s: [(x, ("*", "Q", "R"))],
                "rank": lambda x, y, q, s: [(x, ("N", "Q", "R"))]}


@pytest.mark.parametrize("label", sorted(_SHAPE_CASES))
def test_assert_shapes_static_checks_match_tf1(label):
    graph = gf.Graph()
    with graph.as_default():
        tensors = (gf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                   gf.constant([[1.0], [2.0], [3.0]]), gf.constant([1.0, 2.0]),
                   gf.constant(1.0))
        before = [op.name for op in graph.get_operations()]
        expected = RECORDED["errors"]["shapes_" + label]
        if expected["error"] is None:
            assert gf.debugging.assert_shapes(_SHAPE_CASES[label](*tensors)).type == "NoOp"
            return
        with pytest.raises(ValueError) as raised:
            gf.debugging.assert_shapes(_SHAPE_CASES[label](*tensors))
        assert str(raised.value) == expected["message"]
        assert [op.name for op in graph.get_operations()] == before


def test_assert_shapes_run_time_check_matches_tf1():
    with gf.Graph().as_default():
        gf.constant(0.0)
        y = gf.constant([[1.0], [2.0], [3.0]])
        p = gf.placeholder(gf.float32, [None, 2])
        check = gf.debugging.assert_shapes([(p, ("N", "Q")), (y, ("N", "D"))])
        assert check.type == RECORDED["names"]["shapes_dynamic_type"]
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError) as raised:
                session.run(check, {p: [[1.0, 2.0]]})
            session.run(check, {p: [[1.0, 2.0]] * 3})
    assert str(raised.value).split("\n")[0] == RECORDED["errors"]["shapes_dynamic"]["message"]
