"""TF1 programs over the variable store, written once for both TensorFlow and gradflow.

Each program takes ``tf`` (``tensorflow.compat.v1`` or ``gradflow``) and a ``Recorder``,
builds a graph and notes what it sees. ``run_program`` adds the graph's op names, the
store-related collections and the values of the fetched tensors after initialization.
``tests/fixtures/tf/make_variables.py`` records the TensorFlow results; the tests run
the same programs on gradflow and compare. Nothing here imports TensorFlow.

Programs avoid ops whose default names are outside this area's parity (binary ops with
Python operands), so a mismatch points at the variable store.
"""
from __future__ import annotations

import numpy as np

COLLECTIONS = ("variables", "trainable_variables", "local_variables",
               "regularization_losses", "custom")


def first_line(error: BaseException) -> str:
    """An error's message without TF's appended "Originally defined at" trace."""
    return str(error).split(" Originally defined at:")[0].split("\n")[0].rstrip()


class Recorder:
    """What a program notes: plain values, errors, and tensors to evaluate."""

    def __init__(self):
        self.notes: dict = {}
        self.fetches: dict = {}

    def note(self, key: str, value) -> None:
        self.notes[key] = value

    def fetch(self, key: str, tensor) -> None:
        self.fetches[key] = tensor

    def error(self, key: str, call, type_only: bool = False) -> None:
        """Notes ``[type name, first line of message]`` of what ``call()`` raises."""
        try:
            call()
        except Exception as error:
            self.notes[key] = [type(error).__name__] + ([] if type_only
                                                         else [first_line(error)])
        else:
            self.notes[key] = None


def scope_info(scope) -> list:
    return [scope.name, scope.original_name_scope, repr(scope.reuse).replace("_ReuseMode.", "")]


def run_program(tf, program) -> dict:
    """Runs ``program`` in a fresh graph; returns its notes, ops, collections and values."""
    graph = tf.Graph()
    with graph.as_default():
        recorder = Recorder()
        program(tf, recorder)
        result = {"notes": recorder.notes,
                  "ops": sorted(op.name for op in graph.get_operations()),
                  "collections": {key: [item.name for item in graph.get_collection(key)]
                                  for key in COLLECTIONS}}
        if recorder.fetches:
            with tf.Session() as session:
                session.run([tf.global_variables_initializer(),
                             tf.local_variables_initializer()])
                values = session.run(recorder.fetches)
            result["values"] = {key: np.asarray(value).tolist()
                                for key, value in values.items()}
    return result


# ---------------------------------------------------------------------- programs
def basic_names(tf, rec):
    with tf.variable_scope("scope"):
        w = tf.get_variable("w", [3, 4])
        b = tf.get_variable("b", [4], initializer=tf.zeros_initializer())
        i = tf.get_variable("i", [2], dtype=tf.int32)
        flag = tf.get_variable("flag", [2], dtype=tf.bool)
        c = tf.get_variable("c", initializer=tf.constant([1.0, 2.0], name="c0"))
        d = tf.get_variable("d", dtype=tf.float64, initializer=np.array([1.5, 2.5]))
        scalar = tf.get_variable("s", [], initializer=tf.ones_initializer())
        tf.identity(w, name="out")
    with tf.variable_scope("scope"):
        tf.identity(w, name="out")
    rec.note("vars", [[v.name, v.shape.as_list(), v.dtype.base_dtype.name] for v in
                      (w, b, i, flag, c, d, scalar)])
    for key, v in (("b", b), ("i", i), ("flag", flag), ("c", c), ("d", d), ("s", scalar)):
        rec.fetch(key, v)


