"""Session.run: fetch structures, feeds, plans, variables (SPEC E1-E3)."""
import collections
import warnings
import weakref

import numpy as np
import pytest

import gradflow as gf
from gradflow.runtime import executor


def test_nested_fetch_structures(sess):
    a = gf.constant(1.0)
    b = gf.constant([2, 3])
    Pair = collections.namedtuple("Pair", "first second")
    out = sess.run({"a": a, "rest": [b, (a, Pair(a, b))], "name": "Const:0"})
    assert out["a"] == 1.0 and out["name"] == 1.0
    np.testing.assert_array_equal(out["rest"][0], [2, 3])
    assert isinstance(out["rest"][1][1], Pair)
    assert sess.run(a.op) is None


def test_fetch_errors(sess):
    with pytest.raises(TypeError, match="Argument `fetch` = None has invalid type"):
        sess.run(None)
    with pytest.raises(TypeError, match="Argument `fetch` = 3 has invalid type"):
        sess.run(3)
    with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
        sess.run("missing:0")


def test_E1_only_needed_ops_run(sess):
    x = gf.placeholder(gf.float32, shape=[])
    y = x * 2.0
    z = gf.constant(3.0) + 1.0
    assert sess.run(z) == 4.0  # x is not fed and not needed
    assert sess.run(y, {x: 2.0}) == 4.0


def test_E1_feed_any_tensor(sess):
    a = gf.constant(2.0)
    b = a * 3.0
    c = b + 1.0
    assert sess.run(c, {b: 10.0}) == 11.0
    assert sess.run(c, {a: 1.0}) == 4.0


def test_E1_missing_placeholder_feed_names_it(sess):
    x = gf.placeholder(gf.float32, shape=[2, None], name="inputs")
    with pytest.raises(gf.errors.InvalidArgumentError,
                       match=r"You must feed a value for placeholder tensor 'inputs' with "
                             r"dtype float and shape \[2,\?\]"):
        sess.run(x * 2.0)


def test_E1_wrong_feed_shape_and_dtype(sess):
    x = gf.placeholder(gf.float32, shape=[2], name="x")
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor x:0, "
                                         r"which has shape \(2,\)"):
        sess.run(x, {x: [1.0, 2.0, 3.0]})
    n = gf.placeholder(gf.int32, shape=[], name="n")
    with pytest.raises(TypeError, match="Cannot feed value of dtype float64 for Tensor 'n:0' "
                                        "of dtype int32"):
        sess.run(n, {n: 1.5})
    assert sess.run(n, {n: 2.0}) == 2


def test_placeholder_with_default(sess):
    d = gf.placeholder_with_default(gf.constant([1.0, 2.0]), shape=[None])
    np.testing.assert_array_equal(sess.run(d), [1.0, 2.0])
    np.testing.assert_array_equal(sess.run(d, {d: [5.0]}), [5.0])


def test_E2_plans_are_cached_per_signature(sess):
    x = gf.placeholder(gf.float32, shape=[])
    y = x * 2.0
    sess.run(y, {x: 1.0})
    sess.run(y, {x: 2.0})
    assert len(sess._plans) == 1
    sess.run([y, x], {x: 2.0})
    assert len(sess._plans) == 2


def test_E2_plan_recompiled_when_control_edges_change(sess):
    v = gf.Variable(0.0)
    sess.run(v.initializer)
    inc = v.assign_add(1.0)
    out = gf.identity(gf.constant(1.0))
    sess.run(out)
    out.op.add_control_input(inc.op)
    sess.run(out)
    assert sess.run(v) == 1.0


def test_E2_intermediates_are_freed_after_last_use():
    x = gf.placeholder(gf.float64, shape=[1000])
    a = x * 2.0
    b = a + 1.0
    c = b * b
    plan = executor.compile_plan(gf.get_default_graph(), [c], [x])
    freed = {s for step in plan.steps for s in step.frees}
    produced = {s for step in plan.steps for s in step.outputs}
    assert produced - freed == set(plan.fetch_slots)


