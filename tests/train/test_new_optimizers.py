"""Adadelta, AdagradDA, Ftrl, ProximalGradientDescent, ProximalAdagrad (and spot checks of
the older optimizers) against TF1 runs recorded with fixed initial values and gradients."""
import inspect

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_arrays, load_json

FIX = load_json("train_optimizers")
ARR = load_arrays("train_optimizers")
NEW = ["AdadeltaOptimizer", "AdagradDAOptimizer", "FtrlOptimizer",
       "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer"]


def _snapshot(graph):
    return [op.name for op in graph.get_operations()], \
        {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


def _build(key, mode):
    """The recorded program: var ``w``, a global step, one optimizer, a fed gradient."""
    config = FIX["configs"][key]
    var = gf.Variable(ARR["init"], name="w")
    step = gf.train.get_or_create_global_step()
    kwargs = dict(config["kwargs"])
    if config["class"] == "AdagradDAOptimizer":
        kwargs["global_step"] = step
    opt = getattr(gf.train, config["class"])(**kwargs)
    values = gf.placeholder(gf.float32, [3, 2], name="grad")
    if mode == "sparse":
        grad = gf.IndexedSlices(values, gf.constant(ARR["sparse_indices"]), gf.constant([3, 2]))
    else:
        grad = values
    train = opt.apply_gradients([(grad, var)], global_step=step)
    return var, opt, values, train


@pytest.mark.parametrize("cls", NEW + ["GradientDescentOptimizer", "MomentumOptimizer",
                                       "AdagradOptimizer", "RMSPropOptimizer"])
def test_constructor_signature_matches_tf1(cls):
    params = list(inspect.signature(getattr(gf.train, cls).__init__).parameters.values())[1:]
    ours = [[p.name, None if p.default is inspect.Parameter.empty else p.default]
            for p in params]
    assert ours == FIX["signatures"][cls]


@pytest.mark.parametrize("mode", ["dense", "sparse"])
@pytest.mark.parametrize("key", sorted(FIX["configs"]))
def test_steps_match_tf1(key, mode):
    with gf.Graph().as_default():
        var, opt, values, train = _build(key, mode)
        feeds = ARR["sparse_values"] if mode == "sparse" else ARR["grads"]
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for i in range(FIX["steps"]):
                sess.run(train, {values: feeds[i]})
                prefix = f"{key}/{mode}/{i}"
                np.testing.assert_allclose(sess.run(var), ARR[f"{prefix}/var"], rtol=2e-6,
                                           atol=2e-7, err_msg=f"{prefix} var")
                for slot in opt.get_slot_names():
                    np.testing.assert_allclose(sess.run(opt.get_slot(var, slot)),
                                               ARR[f"{prefix}/{slot}"], rtol=2e-6, atol=2e-7,
                                               err_msg=f"{prefix} {slot}")


@pytest.mark.parametrize("mode", ["dense", "sparse"])
@pytest.mark.parametrize("key", sorted(FIX["configs"]))
def test_names_match_tf1(key, mode):
    graph = gf.Graph()
    with graph.as_default():
        var, opt, _, train = _build(key, mode)
        run = FIX["runs"][f"{key}/{mode}"]
        assert train.name == run["train_op"]
        assert opt.get_slot_names() == run["slot_names"]
        assert {s: opt.get_slot(var, s).name for s in opt.get_slot_names()} == run["slots"]
        assert [v.name for v in gf.global_variables()] == run["variables"]
        assert [v.name for v in gf.trainable_variables()] == run["trainable"]
        names = {op.name: op.type for op in graph.get_operations()}
        for name, op_type in run["new_ops"]:
            # The update op (TF1's kernel type, e.g. SparseApplyFtrlV2) and the named
            # hyperparameter constants carry TF1's names.
            if "Apply" in op_type or (op_type == "Const" and name.count("/") == 1
                                      and not name.endswith(("/value", "/x", "/y"))):
                assert names.get(name) == op_type, name


def test_ftrl_picks_v1_or_v2_kernel_and_accepts_slot_names():
    with gf.Graph().as_default():
        w = gf.Variable([1.0, 2.0], name="w")
        opt = gf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin")
        opt.minimize(gf.reduce_sum(w * w))
        assert opt.get_slot(w, "accum").name == "w/acc:0"
        assert opt.get_slot(w, "linear").name == "w/lin:0"
        shrink = gf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1,
                                        use_locking=True)
        shrink.minimize(gf.reduce_sum(w * w))
        types = {op.type for op in gf.get_default_graph().get_operations()}
        assert {"ApplyFtrl", "ApplyFtrlV2"} <= types