def reenter_scopes(tf, rec):
    with tf.variable_scope("a") as a:
        rec.note("a", scope_info(a))
        tf.constant(1.0, name="x")
    with tf.variable_scope(a) as a2:
        rec.note("a2", scope_info(a2))
        rec.note("a2_is_a", a2 is a)
        tf.constant(1.0, name="x")
        rec.note("v", tf.get_variable("v", [1]).name)
    with tf.variable_scope("outer"):
        with tf.variable_scope(a) as a3:
            rec.note("a3", scope_info(a3))
            tf.constant(1.0, name="x")
            with tf.variable_scope("in") as inner:
                rec.note("in", scope_info(inner))
                tf.constant(1.0, name="x")
                rec.note("in_v", tf.get_variable("v", [1]).name)
    with tf.variable_scope("n", auxiliary_name_scope=False) as n:
        rec.note("n", scope_info(n))
        tf.constant(1.0, name="y")
    with tf.variable_scope("m"):
        with tf.variable_scope("n2", auxiliary_name_scope=False) as n2:
            rec.note("n2", scope_info(n2))
            tf.constant(1.0, name="y")
    with tf.variable_scope("a/b") as ab:
        rec.note("a/b", scope_info(ab))
    with tf.variable_scope(""):
        rec.note("empty", [tf.get_variable_scope().name, tf.get_default_graph().get_name_scope()])
        rec.note("empty_v", tf.get_variable("top", [1]).name)
    manager = tf.variable_scope("cm")
    with manager as first:
        tf.constant(1.0, name="z")
        rec.note("cm1", scope_info(first))
    with manager as second:
        tf.constant(1.0, name="z")
        rec.note("cm2", scope_info(second))
    rec.note("root", scope_info(tf.get_variable_scope()))


def default_names(tf, rec):
    infos = []
    with tf.variable_scope(None, default_name="d") as d:
        infos.append(scope_info(d))
    with tf.variable_scope(None, default_name="d") as d:
        infos.append(scope_info(d))
    with tf.name_scope("d_2"):
        pass
    with tf.variable_scope(None, default_name="d") as d:
        infos.append(scope_info(d))
    with tf.variable_scope("d_3") as d:
        infos.append(scope_info(d))
    with tf.variable_scope(None, default_name="d") as d:
        infos.append(scope_info(d))
        tf.get_variable("v", [1])
    with tf.variable_scope("p"):
        for _ in range(2):
            with tf.variable_scope(None, default_name="q") as q:
                infos.append(scope_info(q))
                tf.get_variable("v", [1])
    with tf.variable_scope("p"):
        with tf.variable_scope(None, default_name="q") as q:
            infos.append(scope_info(q))
    with tf.variable_scope("named", default_name="ignored") as named:
        infos.append(scope_info(named))
    rec.note("scopes", infos)


def reuse_modes(tf, rec):
    with tf.variable_scope("r", reuse=True):
        rec.note("r", scope_info(tf.get_variable_scope()))
        with tf.variable_scope("s", reuse=False) as s:
            rec.note("r/s", scope_info(s))
        with tf.variable_scope("s2", reuse=tf.AUTO_REUSE) as s:
            rec.note("r/s2", scope_info(s))
        with tf.variable_scope("s3") as s:
            rec.note("r/s3", scope_info(s))
    with tf.variable_scope("r2", reuse=tf.AUTO_REUSE):
        with tf.variable_scope("s", reuse=True) as s:
            rec.note("r2/s", scope_info(s))
        with tf.variable_scope("s3") as s:
            rec.note("r2/s3", scope_info(s))
    with tf.variable_scope("a") as a:
        first = tf.get_variable("w", [2])
    with tf.variable_scope("r3", reuse=True):
        with tf.variable_scope(a) as again:
            rec.note("by_object_inside_reuse", scope_info(again))
    a.reuse_variables()
    rec.note("a_after_reuse_variables", scope_info(a))
    with tf.variable_scope(a) as again:
        rec.note("a_again", scope_info(again))
        rec.note("shared_by_object", tf.get_variable("w", [2]) is first)
    with tf.variable_scope(a, reuse=False) as again:
        rec.note("a_reuse_false", scope_info(again))
    with tf.variable_scope("a", reuse=True):
        rec.note("shared_by_name", tf.get_variable("w") is first)
        rec.note("shared_shape_none", tf.get_variable("w", shape=None).name)
    with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
        rec.note("auto_existing", tf.get_variable("w", [2]) is first)
        rec.note("auto_new", tf.get_variable("w2", [2]).name)
        rec.note("auto_again", tf.get_variable("w2", [2]).name)
    with tf.variable_scope("b"):
        made = tf.get_variable("w", [1])
        tf.get_variable_scope().reuse_variables()
        rec.note("after_reuse_variables", tf.get_variable("w") is made)
        with tf.variable_scope("inner") as inner:
            rec.note("inherited", scope_info(inner))
    with tf.variable_scope("b") as b_again:
        rec.note("b_again", scope_info(b_again))
    with tf.variable_scope("c", reuse=True):
        rec.error("reuse_missing", lambda: tf.get_variable("w", [1]))


