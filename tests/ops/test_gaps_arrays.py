"""Array and math names added from the API gap list (dynamic_partition/stitch,
unravel_index, setdiff1d, bincount, confusion_matrix, repeat, tensor scatters,
batch_gather, parallel_stack, special functions, random_gamma/poisson, variable
scatters) against TF 2.21 fixtures (tests/fixtures/tf/make_gaps.py)."""
import numpy as np
import pytest
from scipy import special

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_arrays, load_json

RECORDED = load_json("gaps")
ARRAYS = load_arrays("gaps")
# gradient ops are named after gradflow's gradient scopes; these are composites whose
# inner op layout differs from TF's (their scope is the same)
_LAYOUT_DIFFERS = {"dp_grad", "igamma_da", "igamma_dx", "zeta_dq", "betainc_dx", "bg",
                   "rep", "rep_flat", "rep_axis1"}


def _build():
    x = gf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = {}
    parts = gf.dynamic_partition(x, gf.constant([0, 1, 0]), 3)
    out.update({f"dp{i}": p for i, p in enumerate(parts)})
    out["ds"] = gf.dynamic_stitch([gf.constant([0, 2]), gf.constant([[1, 3]])],
                                  [gf.constant([[1.0, 2.0], [5.0, 6.0]]),
                                   gf.constant([[[3.0, 4.0], [7.0, 8.0]]])])
    out["dp_grad"] = gf.gradients(gf.reduce_sum(parts[0] * 3.0) +
                                  gf.reduce_sum(parts[1] * 2.0), x)[0]
    out["ui"] = gf.unravel_index(gf.constant([5, 7, 0]), gf.constant([3, 4]))
    out["ui_scalar"] = gf.unravel_index(gf.constant(7, gf.int64),
                                        gf.constant([3, 4], gf.int64))
    diff = gf.setdiff1d(gf.constant([1, 2, 3, 4, 3, 6]), gf.constant([2, 4]))
    out["sd_out"], out["sd_idx"] = diff.out, diff.idx
    out["bc"] = gf.bincount(gf.constant([1, 1, 3, 7]))
    out["bc_w"] = gf.math.bincount(gf.constant([1, 1, 3]), minlength=6,
                                   weights=gf.constant([1.0, 2.0, 3.0]))
    out["bc_max"] = gf.bincount(gf.constant([1, 1, 3, 7]), maxlength=3)
    out["cm"] = gf.confusion_matrix(gf.constant([0, 1, 2, 2]), gf.constant([0, 2, 2, 1]))
    out["cm_w"] = gf.confusion_matrix([0, 1], [1, 1], num_classes=3, weights=[0.5, 2.0],
                                      dtype=gf.float32)
    out["rep"] = gf.repeat(gf.constant([[1, 2], [3, 4]]), [1, 2], axis=0)
    out["rep_flat"] = gf.repeat(gf.constant([[1, 2], [3, 4]]), 2)
    out["rep_axis1"] = gf.repeat(gf.constant([[1, 2], [3, 4]]), [3, 0], axis=1)
    out["tsu"] = gf.tensor_scatter_nd_update(x, [[0], [2]], [[9.0, 9.0], [8.0, 8.0]])
    out["tsa"] = gf.tensor_scatter_add(x, [[0, 1], [0, 1]], [7.0, 1.0])
    out["tss"] = gf.tensor_scatter_sub(x, [[2, 0]], [7.0])
    out["tsmax"] = gf.tensor_scatter_nd_max(x, [[0, 1], [1, 1]], [7.0, -1.0])
    out["tsmin"] = gf.tensor_scatter_nd_min(x, [[0, 1], [1, 1]], [7.0, -1.0])
    out["bg"] = gf.batch_gather(x, gf.constant([[1], [0], [1]]))
    out["ps"] = gf.parallel_stack([gf.constant([1.0, 2.0]), gf.constant([3.0, 4.0])])
    a = gf.constant([2.0, 3.0, 0.5])
    q = gf.constant([1.0, 2.0, 4.0])
    out["zeta"] = gf.zeta(a, q)
    out["igamma"] = gf.igamma(a, q)
    out["igammac"] = gf.math.igammac(a, q)
    out["betainc"] = gf.betainc(a, q, gf.constant([0.3, 0.6, 0.9]))
    a64 = gf.constant([2.0, 3.0, 0.5], gf.float64)
    q64 = gf.constant([1.0, 2.0, 4.0], gf.float64)
    out["igamma_da"], out["igamma_dx"] = gf.gradients(gf.igamma(a64, q64), [a64, q64])
    out["zeta_dq"] = gf.gradients(gf.zeta(a64, q64), q64)[0]
    out["betainc_dx"] = gf.gradients(gf.betainc(a64, q64, a64 / 4.0), a64)[0]
    out["bds"] = gf.broadcast_dynamic_shape(gf.constant([3, 1]), gf.constant([4]))
    return x, out


@pytest.fixture(scope="module")
def built():
    graph = gf.Graph()
    with graph.as_default():
        x, out = _build()
        with gf.Session() as session:
            return x, out, session.run(out)


