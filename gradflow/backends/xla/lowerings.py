"""Lowerings of gradflow op types to JAX, keyed by op type.

A lowering is ``fn(L, op, *args)`` returning the op's output (a tuple for several).
``L`` is the lowering context: ``L.jnp``, ``L.lax``, ``L.read``/``L.write`` for
variables, ``L.key(op)`` for random ops, and ``L.check(op, bad, inputs)`` for the
kernels' run-time checks (where ``bad`` holds anywhere, the run raises the kernel's
own error; ``L.check_range(op, indices, bound, inputs)`` for index range checks, made on
the host when the indices are the cluster's input). ``op`` is the graph op (its attrs),
``args`` the input values. Inputs listed as *static* arrive as NumPy arrays
(plan-time constants: shapes, axes, permutations, paddings); inputs listed as *refs*
arrive as the variable's key. The NumPy kernels stay the reference: every lowering
gives their values within float tolerance (``tests/backends/test_xla_ops.py``;
``GRADFLOW_XLA=1`` runs any suite compiled).

Ops that only select or scatter elements with static shapes (slices, strided slices
and their gradients, tiles, pads, reversals) lower through their own NumPy kernel: run
once on an array of element positions, it gives the flat index map the compiled code
gathers with, so those lowerings agree with the kernels by construction.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework.function import FuncGraph
from gradflow.framework.graph import Operation, Tensor
from gradflow.runtime.optimizer import Constant

__all__ = ["Lowering", "LOWERINGS", "lowering_of", "register", "is_variable_ref",
           "ref_tensor"]


class Lowering:
    """How one op type compiles: the function, and which inputs are static or refs."""

    __slots__ = ("fn", "static", "refs", "writes", "reads", "accepts", "random", "checks",
                 "variants", "forwards_refs")

    def __init__(self, fn: Callable, static: tuple = (), refs: tuple = (), writes: bool = False,
                 reads: bool = True, accepts: Optional[Callable] = None, random: bool = False,
                 checks: bool = False, variants: bool = False, forwards_refs: bool = False):
        self.fn = fn
        self.random = random  # draws from a key of its own (L.key(op))
        self.checks = checks  # keeps a kernel's run-time check (L.check)
        # takes or gives variant values (TensorArrays, loop histories): compiled values
        # that never cross a cluster's boundary
        self.variants = variants
        # passes variables on to the functions it runs, which read them (control flow)
        self.forwards_refs = forwards_refs
        self.accepts = accepts  # op -> whether these attrs lower (None: all do)
        self.static = frozenset(static)
        self.refs = frozenset(refs)
        self.writes = writes  # the op writes its first ref
        self.reads = reads    # the op reads its refs' current values

    def refs_of(self, inputs: Sequence) -> frozenset:
        """The positions of ``inputs`` (a node's) that arrive as variable keys."""
        if not self.forwards_refs:
            return self.refs
        return frozenset(p for p, v in enumerate(inputs)
                         if (t := ref_tensor(v)) is not None and is_variable_ref(t))


LOWERINGS: dict[str, Lowering] = {}


def lowering_of(op_type: str) -> Optional[Lowering]:
    return LOWERINGS.get(op_type)


def ref_tensor(value) -> Optional[Tensor]:
    """The tensor a program value stands for where a variable reference may be: the
    tensor itself, or the VariableV2 output whose reference the plan made once, at plan
    time (a Constant); None for other constants."""
    if isinstance(value, Constant):
        return value.tensor if value.tensor._op._type == "VariableV2" else None
    return value if isinstance(value, Tensor) else None


def is_variable_ref(t: Tensor) -> bool:
    """Whether ``t`` names a variable: a VariableV2's output, or a function's argument
    that an op inside reads as a variable (a variable passed to a loop or branch)."""
    if t._op._type == "VariableV2":
        return True
    if t._op._type != "Placeholder" or not isinstance(t._op._graph, FuncGraph):
        return False
    for consumer in t.consumers():
        lowering = lowering_of(consumer._type)
        if lowering is None:
            continue
        positions = [p for p, v in enumerate(consumer._inputs) if v is t]
        if any(p in lowering.refs for p in positions):
            return True
        if lowering.forwards_refs and any(
                is_variable_ref(inner) for inner in _forwarded(consumer, positions)):
            return True
    return False


def _forwarded(op: Operation, positions: list) -> list:
    """The function arguments that ``op`` (a control-flow op) passes its inputs at
    ``positions`` on as."""
    attrs = op._attrs
    if op._type == "If":
        return [attrs[b].inputs[p - 1] for p in positions if p
                for b in ("then_branch", "else_branch")]
    if op._type == "While":
        return [attrs[f].inputs[p] for p in positions for f in ("cond", "body")]
    return [attrs["f"].inputs[p] for p in positions]


def register(op_types, static: tuple = (), refs: tuple = (), writes: bool = False,
             reads: bool = True, accepts: Optional[Callable] = None, random: bool = False,
             checks: bool = False, variants: bool = False,
             forwards_refs: bool = False) -> Callable:
    """Decorator: ``fn`` lowers ``op_types`` (one name or several)."""
    def decorate(fn):
        for op_type in (op_types,) if isinstance(op_types, str) else op_types:
            LOWERINGS[op_type] = Lowering(fn, static, refs, writes, reads, accepts, random,
                                          checks, variants, forwards_refs)
        return fn
    return decorate


# ------------------------------------------------------------------ elementwise
_UNARY = {
    "Neg": "negative", "Abs": "abs", "Exp": "exp", "Log": "log", "Log1p": "log1p",
    "Expm1": "expm1", "Sqrt": "sqrt", "Square": "square", "Sin": "sin", "Cos": "cos",
    "Tan": "tan", "Tanh": "tanh", "Sign": "sign", "Floor": "floor", "Ceil": "ceil",
    "Reciprocal": "reciprocal", "Inv": "reciprocal", "LogicalNot": "logical_not",
    "IsNan": "isnan", "IsInf": "isinf", "IsFinite": "isfinite", "Asin": "arcsin",
    "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Round": "round",
    "Rint": "rint",
}
_BINARY = {
    "Add": "add", "AddV2": "add", "Sub": "subtract", "Mul": "multiply",
    "RealDiv": "true_divide", "Maximum": "maximum", "Minimum": "minimum", "Pow": "power",
    "SquaredDifference": None, "FloorMod": "mod", "Atan2": "arctan2",
    "Equal": "equal", "NotEqual": "not_equal", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "LogicalAnd": "logical_and",
    "LogicalOr": "logical_or",
}


def _unary(name: str) -> Callable:
    return lambda L, op, x: getattr(L.jnp, name)(x)


def _binary(name: str) -> Callable:
    return lambda L, op, x, y: getattr(L.jnp, name)(x, y)


for _type, _name in _UNARY.items():
    register(_type)(_unary(_name))
for _type, _name in _BINARY.items():
    if _name is not None:
        register(_type)(_binary(_name))


@register("SquaredDifference")
def _squared_difference(L, op, x, y):
    return L.jnp.square(x - y)


@register("FloorDiv")
def _floor_div(L, op, x, y):
    return L.jnp.floor_divide(x, y)


@register("Div")
def _div(L, op, x, y):
    if L.jnp.issubdtype(x.dtype, L.jnp.integer):
        return L.lax.div(x, y)  # TF's Div truncates integers toward zero
    return x / y


@register("Rsqrt")
def _rsqrt(L, op, x):
    return L.lax.rsqrt(x)


@register("Sigmoid")
def _sigmoid(L, op, x):
    return L.jax.nn.sigmoid(x)


@register("Cast")
def _cast(L, op, x):
    return x.astype(op._attrs["DstT"].as_numpy_dtype)


@register(("Identity", "StopGradient", "PreventGradient", "Snapshot"))
def _identity(L, op, x):
    return x


@register(("Select", "SelectV2"))
def _select(L, op, condition, x, y):
    if op._type == "Select" and condition.ndim == 1 and x.ndim > 1:
        condition = condition.reshape(condition.shape + (1,) * (x.ndim - 1))
    return L.jnp.where(condition, x, y)


@register("ClipByValue")
def _clip(L, op, x, low, high):
    return L.jnp.minimum(L.jnp.maximum(x, low), high)


@register("AddN")
def _add_n(L, op, *xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


@register("ZerosLike")
def _zeros_like(L, op, x):
    return L.jnp.zeros_like(x)


@register("OnesLike")
def _ones_like(L, op, x):
    return L.jnp.ones_like(x)


@register("Fill", static=(0,))
def _fill(L, op, dims, value):
    return L.jnp.full(tuple(int(d) for d in dims), value)


# --------------------------------------------------------------------- gradients
@register("ReluGrad")
def _relu_grad(L, op, dy, x):
    return L.jnp.where(x > 0, dy, L.jnp.zeros_like(dy))


@register("Relu6Grad")
def _relu6_grad(L, op, dy, x):
    return L.jnp.where((x > 0) & (x < 6), dy, L.jnp.zeros_like(dy))


@register("LeakyReluGrad")
def _leaky_relu_grad(L, op, dy, x):
    return L.jnp.where(x > 0, dy, dy * L.jnp.asarray(op._attrs["alpha"], dy.dtype))


@register("EluGrad")
def _elu_grad(L, op, dy, y):
    return L.jnp.where(y > 0, dy, dy * (y + 1))


@register("SeluGrad")
def _selu_grad(L, op, dy, y):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return L.jnp.where(y > 0, dy * scale, dy * (y + scale * alpha))


@register("SoftplusGrad")
def _softplus_grad(L, op, dy, x):
    return dy * L.jax.nn.sigmoid(x)


@register("SigmoidGrad")
def _sigmoid_grad(L, op, y, dy):
    return dy * y * (1 - y)


@register("TanhGrad")
def _tanh_grad(L, op, y, dy):
    return dy * (1 - y * y)


@register("RsqrtGrad")
def _rsqrt_grad(L, op, y, dy):
    return dy * y * y * y * L.jnp.asarray(-0.5, y.dtype)


@register("SqrtGrad")
def _sqrt_grad(L, op, y, dy):
    return dy * L.jnp.asarray(0.5, y.dtype) / y


@register("ReciprocalGrad")
def _reciprocal_grad(L, op, y, dy):
    return -dy * y * y


# -------------------------------------------------------------------- reductions
def _axes(axis, ndim: int) -> tuple:
    return tuple(sorted({int(a) % ndim for a in np.reshape(axis, -1)})) if ndim else ()


def _reduction(name: str) -> Callable:
    def lower(L, op, x, axis):
        return getattr(L.jnp, name)(x, axis=_axes(axis, x.ndim),
                                    keepdims=bool(op._attrs.get("keep_dims", False)))
    return lower


for _type, _name in {"Sum": "sum", "Mean": "mean", "Prod": "prod", "All": "all",
                     "Any": "any"}.items():
    register(_type, static=(1,))(_reduction(_name))


@register(("Max", "Min"), static=(1,))
def _extreme(L, op, x, axis):
    """Max and Min; over no elements they give the dtype's lowest (highest) value, as
    the kernels do."""
    axes = _axes(axis, x.ndim)
    keep = bool(op._attrs.get("keep_dims", False))
    fn = L.jnp.max if op._type == "Max" else L.jnp.min
    if all(x.shape[a] for a in axes):
        return fn(x, axis=axes, keepdims=keep)
    floating = L.jnp.issubdtype(x.dtype, L.jnp.floating)
    limits = (-np.inf, np.inf) if floating else (np.iinfo(x.dtype).min, np.iinfo(x.dtype).max)
    return fn(x, axis=axes, keepdims=keep, initial=limits[0 if op._type == "Max" else 1])


@register(("ArgMax", "ArgMin"), static=(1,))
def _arg_reduce(L, op, x, axis):
    fn = L.jnp.argmax if op._type == "ArgMax" else L.jnp.argmin
    return fn(x, axis=int(axis))


# ---------------------------------------------------------------------- products
@register("MatMul")
def _matmul(L, op, a, b):
    if op._attrs.get("transpose_a"):
        a = a.T
    if op._attrs.get("transpose_b"):
        b = b.T
    return L.jnp.matmul(a, b)


@register(("BatchMatMul", "BatchMatMulV2"))
def _batch_matmul(L, op, a, b):
    if op._attrs.get("adj_x"):
        a = L.jnp.conj(L.jnp.swapaxes(a, -1, -2))
    if op._attrs.get("adj_y"):
        b = L.jnp.conj(L.jnp.swapaxes(b, -1, -2))
    return L.jnp.matmul(a, b)


@register("Einsum")
def _einsum(L, op, *xs):
    return L.jnp.einsum(op._attrs["equation"], *xs)


# ------------------------------------------------------------------------ shapes
@register("Reshape", static=(1,))
def _reshape(L, op, x, shape):
    return L.jnp.reshape(x, tuple(op._outputs[0].shape.as_list()))


@register("ExpandDims", static=(1,))
def _expand_dims(L, op, x, axis):
    return L.jnp.reshape(x, tuple(op._outputs[0].shape.as_list()))


@register("Squeeze")
def _squeeze(L, op, x):
    return L.jnp.reshape(x, tuple(op._outputs[0].shape.as_list()))


@register("BroadcastTo", static=(1,))
def _broadcast_to(L, op, x, shape):
    return L.jnp.broadcast_to(x, tuple(op._outputs[0].shape.as_list()))


@register("Transpose", static=(1,))
def _transpose(L, op, x, perm):
    return L.jnp.transpose(x, tuple(int(p) for p in perm))


@register("ConcatV2", static=(-1,))
def _concat(L, op, *args):
    *xs, axis = args
    return L.jnp.concatenate(xs, axis=int(axis))


@register("Pack")
def _pack(L, op, *xs):
    return L.jnp.stack(xs, axis=op._attrs["axis"])


@register("Unpack")
def _unpack(L, op, x):
    axis = op._attrs["axis"] % x.ndim
    return tuple(L.jnp.squeeze(part, axis) for part in
                 L.jnp.split(x, x.shape[axis], axis=axis))


@register("GatherV2", static=(2,), accepts=lambda op: not op._attrs.get("batch_dims", 0),
          checks=True)
def _gather(L, op, params, indices, axis):
    L.check_range(op, indices, params.shape[int(axis)], (params, indices, axis))
    return L.jnp.take(params, indices, axis=int(axis), mode="clip")


@register("OneHot", static=(1,))
def _one_hot(L, op, indices, depth, on_value, off_value):
    axis = op._attrs.get("axis", -1)
    hot = indices[..., None] == L.jnp.arange(int(depth), dtype=indices.dtype)
    if axis != -1:
        hot = L.jnp.moveaxis(hot, -1, axis)
    return L.jnp.where(hot, on_value, off_value)


def _index_map(op: Operation, static_args: list, position: int, shape: tuple) -> np.ndarray:
    """The op's NumPy kernel run on element positions (1-based; 0 for filled elements)."""
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    positions = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)
    args = list(static_args)
    args[position] = positions
    return np.asarray(op._op_def.kernel(*args, **attrs)).astype(np.int64)


def _selection(position: int) -> Callable:
    """Lowers an op whose output picks elements of input ``position`` (others static)."""
    def lower(L, op, *args):
        x = args[position]
        index = _index_map(op, list(args), position, x.shape)
        flat = L.jnp.concatenate([L.jnp.zeros((1,), x.dtype), L.jnp.reshape(x, (-1,))])
        return flat[index]
    return lower


for _type, _position, _statics in (
        ("Slice", 0, (1, 2)), ("StridedSlice", 0, (1, 2, 3)), ("Tile", 0, (1,)),
        ("Pad", 0, (1,)), ("MirrorPad", 0, (1,)), ("ReverseV2", 0, (1,)),
        ("StridedSliceGrad", 4, (0, 1, 2, 3))):
    register(_type, static=_statics)(_selection(_position))


# ---------------------------------------------------------------------------- nn
@register("Relu")
def _relu(L, op, x):
    return L.jnp.maximum(x, L.jnp.zeros_like(x))


@register("Relu6")
def _relu6(L, op, x):
    return L.jnp.clip(x, 0, 6).astype(x.dtype)


@register("LeakyRelu")
def _leaky_relu(L, op, x):
    return L.jnp.where(x > 0, x, x * L.jnp.asarray(op._attrs["alpha"], x.dtype))


@register("Elu")
def _elu(L, op, x):
    return L.jnp.where(x > 0, x, L.jnp.expm1(x))


@register("Selu")
def _selu(L, op, x):
    return L.jax.nn.selu(x)


@register("Softplus")
def _softplus(L, op, x):
    return L.jnp.logaddexp(x, L.jnp.zeros_like(x))


@register("Softsign")
def _softsign(L, op, x):
    return x / (1 + L.jnp.abs(x))


@register("Softmax")
def _softmax(L, op, x):
    return L.jax.nn.softmax(x, axis=op._attrs.get("axis", -1))


@register("LogSoftmax")
def _log_softmax(L, op, x):
    return L.jax.nn.log_softmax(x, axis=op._attrs.get("axis", -1))


@register("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(L, op, logits, labels):
    log_p = L.jax.nn.log_softmax(logits, axis=-1)
    mass = L.jnp.sum(labels, axis=-1, keepdims=True)  # the exact derivative, as the kernel
    return -L.jnp.sum(labels * log_p, axis=-1), L.jnp.exp(log_p) * mass - labels


@register("SparseSoftmaxCrossEntropyWithLogits", checks=True)
def _sparse_softmax_xent(L, op, logits, labels):
    L.check_range(op, labels, logits.shape[-1], (logits, labels))
    log_p = L.jax.nn.log_softmax(logits, axis=-1)
    hot = labels[..., None] == L.jnp.arange(logits.shape[-1], dtype=labels.dtype)
    loss = -L.jnp.sum(L.jnp.where(hot, log_p, L.jnp.zeros_like(log_p)), axis=-1)
    return loss, L.jnp.exp(log_p) - hot.astype(logits.dtype)


def _channel_axis(op: Operation, ndim: int) -> int:
    return 1 if op._attrs.get("data_format", "NHWC").startswith("NC") else ndim - 1


@register("BiasAdd")
def _bias_add(L, op, x, bias):
    axis = _channel_axis(op, x.ndim)
    return x + L.jnp.reshape(bias, (-1,) + (1,) * (x.ndim - 1 - axis))


@register("BiasAddGrad")
def _bias_add_grad(L, op, dy):
    axis = _channel_axis(op, dy.ndim)
    return L.jnp.sum(dy, axis=tuple(a for a in range(dy.ndim) if a != axis))


def _conv_dims(op: Operation) -> tuple:
    layout = op._attrs.get("data_format", "NHWC")
    return (layout, "HWIO", layout)


def _conv_padding(op: Operation):
    padding = op._attrs["padding"]
    if padding == "EXPLICIT":
        pads = op._attrs["explicit_paddings"]
        spatial = (1, 2) if op._attrs.get("data_format", "NHWC") == "NHWC" else (2, 3)
        return [(pads[2 * d], pads[2 * d + 1]) for d in spatial]
    return padding


def _spatial(op: Operation, name: str) -> tuple:
    values = op._attrs.get(name) or [1, 1, 1, 1]
    return tuple(values[1:3]) if op._attrs.get("data_format", "NHWC") == "NHWC" \
        else tuple(values[2:4])


def _conv(L, op, x, w):
    return L.lax.conv_general_dilated(
        x, w, _spatial(op, "strides"), _conv_padding(op), rhs_dilation=_spatial(op, "dilations"),
        dimension_numbers=_conv_dims(op))


register("Conv2D")(_conv)


@register("Conv2DBackpropInput", static=(0,))
def _conv_backprop_input(L, op, input_sizes, w, dy):
    def forward(x):
        return _conv(L, op, x, w)
    zeros = L.jnp.zeros(tuple(int(s) for s in input_sizes), dy.dtype)
    return L.jax.vjp(forward, zeros)[1](dy)[0]


@register("Conv2DBackpropFilter", static=(1,))
def _conv_backprop_filter(L, op, x, filter_sizes, dy):
    def forward(w):
        return _conv(L, op, x, w)
    zeros = L.jnp.zeros(tuple(int(s) for s in filter_sizes), dy.dtype)
    return L.jax.vjp(forward, zeros)[1](dy)[0]


def _pool_window(op: Operation, name: str) -> tuple:
    return tuple(op._attrs[name])


def _max_pool(L, op, x):
    return L.lax.reduce_window(x, -np.inf, L.lax.max,
                               _pool_window(op, "ksize"), _pool_window(op, "strides"),
                               op._attrs["padding"])


def _avg_pool(L, op, x):
    window, strides, padding = _pool_window(op, "ksize"), _pool_window(op, "strides"), \
        op._attrs["padding"]
    total = L.lax.reduce_window(x, 0.0, L.lax.add, window, strides, padding)
    # SAME windows average over the elements inside the input only, as TF does
    count = L.lax.reduce_window(L.jnp.ones(x.shape, x.dtype), 0.0, L.lax.add, window,
                                strides, padding)
    return total / count


register("MaxPool")(_max_pool)
register("AvgPool")(_avg_pool)


@register("MaxPoolGrad")
def _max_pool_grad(L, op, x, y, dy):
    # the gradient flows to the first maximum of each window, as TF's kernel does
    return L.jax.vjp(lambda v: _max_pool(L, op, v), x)[1](dy)[0]


@register("AvgPoolGrad", static=(0,))
def _avg_pool_grad(L, op, shape, dy):
    zeros = L.jnp.zeros(tuple(int(s) for s in shape), dy.dtype)
    return L.jax.vjp(lambda v: _avg_pool(L, op, v), zeros)[1](dy)[0]


@register("L2Loss")
def _l2_loss(L, op, x):
    return L.jnp.sum(x * x) / 2


# --------------------------------------------------------------------- variables
@register("ReadVariableOp", refs=(0,))
def _read(L, op, key):
    return L.read(key)


@register("Assign", refs=(0,), writes=True, reads=False)
def _assign(L, op, key, value):
    return L.write(key, value)


@register(("AssignAdd", "AssignSub"), refs=(0,), writes=True)
def _assign_update(L, op, key, delta):
    current = L.read(key)
    return L.write(key, current + delta if op._type == "AssignAdd" else current - delta)


# ------------------------------------------------------------------------ random
def _random_shape(shape) -> tuple:
    return tuple(int(s) for s in np.reshape(shape, -1))


@register("RandomUniform", static=(0,), random=True)
def _random_uniform(L, op, shape):
    dtype = op._attrs["dtype"].as_numpy_dtype
    return L.jax.random.uniform(L.key(op), _random_shape(shape), dtype)


@register("RandomStandardNormal", static=(0,), random=True)
def _random_normal(L, op, shape):
    dtype = op._attrs["dtype"].as_numpy_dtype
    return L.jax.random.normal(L.key(op), _random_shape(shape), dtype)


@register("TruncatedNormal", static=(0,), random=True)
def _truncated_normal(L, op, shape):
    dtype = op._attrs["dtype"].as_numpy_dtype
    return L.jax.random.truncated_normal(L.key(op), -2.0, 2.0, _random_shape(shape), dtype)