def errors(tf, rec):
    with tf.variable_scope("e"):
        tf.get_variable("w", [2, 3])
        rec.error("exists", lambda: tf.get_variable("w", [2, 3]))
        try:
            tf.get_variable("w", [2, 3])
        except ValueError as error:  # where "e/w" was made: frames of this file
            rec.note("exists_origin", [line.split(", ", 1)[1] for line in
                                       str(error).split("Originally defined at:")[1].splitlines()
                                       if "variable_programs.py" in line])
        rec.error("constant_with_shape",
                  lambda: tf.get_variable("k", [2], initializer=tf.constant([1.0, 2.0])))
        rec.error("init_dtype_mismatch",
                  lambda: tf.get_variable("k2", dtype=tf.int32,
                                          initializer=tf.constant([1.0, 2.0])))
        rec.error("no_shape", lambda: tf.get_variable("k3"))
        rec.error("partial_shape", lambda: tf.get_variable("k4", [None, 2]))
        rec.error("complex_default", lambda: tf.get_variable("k5", [2], dtype=tf.complex64))
        rec.error("bad_custom_getter", lambda: tf.get_variable("k6", [2], custom_getter=3))
    with tf.variable_scope("e", reuse=True):
        rec.error("missing", lambda: tf.get_variable("nope", [2]))
        rec.error("shape_mismatch", lambda: tf.get_variable("w", [3, 2]))
        rec.error("dtype_mismatch", lambda: tf.get_variable("w", [2, 3], dtype=tf.float64))
        rec.error("rank_mismatch", lambda: tf.get_variable("w", [6]))
    rec.error("no_name", lambda: tf.variable_scope(None))
    rec.error("reuse_without_name",
              lambda: tf.variable_scope(None, default_name="x", reuse=True).__enter__())
    rec.error("bad_scope_type", lambda: tf.variable_scope(3).__enter__())
    rec.error("bad_reuse", lambda: tf.variable_scope("x", reuse=3))
    rec.error("bad_auxiliary", lambda: tf.variable_scope("x", auxiliary_name_scope=1))
    rec.error("bad_scope_getter", lambda: tf.variable_scope("x", custom_getter=3))

    def bad_getter_in_scope():
        with tf.variable_scope("bg", custom_getter=3):
            tf.get_variable("v", [1])

    rec.error("bad_scope_getter_used", bad_getter_in_scope)

    def shares_with_none_reuse():
        scope = tf.VariableScope(None, name="obj")
        with tf.variable_scope(scope):
            return tf.get_variable("a", [1]) is tf.get_variable("a", [1])

    rec.note("none_reuse_shares", shares_with_none_reuse())
    rec.note("scope_after_errors", scope_info(tf.get_variable_scope()))