def test_names_shapes_and_values_match_tf1(built):
    _, out, got = built
    for key, tensor in out.items():
        if key not in _LAYOUT_DIFFERS:
            assert tensor.name == RECORDED["names"]["ar_" + key], key
        assert tensor.shape.as_list() == RECORDED["shapes"]["ar_" + key], key
        expected = ARRAYS["ar_" + key]
        assert got[key].dtype == expected.dtype, key
        np.testing.assert_allclose(got[key], expected, rtol=1e-5, atol=1e-6, err_msg=key)
    assert gf.broadcast_static_shape(gf.TensorShape([None, 1]), gf.TensorShape([5])
                                     ).as_list() == RECORDED["misc"]["bss"]


@pytest.mark.parametrize("label,build", [
    ("dp_range", lambda x: gf.dynamic_partition(x, gf.constant([0, 5, 0]), 2)),
    ("tsu_range", lambda x: gf.tensor_scatter_nd_update(x, [[5]], [[1.0, 1.0]])),
    ("bc_negative", lambda x: gf.bincount(gf.constant([-1, 2]))),
    ("ui_range", lambda x: gf.unravel_index(gf.constant([12]), gf.constant([3, 4]))),
])
def test_run_errors_match_tf1(label, build):
    expected = RECORDED["errors"][label]
    with gf.Graph().as_default():
        fetch = build(gf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError) as raised:
                session.run(fetch)
    assert type(raised.value).__name__ == expected["error"]
    assert str(raised.value).split("\n")[0] == expected["message"]


def test_build_errors_match_tf1_and_leave_graph_unchanged():
    graph = gf.Graph()
    with graph.as_default():
        x = gf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        before = [op.name for op in graph.get_operations()]
        with pytest.raises(ValueError):
            gf.tensor_scatter_nd_update(x, [[0]], [[1.0]])
        assert RECORDED["errors"]["tsu_shapes"]["error"] == "ValueError"
        assert [op.name for op in graph.get_operations()] == before
    with pytest.raises(ValueError) as raised:
        gf.broadcast_static_shape(gf.TensorShape([2]), gf.TensorShape([3]))
    assert str(raised.value) == RECORDED["errors"]["bss"]["message"].replace("(2,)", "(2,)")


RNG = np.random.default_rng(5)


@pytest.mark.parametrize("case", ["dynamic_partition", "dynamic_stitch", "tensor_update",
                                  "tensor_add", "tensor_sub", "tensor_max", "tensor_min",
                                  "batch_gather", "parallel_stack", "repeat", "igamma",
                                  "igammac", "zeta", "betainc"])
def test_gradients_float64(case):
    x = RNG.standard_normal((4, 3))
    u = RNG.standard_normal((2, 3))
    idx = [[3], [1]]
    builds = {
        "dynamic_partition": (lambda t: gf.add_n([gf.reduce_sum(p * (i + 1.0)) for i, p in
                                                  enumerate(gf.dynamic_partition(
                                                      t, gf.constant([1, 0, 1, 1]), 2))]),
                              [x]),
        "dynamic_stitch": (lambda a, b: gf.dynamic_stitch(
            [gf.constant([0, 2]), gf.constant([1, 3])], [a, b]), [u, u + 1]),
        "tensor_update": (lambda t, v: gf.tensor_scatter_nd_update(t, idx, v), [x, u]),
        "tensor_add": (lambda t, v: gf.tensor_scatter_nd_add(t, idx, v), [x, u]),
        "tensor_sub": (lambda t, v: gf.tensor_scatter_nd_sub(t, idx, v), [x, u]),
        "tensor_max": (lambda t, v: gf.tensor_scatter_nd_max(t, idx, v), [x, u]),
        "tensor_min": (lambda t, v: gf.tensor_scatter_nd_min(t, idx, v), [x, u]),
        "batch_gather": (lambda t: gf.batch_gather(t, gf.constant([[2, 0], [1, 1], [0, 2],
                                                                   [1, 0]])), [x]),
        "parallel_stack": (lambda a, b: gf.parallel_stack([a, b]), [u, u * 2]),
        "repeat": (lambda t: gf.repeat(t, [2, 0, 1, 3], axis=0), [x]),
        "igamma": (gf.igamma, [np.array([0.7, 2.0, 3.5]), np.array([0.5, 1.5, 4.0])]),
        "igammac": (gf.igammac, [np.array([0.7, 2.0, 3.5]), np.array([0.5, 1.5, 4.0])]),
        "zeta": (lambda q: gf.zeta(gf.constant([2.0, 3.5], gf.float64), q),
                 [np.array([1.0, 2.5])]),
        "betainc": (lambda t: gf.betainc(gf.constant([2.0, 0.5], gf.float64),
                                         gf.constant([1.5, 3.0], gf.float64), t),
                    [np.array([0.3, 0.7])]),
    }
    build, inputs = builds[case]
    assert gradient_error(build, inputs) < 1e-6