def test_tensor_hyperparameters_and_float64():
    with gf.Graph().as_default():
        w = gf.Variable(np.array([1.0, -2.0]), name="w")
        lr = gf.placeholder(gf.float32, [])
        step = gf.train.get_or_create_global_step()
        opt = gf.train.ProximalAdagradOptimizer(lr, l1_regularization_strength=0.01)
        train = opt.minimize(gf.reduce_sum(w * w), global_step=step)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train, {lr: 0.5})
            grad = np.array([2.0, -4.0])
            accum = 0.1 + grad ** 2
            step_size = 0.5 / np.sqrt(accum)
            prox = np.array([1.0, -2.0]) - step_size * grad
            expected = np.sign(prox) * np.maximum(np.abs(prox) - step_size * 0.01, 0)
            # The float32 hyperparameters are cast to the variable's float64, as in TF1.
            np.testing.assert_allclose(sess.run(w), expected, rtol=1e-9)


@pytest.mark.parametrize("key", ["ftrl_power", "ftrl_init", "ftrl_l1", "ftrl_l2",
                                 "ftrl_shrinkage", "adagrad_da_init", "proximal_adagrad_init"])
def test_constructor_errors_match_tf1(key):
    calls = {
        "ftrl_power": lambda: gf.train.FtrlOptimizer(0.1, learning_rate_power=0.5),
        "ftrl_init": lambda: gf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0),
        "ftrl_l1": lambda: gf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0),
        "ftrl_l2": lambda: gf.train.FtrlOptimizer(0.1, l2_regularization_strength=-1.0),
        "ftrl_shrinkage": lambda: gf.train.FtrlOptimizer(
            0.1, l2_shrinkage_regularization_strength=-1.0),
        "adagrad_da_init": lambda: gf.train.AdagradDAOptimizer(
            0.1, gf.train.get_or_create_global_step(),
            initial_gradient_squared_accumulator_value=0.0),
        "proximal_adagrad_init": lambda: gf.train.ProximalAdagradOptimizer(
            0.1, initial_accumulator_value=0.0),
    }
    expected = FIX["errors"][key]
    with gf.Graph().as_default():
        with pytest.raises(ValueError) as err:
            calls[key]()
    assert type(err.value).__name__ == expected["type"]
    assert str(err.value) == expected["message"]


def test_adagrad_da_requires_global_step():
    assert FIX["errors"]["adagrad_da_no_step"]["type"] == "ValueError"
    with pytest.raises(ValueError, match="global_step is required for AdagradDAOptimizer"):
        gf.train.AdagradDAOptimizer(0.1, None)


@pytest.mark.parametrize("cls", NEW)
def test_failed_apply_leaves_graph_and_slots_unchanged(cls):
    graph = gf.Graph()
    with graph.as_default():
        w = gf.Variable([[1.0, 2.0]], name="w")
        step = gf.train.get_or_create_global_step()
        opt = getattr(gf.train, cls)(0.1, step) if cls == "AdagradDAOptimizer" \
            else getattr(gf.train, cls)(0.1)
        bad = gf.constant([1.0, 2.0, 3.0])  # wrong shape for w
        before = _snapshot(graph)
        with pytest.raises(ValueError):
            opt.apply_gradients([(bad, w)])
        assert _snapshot(graph) == before
        assert opt.variables() == []
        # The optimizer still works afterwards.
        train = opt.apply_gradients([(gf.constant([[1.0, 1.0]]), w)])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            sess.run(train)
            assert np.all(np.isfinite(sess.run(w)))


@pytest.mark.parametrize("cls", NEW)
def test_repeated_sparse_indices_sum_like_a_dense_gradient(cls):
    results = []
    for sparse in (True, False):
        with gf.Graph().as_default():
            w = gf.Variable(np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.5]]), name="w")
            step = gf.train.get_or_create_global_step()
            opt = getattr(gf.train, cls)(0.1, step) if cls == "AdagradDAOptimizer" \
                else getattr(gf.train, cls)(0.1)
            rows = np.array([[0.5, -0.5], [0.25, 1.0], [1.0, 1.0]])
            if sparse:
                grad = gf.IndexedSlices(gf.constant(rows), gf.constant([0, 2, 0]),
                                        gf.constant([3, 2]))
            else:
                grad = gf.constant(np.array([rows[0] + rows[2], [0.0, 0.0], rows[1]]))
            train = opt.apply_gradients([(grad, w)])
            with gf.Session() as sess:
                sess.run(gf.global_variables_initializer())
                sess.run(train)
                results.append(sess.run(w))
    # Touched rows agree with the dense update of the summed gradient; TF1's sparse
    # kernels leave untouched rows alone, where a dense step may still move them.
    np.testing.assert_allclose(results[0][[0, 2]], results[1][[0, 2]], rtol=1e-12)
    np.testing.assert_array_equal(results[0][1], [3.0, -4.0])