def scope_defaults(tf, rec):
    def l2(v):
        return tf.reduce_sum(tf.square(v))

    def halve(v):
        return tf.identity(v, name="halved")

    with tf.variable_scope("init", initializer=tf.constant_initializer(3.0)):
        rec.fetch("scope_init", tf.get_variable("a", [2]))
        rec.fetch("own_init", tf.get_variable("b", [2], initializer=tf.ones_initializer()))
        with tf.variable_scope("inner"):
            rec.fetch("inherited_init", tf.get_variable("c", [2]))
            rec.error("inherited_float_init_for_int",
                      lambda: tf.get_variable("n", [2], dtype=tf.int32))
    with tf.variable_scope("typed", dtype=tf.float64) as typed:
        rec.note("typed_dtype", typed.dtype.name)
        rec.note("typed_var", tf.get_variable("a", [2]).dtype.base_dtype.name)
        with tf.variable_scope("inner"):
            rec.note("typed_inner", tf.get_variable("b", [2]).dtype.base_dtype.name)
    with tf.variable_scope("reg", regularizer=l2) as reg:
        rec.note("reg_set", reg.regularizer is l2)
        tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, 2.0]))
        tf.get_variable("v", [2], regularizer=tf.nn.l2_loss,
                        initializer=tf.constant_initializer(2.0))
        tf.get_variable("off", [2], regularizer=tf.no_regularizer)
        with tf.variable_scope("inner"):
            tf.get_variable("u", [1], initializer=tf.ones_initializer())
        with tf.variable_scope("again", reuse=tf.AUTO_REUSE):
            tf.get_variable("x", [1], initializer=tf.ones_initializer())
            tf.get_variable("x", [1], initializer=tf.ones_initializer())
    rec.fetch("reg_losses", tf.get_collection("regularization_losses"))
    with tf.variable_scope("con", constraint=halve) as con:
        made = tf.get_variable("w", [2])
        rec.note("con_var", made.constraint is halve)
        with tf.variable_scope("inner") as inner:
            rec.note("con_inner_scope", inner.constraint is halve)
            rec.note("con_inner_var", tf.get_variable("w", [2]).constraint is halve)
        rec.note("con_scope", con.constraint is halve)
    with tf.variable_scope("set") as scope:
        scope.set_initializer(tf.constant_initializer(7.0))
        scope.set_dtype(tf.float64)
        rec.fetch("set_init", tf.get_variable("a", [1]))
        rec.note("set_dtype", tf.get_variable("b", [1]).dtype.base_dtype.name)


def getters(tf, rec):
    log = []

    def outer_getter(getter, name, *args, **kwargs):
        log.append(["outer", name, kwargs.get("shape") and list(kwargs["shape"])])
        return getter(name + "_o", *args, **kwargs)

    def inner_getter(getter, name, *args, **kwargs):
        log.append(["inner", name])
        return getter(name + "_i", *args, **kwargs)

    def var_getter(getter, name, *args, **kwargs):
        log.append(["var", name])
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("g", custom_getter=outer_getter):
        rec.note("outer_only", tf.get_variable("a", [1]).name)
        with tf.variable_scope("h", custom_getter=inner_getter):
            rec.note("chained", tf.get_variable("b", [1]).name)
            rec.note("chained_var", tf.get_variable("c", [1], custom_getter=var_getter).name)
    rec.note("log", log)
    seen = []

    def keyword_getter(getter, **kwargs):
        seen.append(sorted(kwargs))
        return getter(**kwargs)

    def constraint_getter(getter, name, shape=None, constraint=None, **kwargs):
        seen.append(["constraint", constraint is None])
        return getter(name, shape=shape, constraint=constraint, **kwargs)

    with tf.variable_scope("k"):
        tf.get_variable("a", [1], custom_getter=keyword_getter)
        tf.get_variable("b", [1], custom_getter=constraint_getter)
    rec.note("getter_kwargs", seen)


def local_and_collections(tf, rec):
    with tf.variable_scope("l"):
        loc = tf.get_local_variable("loc", [2], initializer=tf.zeros_initializer())
        loc2 = tf.get_local_variable("loc2", [1], trainable=True, collections=["custom"])
        frozen = tf.get_variable("frozen", [1], trainable=False)
        custom = tf.get_variable("mine", [1], collections=["custom"])
        both = tf.get_variable("both", [1], collections=["custom", "variables"])
    rec.note("trainable", [v.trainable for v in (loc, loc2, frozen, custom, both)])
    rec.note("scope_lists", [
        [v.name for v in tf.get_variable_scope().global_variables()],
        [v.name for v in tf.global_variables("l/")]])
    with tf.variable_scope("l") as scope:
        rec.note("scope_global", [v.name for v in scope.global_variables()])
        rec.note("scope_trainable", [v.name for v in scope.trainable_variables()])
        rec.note("scope_local", [v.name for v in scope.local_variables()])
        rec.note("scope_custom", [v.name for v in scope.get_collection("custom")])


