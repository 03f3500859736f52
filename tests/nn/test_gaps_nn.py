"""The tf.nn names added from the API gap list (lrn, max_pool_with_argmax, crelu,
relu_layer, the moments pieces, log_poisson_loss, space/batch/depth blocks, atrous and
other convolution entry points) against TF 2.21 fixtures (tests/fixtures/tf/make_gaps.py),
with numeric gradient checks in float64."""
import re

import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_arrays, load_json

RECORDED = load_json("gaps")
ARRAYS = load_arrays("gaps")
INPUTS = {key[3:]: value for key, value in ARRAYS.items() if key.startswith("in_")}
# float32 kernels computed in another order than TF's: a few ulp apart
TOLERANCE = {"rtol": 2e-5, "atol": 2e-5}


def _build(c):
    out = {}
    out["lrn"] = gf.nn.lrn(c["img"])
    out["lrn2"] = gf.nn.local_response_normalization(c["img"], depth_radius=2, bias=2.0,
                                                     alpha=0.1, beta=0.75, name="norm1")
    out["lrn_grad"] = gf.gradients(gf.reduce_sum(out["lrn2"] * c["img"]), c["img"])[0]
    out["mpa"], out["mpa_argmax"] = gf.nn.max_pool_with_argmax(
        c["pool"], [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    pooled, argmax = gf.nn.max_pool_with_argmax(c["pool"], [1, 3, 3, 1], [1, 2, 2, 1], "SAME",
                                                include_batch_in_index=True)
    out["mpa_same"], out["mpa_same_argmax"] = pooled, argmax
    out["mpa_grad"] = gf.gradients(gf.reduce_sum(pooled * pooled), c["pool"])[0]
    out["crelu"] = gf.nn.crelu(c["img"])
    out["relu_layer"] = gf.nn.relu_layer(c["dense"], c["dense_w"], c["dense_b"])
    out["lpl"] = gf.nn.log_poisson_loss(c["targets"], c["log_input"])
    out["lpl_full"] = gf.nn.log_poisson_loss(c["targets"], c["log_input"],
                                             compute_full_loss=True)
    counts, m_ss, v_ss, _ = gf.nn.sufficient_statistics(c["img"], [0, 1, 2])
    out["ss_count"], out["ss_mean"], out["ss_var"] = counts, m_ss, v_ss
    shifted = gf.nn.sufficient_statistics(c["img"], [1, 2], shift=0.5, keep_dims=True)
    out["ss_shift_mean"], out["ss_shift_var"] = shifted[1], shifted[2]
    out["nm_mean"], out["nm_var"] = gf.nn.normalize_moments(counts, m_ss, v_ss, None)
    out["wm_mean"], out["wm_var"] = gf.nn.weighted_moments(c["img"], [0, 1, 2], c["freq"])
    out["s2d"] = gf.nn.space_to_depth(c["img"][:, :, :, :4], 2)
    out["d2s"] = gf.nn.depth_to_space(out["s2d"], 2)
    out["s2bnd"] = gf.space_to_batch_nd(c["img"], [2, 3], [[1, 1], [0, 3]])
    out["b2snd"] = gf.batch_to_space_nd(out["s2bnd"], [2, 3], [[1, 1], [0, 3]])
    out["s2b"] = gf.space_to_batch(c["img"], [[1, 1], [2, 0]], 2)
    out["b2s"] = gf.batch_to_space(out["s2b"], [[1, 1], [2, 0]], 2)
    out["atrous_same"] = gf.nn.atrous_conv2d(c["img"], c["w"], 2, "SAME")
    out["atrous_valid"] = gf.nn.atrous_conv2d(c["img"], c["w"], 2, "VALID")
    out["atrous_t"] = gf.nn.atrous_conv2d_transpose(out["atrous_same"], c["w"], [2, 6, 6, 7],
                                                    2, "SAME")
    out["atrous_t_valid"] = gf.nn.atrous_conv2d_transpose(out["atrous_valid"], c["w"],
                                                          [2, 6, 6, 7], 2, "VALID")
    out["convolution"] = gf.nn.convolution(c["img"], c["w"], "VALID", strides=[2, 1])
    out["convolution_1d"] = gf.nn.convolution(c["seq"], c["w1"], "SAME", dilation_rate=[2])
    out["convolution_3d"] = gf.nn.convolution(c["vol"], c["w3"], "SAME")
    out["conv1d_t"] = gf.nn.conv1d_transpose(c["seq"][:, :, :3], c["w1t"], [2, 18, 5], 2)
    out["dwn"] = gf.nn.depthwise_conv2d_native(c["img"], c["dw"], [1, 1, 1, 1], "SAME")
    dy = gf.constant(np.ones((2, 6, 6, 14), np.float32))
    out["dwbi"] = gf.nn.depthwise_conv2d_native_backprop_input([2, 6, 6, 7], c["dw"], dy,
                                                               [1, 1, 1, 1], "SAME")
    out["dwbf"] = gf.nn.depthwise_conv2d_backprop_filter(c["img"], [3, 3, 7, 2], dy,
                                                         [1, 1, 1, 1], "SAME")
    out["atrous_grad"] = gf.gradients(gf.reduce_sum(out["atrous_same"] ** 2), c["w"])[0]
    return out


@pytest.fixture(scope="module")
def built():
    graph = gf.Graph()
    with graph.as_default():
        c = {key: gf.constant(value, name=key) for key, value in INPUTS.items()}
        out = _build(c)
        with gf.Session() as session:
            return graph, c, out, session.run(out)


# The gradient ops are named after gradflow's own gradient scopes.
_GRADIENT_NAMES = {"lrn_grad", "mpa_grad", "atrous_grad"}


def test_names_and_shapes_match_tf1(built):
    _, _, out, _ = built
    for key, tensor in out.items():
        if key not in _GRADIENT_NAMES:
            assert tensor.name == RECORDED["names"]["nn_" + key], key
        assert tensor.shape.as_list() == RECORDED["shapes"]["nn_" + key], key


def test_values_match_tf1(built):
    _, _, _, got = built
    for key, value in got.items():
        expected = ARRAYS["nn_" + key]
        assert value.dtype == expected.dtype, key
        np.testing.assert_allclose(value, expected, err_msg=key, **TOLERANCE)


def _errors(c):
    return {
        "lrn_rank": lambda: gf.nn.lrn(c["seq"]),
        "s2d_divisible": lambda: gf.nn.space_to_depth(c["pool"], 2),
        "d2s_divisible": lambda: gf.nn.depth_to_space(c["img"], 2),
        "s2b_divisible": lambda: gf.space_to_batch_nd(c["img"], [4, 4], [[0, 0], [0, 0]]),
        "lpl_shapes": lambda: gf.nn.log_poisson_loss(c["targets"], c["dense"]),
        "mpa_format": lambda: gf.nn.max_pool_with_argmax(
            c["pool"], [1, 2, 2, 1], [1, 2, 2, 1], "VALID", data_format="NCHW"),
        "atrous_t_channels": lambda: gf.nn.atrous_conv2d_transpose(
            c["img"], c["w"], [2, 6, 6, 7], 2, "SAME"),
    }


@pytest.mark.parametrize("label", sorted(_errors({k: None for k in INPUTS})))
def test_errors_match_tf1_and_leave_graph_unchanged(label):
    graph = gf.Graph()
    with graph.as_default():
        c = {key: gf.constant(value, name=key) for key, value in INPUTS.items()}
        before = [op.name for op in graph.get_operations()]
        expected = RECORDED["errors"][label]
        with pytest.raises(Exception) as raised:
            _errors(c)[label]()
        assert type(raised.value).__name__ == expected["error"]
        # TF's shape-function messages end with the node text; compare what precedes it
        head = re.split(r" for '\{\{node", expected["message"])[0]
        assert str(raised.value).startswith(head.split(" for '")[0])
        assert [op.name for op in graph.get_operations()] == before


def test_max_pool_argmax_indices_point_at_maxima(built):
    _, _, _, got = built
    pool = INPUTS["pool"]
    flat = pool.reshape(2, -1)
    picked = np.take_along_axis(flat, got["mpa_argmax"].reshape(2, -1), 1)
    np.testing.assert_array_equal(picked.reshape(got["mpa"].shape), got["mpa"])
    np.testing.assert_array_equal(pool.reshape(-1)[got["mpa_same_argmax"]], got["mpa_same"])


RNG = np.random.default_rng(1)


@pytest.mark.parametrize("case", ["lrn", "argmax_pool", "crelu", "relu_layer", "s2d", "d2s",
                                  "s2b", "b2s", "atrous", "atrous_t", "conv1d_t",
                                  "convolution", "lpl", "weighted_moments"])
def test_gradients_float64(case):
    img = RNG.standard_normal((1, 4, 4, 4))
    w = RNG.standard_normal((2, 2, 4, 3))
    builds = {
        "lrn": (lambda x: gf.nn.lrn(x, depth_radius=1, bias=1.5, alpha=0.3, beta=0.6), [img]),
        "argmax_pool": (lambda x: gf.nn.max_pool_with_argmax(
            x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")[0], [img]),
        "crelu": (gf.nn.crelu, [img + 0.05]),
        "relu_layer": (gf.nn.relu_layer, [RNG.standard_normal((3, 4)),
                                          RNG.standard_normal((4, 2)),
                                          RNG.standard_normal(2)]),
        "s2d": (lambda x: gf.nn.space_to_depth(x, 2), [img]),
        "d2s": (lambda x: gf.nn.depth_to_space(x, 2), [img]),
        "s2b": (lambda x: gf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]), [img]),
        "b2s": (lambda x: gf.batch_to_space_nd(x, [2, 1], [[1, 0], [0, 1]]),
                [RNG.standard_normal((2, 3, 3, 2))]),
        "atrous": (lambda x, f: gf.nn.atrous_conv2d(x, f, 2, "SAME"), [img, w]),
        "atrous_t": (lambda x, f: gf.nn.atrous_conv2d_transpose(x, f, [1, 4, 4, 4], 2,
                                                                "SAME"),
                     [RNG.standard_normal((1, 4, 4, 3)), w]),
        "conv1d_t": (lambda x, f: gf.nn.conv1d_transpose(x, f, [1, 8, 2], 2),
                     [RNG.standard_normal((1, 4, 3)), RNG.standard_normal((3, 2, 3))]),
        "convolution": (lambda x, f: gf.nn.convolution(x, f, "VALID"), [img, w]),
        "lpl": (lambda t, x: gf.nn.log_poisson_loss(t, x, compute_full_loss=True),
                [np.array([0.5, 2.0, 3.0]), RNG.standard_normal(3)]),
        "weighted_moments": (lambda x, f: gf.add_n(list(gf.nn.weighted_moments(x, [0, 1], f))),
                             [RNG.standard_normal((3, 4)), RNG.uniform(0.5, 1.5, (3, 1))]),
    }
    build, inputs = builds[case]
    assert gradient_error(build, inputs) < 1e-6


def test_second_order_gradients():
    x = RNG.standard_normal((1, 3, 3, 2))
    assert second_order_error(lambda t: gf.nn.space_to_depth(t * t, 3), [x]) < 1e-5
    assert second_order_error(lambda t: gf.nn.max_pool_with_argmax(
        t * t, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")[0], [x]) < 1e-5
    with gf.Graph().as_default():
        t = gf.constant(x)
        (first,) = gf.gradients(gf.reduce_sum(gf.nn.lrn(t)), [t])
        with pytest.raises(LookupError, match="No gradient defined for operation"):
            gf.gradients(gf.reduce_sum(first), [t])


def test_safe_embedding_lookup_sparse_matches_tf1():
    with gf.Graph().as_default():
        w = gf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
        indices = [[0, 0, 0], [0, 0, 1], [1, 1, 0], [1, 1, 1]]
        ids = gf.SparseTensor(indices, gf.constant([1, -1, 2, 3], gf.int64), [2, 2, 2])
        weights = gf.SparseTensor(indices, [2.0, 1.0, 0.0, 1.0], [2, 2, 2])
        out = {"safe_mean": gf.nn.safe_embedding_lookup_sparse(w, ids, weights),
               "safe_sum": gf.nn.safe_embedding_lookup_sparse(w, ids, None, combiner="sum",
                                                              default_id=3),
               "safe_sqrtn": gf.nn.safe_embedding_lookup_sparse([w[:2], w[2:]], ids, weights,
                                                                combiner="sqrtn")}
        out["safe_grad"] = gf.convert_to_tensor(
            gf.gradients(gf.reduce_sum(out["safe_mean"] ** 2), w)[0])
        for key, tensor in out.items():
            if key != "safe_grad":
                assert tensor.name == RECORDED["names"]["emb_" + key], key
            assert tensor.shape.as_list() == RECORDED["shapes"]["emb_" + key], key
        with gf.Session() as session:
            got = session.run(out)
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS["emb_" + key], rtol=1e-6, err_msg=key)


# gradflow's batch_normalization names its result op after the scope (``batchnorm``),
# where TF's composition ends in ``batchnorm/add_1``
_DISPATCH_NAMES_DIFFER = {"bngn", "bngn_noscale"}


def test_rank_dispatch_and_older_names_match_tf1():
    with gf.Graph().as_default():
        x = gf.constant(INPUTS["dispatch_img"])
        out = {"bngn": gf.nn.batch_norm_with_global_normalization(
                   x, gf.constant([0.5, 1.0]), gf.constant([1.0, 2.0]),
                   gf.constant([0.1, 0.2]), gf.constant([2.0, 3.0]), 0.001, True),
               "bngn_noscale": gf.nn.batch_norm_with_global_normalization(
                   x, gf.constant([0.5, 1.0]), gf.constant([1.0, 2.0]),
                   gf.constant([0.1, 0.2]), gf.constant([2.0, 3.0]), 0.001, False),
               "mp2": gf.nn.max_pool_v2(x, 2, 2, "VALID"),
               "ap1": gf.nn.avg_pool_v2(x[0], 2, 1, "SAME"),
               "convt": gf.nn.conv_transpose(x, gf.constant(INPUTS["dispatch_kernel"]),
                                             [1, 8, 8, 3], 2),
               "cal": gf.nn.compute_average_loss(gf.constant([1.0, 2.0, 3.0]),
                                                 sample_weight=[1.0, 0.5, 2.0]),
               "cal_global": gf.nn.compute_average_loss(gf.constant([1.0, 2.0, 3.0]),
                                                        global_batch_size=6),
               "srl": gf.nn.scale_regularization_loss(gf.constant([4.0, 1.0])),
               "smm": gf.sparse_matmul(gf.constant([[1.0, 0.0, 2.0]]),
                                       gf.constant([[1.0, 2.0, 3.0]]), transpose_b=True,
                                       a_is_sparse=True)}
        masked = gf.sparse_mask(gf.IndexedSlices(gf.constant([[1.0], [2.0], [3.0]]),
                                                 gf.constant([0, 3, 5])), gf.constant([3]))
        out["smask_values"], out["smask_indices"] = masked.values, masked.indices
        for key, tensor in out.items():
            if key not in _DISPATCH_NAMES_DIFFER:
                assert tensor.name == RECORDED["names"]["dp_" + key], key
            assert tensor.shape.as_list() == RECORDED["shapes"]["dp_" + key], key
        with gf.Session() as session:
            got = session.run(out)
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS["dp_" + key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


def test_sparse_matmul_gradient_float32():
    with gf.Graph().as_default():
        a = gf.constant([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
        b = gf.constant([[1.0, 2.0], [3.0, -1.0], [0.0, 1.0]])
        ga, gb = gf.gradients(gf.reduce_sum(gf.sparse_matmul(a, b, b_is_sparse=True)), [a, b])
        dense_a, dense_b = gf.gradients(gf.reduce_sum(gf.matmul(a, b)), [a, b])
        with gf.Session() as session:
            got, expected = session.run([[ga, gb], [dense_a, dense_b]])
    for value, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, want)


def test_with_space_to_batch_equals_dilated_convolution():
    img, w = INPUTS["img"], INPUTS["w"]
    with gf.Graph().as_default():
        x = gf.constant(img)
        moved = gf.nn.with_space_to_batch(
            x, [2, 2], "SAME", lambda inp, rank, pad: gf.nn.conv2d(inp, w, [1, 1, 1, 1], pad),
            filter_shape=[3, 3])
        direct = gf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
        with gf.Session() as session:
            got, expected = session.run([moved, direct])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, ARRAYS["nn_atrous_same"], rtol=2e-5, atol=2e-5)
