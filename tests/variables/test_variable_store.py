"""The variable store's own guarantees: atomic failure, gradients, graphs, threads, and
the TF1 arguments gradflow refuses (``partitioner``) or accepts as one kind
(``use_resource``)."""
import gc
import threading
import weakref

import numpy as np
import pytest

import gradflow as gf


def _snapshot(graph):
    return ([op.name for op in graph.get_operations()],
            {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()})


@pytest.fixture
def graph():
    g = gf.Graph()
    with g.as_default():
        yield g


def _raising_initializer(shape, dtype=None, partition_info=None):
    gf.ones(shape, dtype=dtype)  # ops made before the failure must go with it
    raise RuntimeError("initializer failed")


def _raising_regularizer(variable):
    gf.reduce_sum(variable)
    raise RuntimeError("regularizer failed")


@pytest.mark.parametrize("call", [
    lambda: gf.get_variable("w", [2]),                               # exists
    lambda: gf.get_variable("new", [2], initializer=_raising_initializer),
    lambda: gf.get_variable("new", [2], regularizer=_raising_regularizer),
    lambda: gf.get_variable("new", [3], initializer=gf.initializers.identity()),
    lambda: gf.get_variable("new", [2], initializer=np.array([1.0, 2.0])),
    lambda: gf.get_variable("new", dtype=gf.int32, initializer=[1.5, 2.5]),
    lambda: gf.get_variable("new", [2], dtype=gf.int32, initializer=gf.random_normal_initializer()),
    lambda: gf.get_variable("new", [2], partitioner=lambda shape, dtype: [1]),
    lambda: gf.get_variable("new"),
], ids=["exists", "initializer", "regularizer", "identity_1d", "constant_and_shape",
        "value_dtype_mismatch",
        "float_init_for_int", "partitioner", "no_shape"])
def test_failing_get_variable_changes_nothing(graph, call):
    with gf.variable_scope("s"):
        gf.get_variable("w", [2])
        before = _snapshot(graph)
        with pytest.raises((ValueError, TypeError, RuntimeError)):
            call()
        assert _snapshot(graph) == before
        # The store forgot the failed variable: making it again works, sharing finds none.
        with pytest.raises(ValueError, match="does not exist"):
            with gf.variable_scope(gf.get_variable_scope(), reuse=True):
                gf.get_variable("new", [2])
        assert gf.get_variable("new", [2]).name == "s/new:0"


def test_failed_builder_rolls_back_scope_counts(graph):
    """A layer-like builder that fails inside Graph.atomic leaves the next default-named
    scope (and its name scope) as if it had never run."""
    with pytest.raises(RuntimeError):
        with graph.atomic():
            with gf.variable_scope(None, default_name="dense"):
                gf.get_variable("kernel", [2, 2])
                raise RuntimeError("layer failed")
    with gf.variable_scope(None, default_name="dense") as scope:
        kernel = gf.get_variable("kernel", [2, 2])
        out = gf.identity(kernel, name="out")
    assert (scope.name, scope.original_name_scope) == ("dense", "dense/")
    assert (kernel.name, out.name) == ("dense/kernel:0", "dense/out:0")


def test_failed_template_call_can_be_retried(graph):
    calls = []

    def body(x):
        w = gf.get_variable("w", [2], initializer=gf.ones_initializer())
        calls.append(x)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return w * x

    template = gf.make_template("tmpl", body)
    before = _snapshot(graph)
    with pytest.raises(RuntimeError):
        template(1.0)
    assert _snapshot(graph) == before
    out = template(3.0)
    assert [v.name for v in template.variables] == ["tmpl/w:0"]
    assert template(4.0).op.name != out.op.name
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        np.testing.assert_allclose(session.run(out), [3.0, 3.0])