def shapes_and_values(tf, rec):
    with tf.variable_scope("sv"):
        loose = tf.get_variable("loose", initializer=tf.constant([1.0, 2.0, 3.0]),
                                validate_shape=False)
        rec.note("loose_shape", str(loose.shape))
        rec.fetch("loose", loose)
        rec.fetch("list_init", tf.get_variable("lst", initializer=[[1, 2], [3, 4]]))
        rec.fetch("np_init", tf.get_variable("arr", initializer=np.arange(3.0)))
        rec.fetch("const_list", tf.get_variable(
            "cl", [2, 3], initializer=tf.constant_initializer([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])))
        rec.fetch("const_pad", tf.get_variable(
            "cp", [4], initializer=tf.constant_initializer([1.0, 2.0])))
        rec.fetch("const_int", tf.get_variable(
            "ci", [2], dtype=tf.int64, initializer=tf.constant_initializer(5)))
        rec.fetch("ones_int", tf.get_variable("oi", [2, 2], dtype=tf.int32,
                                              initializer=tf.ones_initializer()))
        rec.fetch("identity", tf.get_variable("eye", [2, 3],
                                              initializer=tf.initializers.identity(gain=2.0)))
        rec.fetch("big_zeros", tf.reduce_sum(tf.get_variable(
            "big", [40, 30], initializer=tf.zeros_initializer())))
        rec.fetch("class_init", tf.get_variable("cls", [2], initializer=tf.ones_initializer))
        rec.fetch("lambda_init", tf.get_variable(
            "fn", initializer=lambda: tf.constant([4.0, 5.0], name="made")))
        rec.error("const_verify", lambda: tf.get_variable(
            "cv", [3], initializer=tf.constant_initializer([1.0, 2.0], verify_shape=True)))
        rec.error("const_too_many", lambda: tf.get_variable(
            "ct", [1], initializer=tf.constant_initializer([1.0, 2.0])))
        rec.error("identity_3d", lambda: tf.get_variable(
            "e3", [2, 2, 2], initializer=tf.initializers.identity()))
        rec.error("orthogonal_1d", lambda: tf.get_variable(
            "o1", [3], initializer=tf.orthogonal_initializer()))
        rec.error("normal_int", lambda: tf.get_variable(
            "ni", [3], dtype=tf.int32, initializer=tf.random_normal_initializer()))


def control_and_name_scopes(tf, rec):
    gate = tf.constant(0.0, name="gate")
    with tf.control_dependencies([gate]):
        with tf.variable_scope("cd"):
            v = tf.get_variable("v", [1])
            out = tf.identity(v, name="out")
    rec.note("var_control_inputs", [op.name for op in v.op.control_inputs])
    rec.note("assign_control_inputs", [op.name for op in v.initializer.control_inputs])
    rec.note("out_control_inputs", [op.name for op in out.op.control_inputs])
    with tf.name_scope("ns"):
        with tf.variable_scope("vs"):
            u = tf.get_variable("u", [1])
            tf.constant(1.0, name="k")
            with tf.name_scope("deeper"):
                rec.note("in_name_scope", tf.get_variable("t", [1]).name)
                tf.constant(1.0, name="k")
    rec.note("u", u.name)
    with tf.variable_scope("vs2"):
        plain = tf.Variable(1.0, name="plain")
        rec.note("plain", plain.name)