def test_second_order_gradients():
    x = RNG.standard_normal((4, 3))
    assert second_order_error(lambda t: gf.dynamic_stitch(
        [gf.constant([1, 0])], [t * t]), [x[:2]]) < 1e-5
    assert second_order_error(lambda t: gf.tensor_scatter_nd_add(t * t, [[0]], [[1.0, 2, 3]]),
                              [x]) < 1e-5


def test_random_gamma_and_poisson_statistics_and_seeds():
    graph = gf.Graph()
    with graph.as_default():
        gamma = gf.random_gamma([4000], gf.constant([1.0, 2.5]), beta=2.0, seed=3)
        poisson = gf.random.poisson(gf.constant([1.5, 4.0]), [4000], seed=3)
        assert gamma.name == RECORDED["names"]["random_gamma"]
        assert poisson.name == RECORDED["names"]["random_poisson"]
        assert gamma.shape.as_list() == RECORDED["shapes"]["random_gamma"]
        with gf.Session() as session:
            gv, pv = session.run([gamma, poisson])
        with gf.Session() as session:
            again = session.run(gamma)
    np.testing.assert_array_equal(gv, again)
    for sample, (mean, var) in ((gv, RECORDED["misc"]["gamma_stats"]),
                                (pv, RECORDED["misc"]["poisson_stats"])):
        np.testing.assert_allclose(sample.mean(0), mean, rtol=0.08)
        np.testing.assert_allclose(sample.var(0), var, rtol=0.2)
    assert gv.min() > 0 and pv.min() >= 0


def test_random_gamma_gradient_is_implicit_reparameterization():
    graph = gf.Graph()
    with graph.as_default():
        alpha = gf.constant([0.8, 2.0, 5.0], gf.float64)
        sample = gf.random_gamma([3], alpha, dtype=gf.float64, seed=7)
        (grad,) = gf.gradients(gf.reduce_sum(sample), [alpha])
        with gf.Session() as session:
            values, got = session.run([sample, grad])
    a = np.array([0.8, 2.0, 5.0])
    level = special.gammainc(a, values)
    h = 1e-6
    moved = (special.gammaincinv(a + h, level) - special.gammaincinv(a - h, level)) / (2 * h)
    np.testing.assert_allclose(got, moved.sum(0), rtol=1e-5)


def test_variable_scatters():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        ops = {"max": gf.scatter_max(v, [0, 2], [[0.0, 9.0], [7.0, 1.0]]),
               "min": gf.scatter_min(v, [1, 1], [[0.0, 9.0], [2.0, -1.0]]),
               "nd_add": gf.scatter_nd_add(v, [[0, 0], [0, 0]], [10.0, 1.0]),
               "nd_sub": gf.scatter_nd_sub(v, [[2]], [[1.0, 1.0]])}
        with gf.Session() as session:
            results = {}
            for key, op in ops.items():
                session.run(v.initializer)
                results[key] = session.run(op)
    np.testing.assert_array_equal(results["max"], [[1, 9], [3, 4], [7, 6]])
    np.testing.assert_array_equal(results["min"], [[1, 2], [0, -1], [5, 6]])
    np.testing.assert_array_equal(results["nd_add"], [[12, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(results["nd_sub"], [[1, 2], [3, 4], [4, 5]])


def test_stateless_random_ops_names_statistics_and_determinism():
    graph = gf.Graph()
    with graph.as_default():
        out = {"uniform": gf.random.stateless_uniform([4000, 2], [1, 2], minval=-1.0,
                                                      maxval=3.0),
               "normal": gf.random.stateless_normal([4000], [1, 2], mean=1.0, stddev=2.0),
               "uniform_int": gf.random.stateless_uniform([4000], [1, 2], minval=0,
                                                          maxval=10, dtype=gf.int32),
               "categorical": gf.random.stateless_categorical(gf.log([[0.2, 0.8]]), 4000,
                                                              [3, 4]),
               "truncated": gf.random.stateless_truncated_normal([4000], [5, 6])}
        for key, tensor in out.items():
            assert tensor.name == RECORDED["names"]["sl_" + key], key
            assert tensor.shape.as_list() == RECORDED["shapes"]["sl_" + key], key
        other_seed = gf.random.stateless_normal([4000], [1, 3], mean=1.0, stddev=2.0)
        with gf.Session() as session:
            got = session.run(out)
            again = session.run(out)
            moved = session.run(other_seed)
        with gf.Session() as session:
            fresh = session.run(out)
    for key, value in got.items():
        dtype, mean, std, low, high = RECORDED["misc"]["sl_" + key]
        assert value.dtype.name == dtype, key
        np.testing.assert_array_equal(value, again[key])
        np.testing.assert_array_equal(value, fresh[key])
        np.testing.assert_allclose(value.mean(), mean, atol=0.1 * max(std, 1.0), err_msg=key)
        np.testing.assert_allclose(value.std(), std, rtol=0.1, err_msg=key)
        if key != "normal":  # bounded distributions stay in TF's range
            assert value.min() >= np.floor(low) - 1e-6 and value.max() <= np.ceil(high) + 1e-6
    assert not np.array_equal(moved, got["normal"])