def test_gradients_reach_store_variables(graph):
    x = gf.constant([[1.0, 2.0], [3.0, -1.0]])
    with gf.variable_scope("model", initializer=gf.constant_initializer(0.5)):
        w = gf.get_variable("w", [2, 1])
        b = gf.get_variable("b", [1], initializer=gf.zeros_initializer())
    with gf.variable_scope("model", reuse=True):
        shared = gf.get_variable("w")
    loss = gf.reduce_sum(gf.square(gf.matmul(x, shared) + b))
    grad_w, grad_b = gf.gradients(loss, [w, b])
    step = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        residual = x.eval() @ np.full((2, 1), 0.5)
        np.testing.assert_allclose(session.run(grad_w), 2 * x.eval().T @ residual, rtol=1e-6)
        np.testing.assert_allclose(session.run(grad_b), [2 * residual.sum()], rtol=1e-6)
        session.run(step)
        np.testing.assert_allclose(session.run(w), 0.5 - 0.1 * 2 * x.eval().T @ residual,
                                   rtol=1e-6)


def test_gradient_of_regularization_loss(graph):
    w = gf.get_variable("w", [3], initializer=gf.constant_initializer([1.0, -2.0, 3.0]),
                        regularizer=lambda v: 0.5 * gf.reduce_sum(gf.square(v)))
    (loss,) = gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)
    assert loss.op.name.startswith("w/Regularizer/")
    (grad,) = gf.gradients(loss, [w])
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        np.testing.assert_allclose(session.run(grad), [1.0, -2.0, 3.0])


def test_one_store_per_graph():
    first, second = gf.Graph(), gf.Graph()
    with first.as_default():
        a = gf.get_variable("v", [1])
        with gf.variable_scope("open"):
            with second.as_default():
                assert gf.get_variable_scope().name == ""
                b = gf.get_variable("v", [1])
            assert gf.get_variable_scope().name == "open"
    assert a.graph is first and b.graph is second and a.name == b.name == "v:0"


def test_values_pick_the_graph(graph):
    other = gf.Graph()
    with other.as_default():
        t = gf.constant(1.0)
    with gf.variable_scope("vals", values=[t]):
        v = gf.get_variable("v", [1])
    assert v.graph is other
    with gf.variable_op_scope([t], None, default_name="op_scope") as scope:
        assert scope.name == "op_scope"