def templates(tf, rec):
    def scale(x, factor=1.0):
        w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        return tf.multiply(w, tf.constant(factor, name="factor"), name="out"), w

    tmpl = tf.make_template("tmpl", scale, factor=2.0)
    a, wa = tmpl(tf.constant([1.0, 2.0], name="in1"))
    b, wb = tmpl(tf.constant([1.0, 2.0], name="in2"))
    rec.note("first", [a.name, wa.name, tmpl.name, tmpl.variable_scope.name,
                       tmpl.variable_scope.original_name_scope, tmpl.variable_scope_name,
                       [v.name for v in tmpl.variables],
                       [v.name for v in tmpl.trainable_variables]])
    rec.note("shared", wa is wb)
    rec.note("second_out", b.name)
    other = tf.make_template("tmpl", scale)
    rec.note("other", [other(1.0)[0].name, other.variable_scope_name])
    now = tf.make_template("now", scale, create_scope_now_=True)
    rec.note("now_scope", [now.variable_scope.name, now.variable_scope.original_name_scope])
    rec.note("now_calls", [now(1.0)[0].name, now(1.0)[0].name])
    fixed = tf.make_template("tmpl", scale, unique_name_="fixed")
    rec.note("fixed", [fixed(1.0)[0].name, fixed.variable_scope_name])
    with tf.variable_scope("outer"):
        nested = tf.make_template("tmpl", scale)
        rec.note("nested", [nested(1.0)[0].name, nested.variable_scope_name])
    rec.note("nested_outside", nested(1.0)[0].name)
    log = []

    def getter(getter, name, *args, **kwargs):
        log.append(name)
        return getter(name, *args, **kwargs)

    watched = tf.make_template("cg", scale, custom_getter_=getter)
    watched(1.0)
    watched(1.0)
    rec.note("getter_log", log)

    def free(x):
        return tf.identity(tf.Variable(1.0, name="free"), name="out")

    loose = tf.make_template("bad", free)
    loose(1.0)
    rec.error("second_call_new_variable", lambda: loose(1.0))
    rec.error("no_name", lambda: tf.make_template(None, scale))
    rec.fetch("tmpl_out", a)




def initializer_ops(tf, rec):
    """Every initializer once, for the names of the ops it builds under Initializer/."""
    inits = {
        "zeros": tf.zeros_initializer(), "ones": tf.ones_initializer(),
        "constant": tf.constant_initializer(0.5), "normal": tf.random_normal_initializer(),
        "uniform": tf.random_uniform_initializer(-1.0, 1.0),
        "truncated": tf.truncated_normal_initializer(stddev=0.1),
        "unit_scaling": tf.uniform_unit_scaling_initializer(),
        "vs_truncated": tf.variance_scaling_initializer(),
        "vs_untruncated": tf.variance_scaling_initializer(distribution="untruncated_normal"),
        "vs_uniform": tf.variance_scaling_initializer(distribution="uniform"),
        "glorot_uniform": tf.glorot_uniform_initializer(),
        "glorot_normal": tf.glorot_normal_initializer(),
        "orthogonal": tf.orthogonal_initializer(), "orthogonal_wide": tf.orthogonal_initializer(),
        "identity": tf.initializers.identity(),
        "he_normal": tf.initializers.he_normal(), "lecun_uniform": tf.initializers.lecun_uniform()}
    with tf.variable_scope("init"):
        for name, init in inits.items():
            shape = [2, 5] if name == "orthogonal_wide" else [5, 2]
            tf.get_variable(name, shape, initializer=init)
    int_zeros = tf.zeros_initializer()([2], dtype=tf.int32)
    rec.note("bare_call", [int_zeros.name, tf.ones_initializer()([3, 4]).name])
    rec.fetch("int_zeros", int_zeros)


def name_collisions(tf, rec):
    plain = tf.Variable(1.0, name="w")
    made = tf.get_variable("w", [])
    rec.note("names", [plain.name, made.name])
    rec.note("shared", tf.get_variable_scope().reuse)
    with tf.variable_scope("", reuse=True):
        rec.note("found", tf.get_variable("w").name)
    with tf.name_scope("ns"):
        pass
    rec.note("after_name_scope", tf.get_variable("ns", [1]).name)
    with tf.variable_scope("ns"):
        rec.note("scope_named_like_name_scope", tf.get_variable("v", [1]).name)
        tf.constant(1.0, name="c")
    # The type only: the message is the engine's name-scope check (not TF's text yet).
    rec.error("bad_name", lambda: tf.get_variable("bad name!", [1]), type_only=True)


PROGRAMS = {program.__name__: program for program in (
    basic_names, reenter_scopes, default_names, reuse_modes, errors, scope_defaults, getters,
    local_and_collections, shapes_and_values, control_and_name_scopes, templates,
    initializer_ops, name_collisions)}