def test_E2_intermediate_arrays_die_before_later_steps_run(sess):
    from gradflow.framework.registry import NotDifferentiable, define_op
    from gradflow.ops.common import apply_op, same_as_input
    refs, alive_later = [], []

    def remember(x):
        refs.append(weakref.ref(x))
        return x + 0.0

    def check(x):
        alive_later.append(refs[0]() is not None)
        return x

    define_op("E2Remember", infer=same_as_input, kernel=remember)
    define_op("E2Check", infer=same_as_input, kernel=check)
    NotDifferentiable("E2Remember")
    NotDifferentiable("E2Check")
    x = gf.placeholder(gf.float64, shape=[1000])
    mid = x * 2.0
    later = apply_op("E2Remember", [mid]) * 3.0
    out = apply_op("E2Check", [later])
    sess.run(out, {x: np.ones(1000)})
    assert alive_later and not any(alive_later)  # GRADFLOW_VERIFY_PLANS runs it twice
    kept = sess.run([out, mid], {x: np.ones(1000)})
    np.testing.assert_array_equal(kept[1], 2 * np.ones(1000))


def test_E3_variables_persist_and_assign(sess):
    v = gf.Variable([1.0, 2.0], name="v")
    sess.run(gf.global_variables_initializer())
    sess.run(v.assign_add([1.0, 1.0]))
    np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
    sess.run(v.assign([0.0, 0.0]))
    sess.run(gf.assign_sub(v, [1.0, 1.0]))
    np.testing.assert_array_equal(sess.run(v), [-1.0, -1.0])
    with gf.Session() as other:
        with pytest.raises(gf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value v"):
            other.run(v)


def test_E3_failed_run_changes_no_variable(sess):
    v = gf.Variable(1.0)
    sess.run(v.initializer)
    bad = gf.placeholder(gf.float32, shape=None)
    update = v.assign(5.0)
    with gf.control_dependencies([update]):
        fails = gf.reshape(bad, [2])  # cannot reshape a scalar to [2] at run time
    with pytest.raises(gf.errors.InvalidArgumentError, match="Reshape"):
        sess.run(fails, {bad: 1.0})
    assert sess.run(v) == 1.0


def test_variable_reads_see_earlier_writes_in_the_same_run(sess):
    v = gf.Variable(1.0)
    sess.run(v.initializer)
    update = v.assign(7.0)
    with gf.control_dependencies([update]):
        read = v.read_value()
    assert sess.run(read) == 7.0


def test_variable_api():
    v = gf.Variable(np.zeros((2, 3)), name="w", trainable=False)
    assert v.name == "w:0" and v.op.name == "w" and v.shape.as_list() == [2, 3]
    assert v.dtype is gf.float64 and v.initializer.name == "w/Assign"
    assert v.value().name == "w/read:0"
    assert v not in gf.trainable_variables() and v in gf.global_variables()
    with pytest.raises(ValueError, match="initial_value must be specified"):
        gf.Variable()
    with gf.Session() as s:
        s.run(v.initializer)
        v.load(np.ones((2, 3)), s)
        np.testing.assert_array_equal(s.run(v + 1.0), 2 * np.ones((2, 3)))


def test_eval_and_run_use_default_session():
    x = gf.constant(3.0)
    with gf.Session():
        assert x.eval() == 3.0
        gf.no_op().run()
    with pytest.raises(ValueError, match="No default session"):
        x.eval()


def test_interactive_session():
    x = gf.constant(2.0)
    s = gf.InteractiveSession()
    try:
        assert x.eval() == 2.0
    finally:
        s.close()


def test_closed_session(sess):
    s = gf.Session()
    s.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(gf.constant(1.0))


def test_kernel_errors_name_the_op(sess):
    p = gf.constant(np.zeros((3, 2)))
    with pytest.raises(gf.errors.InvalidArgumentError, match=r"(?s)not in \[0, 3\).*node GatherV2"):
        sess.run(gf.gather(p, [5]))


def test_make_callable(sess):
    x = gf.placeholder(gf.float32, shape=[])
    f = sess.make_callable(x * 2.0, [x])
    assert f(3.0) == 6.0


@pytest.mark.parametrize("optimize", [True, False])
def test_special_values_flow_without_numpy_warnings(optimize, sess):
    """inf - inf, 0 / 0, log(0), overflow: NaN and infinity come back as values, as in
    TF, with no RuntimeWarning from inside a kernel."""
    previous = executor.optimizations_enabled()
    executor.set_optimizations(optimize)
    try:
        x = gf.placeholder(gf.float32, [3])
        y = gf.log(x) + (x * 1e38) * 1e38 - gf.exp(x * 100.0) + x / (x - x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = sess.run(y, {x: np.array([0.0, np.inf, -1.0], np.float32)})
    finally:
        executor.set_optimizations(previous)
    assert np.isnan(result).all()