def test_scopes_are_per_thread(graph):
    seen = {}

    def worker():
        with graph.as_default():
            seen["scope"] = gf.get_variable_scope().name
            with gf.variable_scope("thread"):
                seen["var"] = gf.get_variable("v", [1]).name

    with gf.variable_scope("main"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert gf.get_variable_scope().name == "main"
    assert seen == {"scope": "", "var": "thread/v:0"}
    with gf.variable_scope("thread", reuse=True):
        assert gf.get_variable("v").name == "thread/v:0"  # one store shared by threads


def test_variable_made_in_cond_branch_lives_in_outer_graph(graph):
    flag = gf.placeholder(gf.bool, [])

    def branch():
        with gf.variable_scope("branch"):
            return gf.identity(gf.get_variable("v", [2], initializer=gf.ones_initializer()))

    out = gf.cond(flag, branch, lambda: gf.zeros([2]))
    (variable,) = gf.global_variables()
    assert variable.graph is graph and variable.name == "branch/v:0"
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        np.testing.assert_allclose(session.run(out, {flag: True}), [1.0, 1.0])


def test_control_dependencies_do_not_reach_initializers(graph):
    gate = gf.constant(0.0, name="gate")
    with gf.control_dependencies([gate]):
        v = gf.get_variable("v", [1])
        out = gf.identity(v)
    assert v.initializer.control_inputs == [] and v.op.control_inputs == []
    assert out.op.control_inputs == [gate.op]


@pytest.mark.parametrize("call", [
    lambda: gf.variable_scope("p", partitioner=lambda shape, dtype: [1]),
    lambda: gf.get_variable("v", [4], partitioner=lambda shape, dtype: [2]),
    lambda: gf.get_variable_scope().set_partitioner(lambda shape, dtype: [2]),
    lambda: gf.VariableScope(False, partitioner=lambda shape, dtype: [2]),
])
def test_partitioner_is_not_supported(graph, call):
    with pytest.raises(ValueError, match="partitioner.*not supported"):
        call()


def test_use_resource_is_accepted(graph):
    with gf.variable_scope("r", use_resource=True) as scope:
        v = gf.get_variable("v", [2], initializer=gf.ones_initializer())
        u = gf.get_variable("u", [2], use_resource=False)
    assert scope.use_resource is True
    assert isinstance(v, gf.Variable) and isinstance(u, gf.Variable)
    assert v.name == "r/v:0"


def test_local_variable_is_local_and_not_trainable(graph):
    v = gf.get_local_variable("counter", [], dtype=gf.int64)
    assert gf.local_variables() == [v] and gf.trainable_variables() == []
    assert gf.global_variables() == []
    with gf.Session() as session:
        session.run(gf.local_variables_initializer())
        assert session.run(v) == 0


def test_auto_reuse_shares_and_creates(graph):
    def layer():
        with gf.variable_scope("shared", reuse=gf.AUTO_REUSE):
            return gf.get_variable("w", [2])

    assert layer() is layer()
    assert len(gf.global_variables()) == 1


def test_initializer_class_and_callable_forms(graph):
    made = gf.get_variable("cls", [2], initializer=gf.ones_initializer)
    lazy = gf.get_variable("fn", initializer=lambda: gf.constant([1.0, 2.0, 3.0]))
    assert made.shape.as_list() == [2] and lazy.shape.as_list() == [3]
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        np.testing.assert_allclose(session.run(made), [1.0, 1.0])


def test_validate_shape_false_keeps_the_shape_open(graph):
    v = gf.get_variable("loose", initializer=gf.constant([1.0, 2.0]), validate_shape=False)
    assert v.shape.ndims is None
    grow = gf.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
    with gf.Session() as session:
        session.run(gf.global_variables_initializer())
        np.testing.assert_allclose(session.run(grow), [1.0, 2.0, 3.0])


def test_get_variable_accepts_synchronization_arguments(graph):
    v = gf.get_variable("s", [1], synchronization=gf.VariableSynchronization.ON_READ,
                        aggregation=gf.VariableAggregation.MEAN)
    assert v.trainable is False
    with pytest.raises(ValueError, match="ON_READ"):
        gf.get_variable("t", [1], trainable=True,
                        synchronization=gf.VariableSynchronization.ON_READ)


def test_store_does_not_keep_its_graph_alive():
    g = gf.Graph()
    with g.as_default():
        with gf.variable_scope("a"):
            gf.get_variable("v", [2])
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None


def test_variable_scope_setters_apply_to_later_variables(graph):
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append(name)
        return getter(name, *args, **kwargs)

    with gf.variable_scope("set") as scope:
        scope.set_regularizer(lambda v: gf.reduce_sum(v))
        scope.set_custom_getter(getter)
        scope.set_caching_device("/cpu:0")
        scope.set_use_resource(True)
        v = gf.get_variable("v", [2], initializer=gf.ones_initializer())
        local = gf.get_local_variable("loc", [1])
    assert calls == ["set/v", "set/loc"]
    assert (scope.caching_device, scope.use_resource) == ("/cpu:0", True)
    assert [t.op.name for t in gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)] == [
        "set/v/Regularizer/Sum", "set/loc/Regularizer/Sum"]
    assert scope.global_variables() == [v] and scope.local_variables() == [local]
    assert scope.get_collection(gf.GraphKeys.TRAINABLE_VARIABLES) == [v]


def test_template_properties(graph):
    def body(x, scale):
        w = gf.get_variable("w", [1], initializer=gf.ones_initializer())
        steps = gf.get_variable("steps", [], dtype=gf.int32, trainable=False)
        gf.get_local_variable("seen", [], dtype=gf.int32)
        return w * x * scale, steps

    template = gf.make_template("t", body, scale=3.0)
    assert template.variable_scope is None and template.variable_scope_name is None
    assert template.variables == []
    template(1.0)
    assert template.func.__name__ == "body" and template.name == "t"
    assert [v.name for v in template.trainable_variables] == ["t/w:0"]
    assert [v.name for v in template.non_trainable_variables] == ["t/steps:0"]
    assert [v.name for v in template.local_variables] == ["t/seen:0"]
    assert template.weights == template.variables == template.global_variables
