"""Plan-time graph optimizer: turns the ops a plan needs into fewer, cheaper steps.

It rewrites a *program* (the list of nodes a plan will run), never the graph. One
forward sweep over the ops in creation order (every input is seen before its
consumers) applies, to each pure op (neither stateful nor needing the run context):

- identity elimination: Identity and StopGradient, and Reshape, ExpandDims, Squeeze
  and BroadcastTo whose output has the input's fully known static shape, become
  aliases of their input; so does multiplying a real or integer tensor by a constant
  of ones that does not broadcast it (``x * 1`` is exactly ``x`` there);
- reshape chains: a Reshape of a Reshape reads the first one's input;
- ReluGrad reads the Relu's output instead of its input when the plan computes both
  (``relu(x) > 0`` exactly where ``x > 0``, NaN and -0.0 included), so the input can
  die at the Relu, which may then overwrite it;
- constant folding: an op whose inputs are all known is run once, now (outputs of at
  most ``FOLD_LIMIT_ELEMENTS`` elements; a kernel that raises is left to raise at run
  time);
- common-subexpression elimination: an op equal to an earlier one (type, inputs,
  kernel attrs, and the variable writes the graph orders it after) reuses its outputs;
- variable references: a VariableV2 op's value (a reference naming its variable) is
  made once, at plan time, instead of by a step of every run.

A backward sweep then drops the nodes nothing needs: not a fetch, a target, a stateful
op, an op another required op depends on through a control edge, nor an input of a
node that stays. Last, optimizer updates are grouped (``fuse``): in a stretch of
consecutive dense update ops (``Apply<rule>``) on distinct variables, the small ones
of one rule with the same hyperparameter inputs become one :class:`FusedNode` that
updates all their variables with one pass of the rule over flat buffers
(:class:`UpdateGroup`; the rules register through ``register_update_group``).
Other stateful ops are never folded, merged or dropped, and the nodes keep the ops'
creation order (updates of distinct variables commute), so side effects happen in the
order they always did. Results are bit-identical with the optimizer on or off.
"""
from __future__ import annotations

from typing import Optional, Sequence

import operator
import sys
import threading
from typing import Callable

import numpy as np

from gradflow.framework.graph import Operation, Tensor
from gradflow.runtime import fast_kernels
from gradflow.runtime.clusters import ClusterNode

__all__ = ["Constant", "Node", "Program", "build_program", "FOLD_LIMIT_ELEMENTS",
           "FusedNode", "FusedMemberError", "UpdateGroup", "register_update_group",
           "GROUP_MAX_ELEMENTS"]

FOLD_LIMIT_ELEMENTS = 1 << 17  # at most 1 MiB of float64 per folded output
_CSE_CONSTANT_BYTES = 256      # constants up to this size are compared by value
_ALIAS_TYPES = {"Identity", "StopGradient"}
_SHAPE_ONLY_TYPES = {"Reshape", "ExpandDims", "Squeeze", "BroadcastTo"}
_ONES_IDENTITY_KINDS = "fiu"  # x * 1 == x bit for bit: real floats and integers only


class Constant:
    """A value known at plan time: a Const op's, or a folded op's output."""

    __slots__ = ("value", "tensor")

    def __init__(self, value, tensor: Tensor):
        self.value = value
        self.tensor = tensor


class Node:
    """One step of a program: ``op``'s kernel applied to ``inputs``.

    ``inputs`` are values: a Tensor (a fed tensor, or an output of an earlier node) or
    a Constant. ``outputs`` lists the op's output tensors, None for a fed one (the op
    still runs but its result for that output is dropped). ``fast``: the kernel of a
    node fused from several ops (a ``fast_kernels.FastKernel``; ``op`` is the one whose
    name a failure carries, ``outputs`` the tensors it computes), None for one op.
    """

    __slots__ = ("op", "inputs", "outputs", "fast")

    def __init__(self, op: Operation, inputs: list, outputs: list, fast=None):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.fast = fast


class Program:
    """The optimized nodes of a plan, and where each fetched tensor's value comes from."""

    def __init__(self, nodes: list, fetches: list):
        self.nodes = nodes
        self.fetches = fetches


def build_program(ops: Sequence[Operation], fetch_tensors: Sequence[Tensor],
                  feed_tensors: Sequence[Tensor], target_ops: Sequence[Operation],
                  optimize: bool = True, fuse: bool = True,
                  ordered_after: Optional[dict] = None) -> Program:
    """The program computing ``fetch_tensors`` from ``ops`` (creation order, all needed);
    ``fuse`` groups optimizer updates (off when a cluster compiler takes the program).
    ``ordered_after`` maps an op to the variable writes the graph orders it after (its
    reads may see them, so it is never merged with an op after other writes)."""
    builder = _Builder(set(feed_tensors), optimize, ordered_after or {})
    for op in ops:
        builder.add(op)
    fetches = [builder.value(t) for t in fetch_tensors]
    nodes = builder.nodes
    if optimize:
        nodes = _prune(nodes, fetches, ops, set(target_ops))
        if fuse:
            nodes = _group_updates(_fuse_pointwise(nodes, fetches))
    return Program(nodes, fetches)


class _Builder:
    """The forward sweep: each op becomes an alias, constants, a reused node or a node."""

    def __init__(self, fed: set, optimize: bool, ordered_after: dict):
        self.fed = fed
        self.optimize = optimize
        self.ordered_after = ordered_after
        self.nodes: list[Node] = []
        self.values: dict = {}  # tensor -> its value, for tensors not computed by own node
        self.seen: dict = {}    # CSE key -> earlier node
        self.reshaped: dict = {}  # a Reshape node's output -> the value it reshapes
        self.relu_of: dict = {}   # a value -> the output of a Relu node reading it

    def value(self, t: Tensor):
        return self.values.get(t, t)

    def add(self, op: Operation) -> None:
        if op._type == "VariableV2" and self.optimize and op._outputs[0] not in self.fed:
            # its value names the variable and nothing else: known at plan time
            attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
            self.values[op._outputs[0]] = Constant(op._op_def.kernel(None, **attrs),
                                                   op._outputs[0])
            return
        inputs = [self.value(t) for t in op._inputs]
        if not self.optimize or not _is_pure(op) or any(t in self.fed for t in op._outputs):
            self._append(op, inputs)
            return
        alias = _alias_of(op, inputs)
        if alias is not None:
            self.values[op._outputs[0]] = alias
            return
        inputs = self._rewired(op, inputs)
        if all(isinstance(v, Constant) for v in inputs) and self._fold(op, inputs):
            return
        key = _cse_key(op, inputs, self.ordered_after.get(op))
        earlier = self.seen.get(key) if key is not None else None
        if earlier is not None:
            for t, same in zip(op._outputs, earlier.outputs):
                self.values[t] = self.value(same)
            return
        self._remember(op, self._append(op, inputs), key)

    def _rewired(self, op: Operation, inputs: list) -> list:
        """Inputs read from earlier in a chain: see the reshape and ReLU rules above."""
        if op._type == "Reshape":
            return self._skip_reshape_chain(inputs)
        if op._type == "ReluGrad" and inputs[1] in self.relu_of:
            return [inputs[0], self.relu_of[inputs[1]]]
        return inputs

    def _remember(self, op: Operation, node: Node, key: Optional[tuple]) -> None:
        """What later ops may reuse or rewire to: the node itself, a reshape, a ReLU."""
        if key is not None:
            self.seen[key] = node
        if op._type == "Reshape" and _static_dims(op._outputs[0]) is not None:
            self.reshaped[op._outputs[0]] = node.inputs[0]
        if op._type == "Relu" and not isinstance(node.inputs[0], Constant):
            self.relu_of.setdefault(node.inputs[0], op._outputs[0])

    def _append(self, op: Operation, inputs: list) -> Node:
        node = Node(op, inputs, [None if t in self.fed else t for t in op._outputs])
        self.nodes.append(node)
        return node

    def _fold(self, op: Operation, inputs: list) -> bool:
        """Runs ``op`` now if its outputs are small arrays; False leaves it to run time."""
        if not all(_foldable_size(t) for t in op._outputs):
            return False
        attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
        try:
            with np.errstate(all="ignore"):
                result = op._op_def.kernel(*(v.value for v in inputs), **attrs)
        except Exception:  # noqa: BLE001 - the run will raise it, naming the op
            return False
        results = (result,) if len(op._outputs) == 1 else tuple(result)
        if len(results) != len(op._outputs) or \
                not all(isinstance(r, (np.ndarray, np.generic)) for r in results):
            return False
        for t, r in zip(op._outputs, results):
            self.values[t] = Constant(r, t)
        return True

    def _skip_reshape_chain(self, inputs: list) -> list:
        """Reshape(Reshape(x, a), b) reads x: the shape in between does not matter.

        Only when the inner result's static shape is fully known (and x's: a fed value
        has the static shape exactly), so the inner reshape that no longer runs could
        not have failed.
        """
        if inputs[0] not in self.reshaped:
            return inputs
        source = self.reshaped[inputs[0]]
        if isinstance(source, Constant) or _static_dims(source) is None:
            return inputs
        return [source, inputs[1]]


def _is_pure(op: Operation) -> bool:
    op_def = op._op_def
    return not op_def.stateful and not op_def.needs_context and op_def.kernel is not None


def _foldable_size(t: Tensor) -> bool:
    count = t.shape.num_elements()
    return count is not None and count <= FOLD_LIMIT_ELEMENTS


def _static_dims(t: Tensor) -> Optional[tuple]:
    dims = t.shape.as_tuple()
    return dims if dims is not None and None not in dims else None


def _same_static_shape(a: Tensor, b: Tensor) -> bool:
    """Both of one fully known shape of rank 1 or more (0-d results may be NumPy scalars
    or 0-d arrays depending on the kernel, so 0-d values are never aliased)."""
    dims = _static_dims(a)
    return bool(dims) and dims == _static_dims(b)


def _source_tensor(value) -> Tensor:
    return value.tensor if isinstance(value, Constant) else value


def _alias_of(op: Operation, inputs: list):
    """The value ``op``'s single output equals bit for bit, if it is one of its inputs."""
    if op._type in _ALIAS_TYPES:
        return inputs[0]
    if op._type in _SHAPE_ONLY_TYPES and op._outputs[0].dtype is op._inputs[0].dtype \
            and _same_static_shape(op._outputs[0], op._inputs[0]):
        return inputs[0]
    if op._type == "Mul":
        return _times_ones_alias(op, inputs)
    return None


def _times_ones_alias(op: Operation, inputs: list):
    out = op._outputs[0]
    if np.dtype(out.dtype.as_numpy_dtype).kind not in _ONES_IDENTITY_KINDS:
        return None
    for index, other in ((0, 1), (1, 0)):
        ones = inputs[other]
        if isinstance(ones, Constant) and _same_static_shape(out, op._inputs[index]) \
                and np.size(ones.value) and bool(np.all(ones.value == 1)):
            return inputs[index]
    return None


def _cse_key(op: Operation, inputs: list, writes_before=None) -> Optional[tuple]:
    """What makes two pure ops compute the same thing, or None if it cannot be hashed:
    also the variable writes ordered before the op (``writes_before``), which its
    variable reads see."""
    attrs = []
    for name in sorted(op._attrs):
        if not name.startswith("_"):
            attrs.append((name, _frozen(op._attrs[name])))
    key = (op._type, tuple(_input_key(v) for v in inputs), tuple(attrs), writes_before)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _input_key(value):
    if isinstance(value, Constant):
        array = value.value
        if getattr(array, "nbytes", _CSE_CONSTANT_BYTES + 1) <= _CSE_CONSTANT_BYTES \
                and array.dtype.kind != "O":
            return ("const", array.dtype.str, array.shape, array.tobytes())
        return ("const-id", id(value))
    return value


def _frozen(value):
    """A hashable stand-in for an attr value (lists become tuples, arrays their bytes)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return ("array-id", id(value))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return ("list", tuple(_frozen_leaf(v) for v in value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_frozen_leaf(v) for v in value))
    return value


def _frozen_leaf(value):
    return ("list-id", id(value)) if isinstance(value, (list, dict, np.ndarray)) else value


def _prune(nodes: list, fetches: list, ops: Sequence[Operation], targets: set) -> list:
    """The nodes something needs, in their order (one backward sweep)."""
    control_inputs = {c for op in ops for c in op._control_inputs}
    needed = {_source_tensor(v) for v in fetches}
    kept = []
    for node in reversed(nodes):
        op = node.op
        keep = (op._op_def.stateful or op._op_def.needs_context or op in targets
                or op in control_inputs or (not op._outputs and op._type != "NoOp")
                or any(t is not None and t in needed for t in node.outputs))
        if keep and op._type != "NoOp":
            kept.append(node)
            needed.update(v for v in node.inputs if not isinstance(v, Constant))
    kept.reverse()
    return kept


# ------------------------------------------------------------- pointwise fusion
def _fuse_pointwise(nodes: list, fetches: list) -> list:
    """Fuses, where the intermediate has no other reader and is not fetched:
    ``BiasAdd`` + an activation (``fast_kernels.ACTIVATIONS``) into one node at the
    activation, a sparse softmax cross entropy + the ``Mul`` scaling its gradient
    into one node at the cross entropy (when the scale is known by then), and a
    ``SplitV`` + the ``Sigmoid`` of each piece that has one (through an ``AddV2`` of a
    constant for an LSTM's forget gate) into one node at the split."""
    readers: dict = {}
    reader_of: dict = {}  # a value -> a node reading it (the only one, where it has one)
    for node in nodes:
        for v in node.inputs:
            if not isinstance(v, Constant):
                readers[v] = readers.get(v, 0) + 1
                reader_of[v] = node
    for v in fetches:
        readers[v] = readers.get(v, 0) + 2  # never fused away
    producer = {t: node for node in nodes for t in node.outputs if t is not None}
    position = {id(node): index for index, node in enumerate(nodes)}
    replaced: dict = {}  # id(node) -> its fused node, or None where it is dropped
    for node in nodes:
        if type(node) is not Node or node.fast is not None:
            continue
        if node.op._type in fast_kernels.ACTIVATIONS:
            _fuse_bias_activation(node, producer, readers, replaced)
        elif node.op._type == "Mul":
            _fuse_xent_scale(node, producer, readers, replaced, position)
        elif node.op._type == "SplitV":
            _fuse_sigmoid_gates(node, reader_of, readers, replaced)
    if not replaced:
        return nodes
    result = []
    for node in nodes:
        fused = replaced.get(id(node), node)
        if fused is not None:
            result.append(fused)
    return result


def _single_reader(value, producer: dict, readers: dict, replaced: dict, op_type: str):
    """The unfused plain node of ``op_type`` producing ``value``, if only one reader
    reads ``value``."""
    source = producer.get(value) if not isinstance(value, Constant) else None
    if source is None or type(source) is not Node or source.fast is not None or \
            source.op._type != op_type or id(source) in replaced or readers.get(value) != 1:
        return None
    return source


def _fuse_bias_activation(node: Node, producer: dict, readers: dict, replaced: dict) -> None:
    bias_add = _single_reader(node.inputs[0], producer, readers, replaced, "BiasAdd")
    if bias_add is None or bias_add.outputs[0] is None or node.outputs[0] is None:
        return
    fast = fast_kernels.bias_activation(bias_add.op, node.op)
    if fast is not None:
        replaced[id(bias_add)] = None
        replaced[id(node)] = Node(node.op, list(bias_add.inputs), list(node.outputs), fast)


def _only_reader(value, reader_of: dict, readers: dict, replaced: dict, op_type: str):
    """The unfused plain node of ``op_type`` that is the one reader of ``value``."""
    node = reader_of.get(value)
    if node is None or readers.get(value) != 1 or type(node) is not Node or \
            node.fast is not None or node.op._type != op_type or id(node) in replaced:
        return None
    return node


def _fuse_sigmoid_gates(split: Node, reader_of: dict, readers: dict, replaced: dict) -> None:
    """The split's pieces whose one reader is a Sigmoid, or an AddV2 of a one-element
    constant whose one reader is a Sigmoid, become outputs of one node with the split
    (``fast_kernels.sigmoid_gates``); its other pieces stay outputs of that node. The
    sigmoids move up to the split: they read nothing else that is computed. Only a
    split that is its value's one reader (a computed value, not a constant)."""
    value = split.inputs[0]
    if len(split.inputs) != 3 or not all(isinstance(v, Constant) for v in split.inputs[1:]) \
            or any(t is None for t in split.outputs) or readers.get(value) != 1:
        return  # (the pieces are views of the value: nothing else may write into it)
    members, dropped, constants, outputs = [], [], [], []
    for piece in split.outputs:
        sigmoid = _only_reader(piece, reader_of, readers, replaced, "Sigmoid")
        add = constant = None
        if sigmoid is None:
            add = _only_reader(piece, reader_of, readers, replaced, "AddV2")
            if add is not None and add.outputs[0] is not None:
                constant = add.inputs[1 - add.inputs.index(piece)]
                sigmoid = _only_reader(add.outputs[0], reader_of, readers, replaced,
                                       "Sigmoid")
            if not isinstance(constant, Constant) or np.size(constant.value) != 1:
                sigmoid = None
        if sigmoid is None or sigmoid.outputs[0] is None:
            members.append(None)
            outputs.append(piece)
            continue
        members.append((sigmoid.op, None if add is None else add.op,
                        add is not None and add.inputs[0] is constant))
        dropped += [sigmoid] if add is None else [add, sigmoid]
        constants += [] if add is None else [constant]
        outputs.append(sigmoid.outputs[0])
    if sum(member is not None for member in members) < 2:
        return
    fast = fast_kernels.sigmoid_gates(split.op, tuple(members))
    if fast is None:
        return
    for node in dropped:
        replaced[id(node)] = None
    replaced[id(split)] = Node(split.op, list(split.inputs) + constants, outputs, fast)


def _fuse_xent_scale(node: Node, producer: dict, readers: dict, replaced: dict,
                     position: dict) -> None:
    xent_type = "SparseSoftmaxCrossEntropyWithLogits"
    for index in (0, 1):
        xent = _single_reader(node.inputs[index], producer, readers, replaced, xent_type)
        if xent is None or node.inputs[index] is not xent.outputs[1]:
            continue
        scale = node.inputs[1 - index]
        source = None if isinstance(scale, Constant) else producer.get(scale)
        if source is not None and position[id(source)] > position[id(xent)]:
            return  # the scale is computed after the cross entropy
        fast = fast_kernels.scaled_sparse_xent(xent.op, node.op, scale_first=index == 1)
        if fast is not None and node.outputs[0] is not None:
            replaced[id(node)] = None
            replaced[id(xent)] = Node(xent.op, [*xent.inputs, scale],
                                      [xent.outputs[0], node.outputs[0]], fast)
        return


# ------------------------------------------------------------- grouped updates
# op type -> (state arrays per update, rule): ``rule(state, grad, hypers, attrs, out)``
# writes the new values of the flat ``state`` arrays into ``out``, elementwise.
_UPDATE_GROUPS: dict = {}
# Only variables of at most this many elements are grouped: for them the per-op cost
# dominates; a large one is updated alone (grouping would copy its gradient).
GROUP_MAX_ELEMENTS = 1 << 16
_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def register_update_group(op_type: str, state_count: int, rule: Callable) -> None:
    """Lets update ops of ``op_type`` (inputs ``[*state refs, *hypers, grad]``) be grouped."""
    _UPDATE_GROUPS[op_type] = (state_count, rule)


class FusedNode(ClusterNode):
    """Program nodes run as one by a NumPy kernel of the runtime (``call``), not compiled."""

    __slots__ = ()


class FusedMemberError(Exception):
    """A member op of a fused node failed: the executor reports ``error`` naming ``op``."""

    def __init__(self, op: Operation, error: Exception):
        super().__init__(str(error))
        self.op = op
        self.error = error


def _group_updates(nodes: list) -> list:
    """Groups the small updates of each stretch of consecutive update nodes."""
    result: list = []
    stretch: list = []
    for node in nodes:
        if type(node) is Node and node.op._type in _UPDATE_GROUPS:
            stretch.append(node)
            continue
        result += _grouped_stretch(stretch)
        stretch = []
        result.append(node)
    return result + _grouped_stretch(stretch)


def _grouped_stretch(stretch: list) -> list:
    """The stretch with each group of two or more small updates of one rule and the same
    hyperparameter inputs as one FusedNode, where its last member was. Updates of
    distinct variables commute, so only a stretch whose nodes all update distinct
    variables and read no output of each other is regrouped."""
    if len(stretch) < 2:
        return stretch
    keys, outputs = set(), set()
    for node in stretch:
        state_count = _UPDATE_GROUPS[node.op._type][0]
        for ref in node.op._inputs[:state_count]:
            key = _variable_name(ref)
            if key is None or key in keys:
                return stretch
            keys.add(key)
        if any(v in outputs for v in node.inputs):
            return stretch
        outputs.update(node.outputs)
    groups: dict = {}
    for node in stretch:
        key = _group_key(node)
        if key is not None:
            groups.setdefault(key, []).append(node)
    last_of = {members[-1]: members for members in groups.values() if len(members) > 1}
    grouped = {id(node) for members in last_of.values() for node in members}
    result = []
    for node in stretch:
        if node in last_of:
            result.append(_fused(last_of[node]))
        elif id(node) not in grouped:
            result.append(node)
    return result


def _variable_name(ref: Tensor) -> Optional[str]:
    op = ref.op
    return op._attrs.get("shared_name") if op._type == "VariableV2" else None


def _group_key(node: Node) -> Optional[tuple]:
    """What members of one group share: op type, attrs, hyperparameter inputs, dtype."""
    op = node.op
    state_count = _UPDATE_GROUPS[op._type][0]
    var, grad = op._inputs[0], op._inputs[-1]
    count = var.shape.num_elements()
    if count is None or count > GROUP_MAX_ELEMENTS or var.shape.as_tuple() != \
            grad.shape.as_tuple() or any(isinstance(v, Constant) for v in node.inputs[-1:]):
        return None
    attrs = tuple(sorted((k, _frozen(v)) for k, v in op._attrs.items()
                         if not k.startswith("_")))
    hypers = tuple(_input_key(v) for v in node.inputs[state_count:-1])
    key = (op._type, attrs, hypers, var.dtype)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _fused(members: list) -> FusedNode:
    """One node updating every member's variables: inputs are the members' state refs,
    the shared hyperparameters, then the members' gradients."""
    state_count, rule = _UPDATE_GROUPS[members[0].op._type]
    first = members[0]
    inputs = [v for node in members for v in node.inputs[:state_count]]
    inputs += first.inputs[state_count:-1]
    inputs += [node.inputs[-1] for node in members]
    outputs = [node.outputs[0] for node in members]
    group = UpdateGroup([node.op for node in members], state_count, rule)
    return FusedNode([node.op for node in members], inputs, outputs, group, _CPU)


def _reference_counts(bank: "_Bank") -> tuple:
    """The reference counts of a bank's buffer and views (every view holds the buffer
    too, as its ``base``), as ``_Bank.held_elsewhere`` compares them."""
    return sys.getrefcount(bank.flat), set(map(sys.getrefcount, bank.views))


class _Bank:
    """One flat buffer per state array and the members' views of it."""

    __slots__ = ("flat", "views", "sole")

    def __init__(self, flat: np.ndarray, views: tuple, sole: Optional[tuple] = None):
        self.flat = flat
        self.views = views
        # the counts when nothing else holds them: (buffer, {view})
        self.sole = sole or (_FLAT_REFERENCES + len(views), {_VIEW_REFERENCES})

    def held_elsewhere(self) -> bool:
        """Whether anything but this bank holds its buffer or a view of it (a fetched
        value, the session's store): then it may not be overwritten."""
        return _reference_counts(self) != self.sole


def _calibrated() -> tuple:
    """The reference counts ``held_elsewhere`` sees for a bank nothing else holds."""
    flat = np.empty(2)
    bank = _Bank(flat, (flat[:1], flat[1:]), sole=(0, set()))
    del flat
    flat_count, view_counts = _reference_counts(bank)
    view_count, = view_counts
    return flat_count - len(bank.views), view_count


_FLAT_REFERENCES, _VIEW_REFERENCES = _calibrated()


class UpdateGroup:
    """The kernel of a fused update: one pass of the rule over flat buffers holding every
    member's state, the members' variables being views of those buffers.

    Each state array (the variables, each kind of slot) has two banks, one flat buffer
    each; a run reads the bank the variables are views of and writes the other, whose
    views it then stores, so steady state allocates nothing and copies only the
    gradients (into one flat buffer kept across runs). A bank something else still
    holds (a fetched value) is replaced, never overwritten; state that is not a view of
    a bank (the first step, a value assigned from outside) is gathered into a fresh
    flat buffer first. Shapes or dtypes other than the graph's run the members' own
    kernels, which report them.
    """

    def __init__(self, ops: list, state_count: int, rule: Callable):
        self.ops = ops
        self.state_count = state_count
        self.rule = rule
        self.attrs = {k: v for k, v in ops[0]._attrs.items() if not k.startswith("_")}
        self.kernels = [_bound_kernel(op) for op in ops]
        self.shapes = tuple(op._inputs[0].shape.as_tuple() for op in ops)
        self.dtype = np.dtype(ops[0]._inputs[0].dtype.as_numpy_dtype)
        sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.bounds = tuple(zip(np.cumsum([0] + sizes[:-1]).tolist(),
                                np.cumsum(sizes).tolist()))
        self.size = sum(sizes)
        self.banks: list = [[None, None] for _ in range(state_count)]
        self.grad: Optional[np.ndarray] = None
        # a graph function's plan is shared by every session running it: one run at a
        # time picks and fills the banks and the gradient buffer
        self.lock = threading.Lock()

    def __call__(self, ctx, *args):
        with self.lock:
            return self._update(ctx, args)

    def _update(self, ctx, args: tuple):
        n, members = self.state_count, len(self.ops)
        refs = args[:n * members]
        hypers = args[n * members:-members]
        grads = args[-members:]
        pending, store = ctx.pending, ctx.store
        state = []
        for ref in refs:
            value = pending.get(ref.key)
            if value is None:
                value = store.get(ref.key)
                if value is None:  # uninitialized: its member's kernel reports it
                    return self._one_by_one(ctx, refs, hypers, grads)
            state.append(value)
        dtype = self.dtype
        if tuple(g.shape for g in grads) != self.shapes or \
                any(g.dtype != dtype for g in grads):
            return self._one_by_one(ctx, refs, hypers, grads)
        flat_grad = self.grad
        if flat_grad is None:
            flat_grad = self.grad = np.empty(self.size, dtype)
        np.concatenate(grads, axis=None, out=flat_grad)
        flat_state, out_banks = [], []
        for index in range(n):
            flat, out = self._banks(index, state[index::n])
            if flat is None:
                return self._one_by_one(ctx, refs, hypers, grads)
            flat_state.append(flat)
            out_banks.append(out)
        try:
            self.rule(flat_state, flat_grad, hypers, self.attrs, [b.flat for b in out_banks])
        except Exception:  # noqa: BLE001 - each member's own kernel reports it
            return self._one_by_one(ctx, refs, hypers, grads)
        for index, bank in enumerate(out_banks):
            pending.update(zip([ref.key for ref in refs[index::n]], bank.views))
        return out_banks[0].views

    def _banks(self, index: int, current: list) -> tuple:
        """The flat buffer holding ``current`` (gathered if no bank does; None if it
        does not fit), and the bank to write the new values into."""
        banks = self.banks[index]
        for side in (0, 1):
            bank = banks[side]
            if bank is not None and all(map(operator.is_, current, bank.views)):
                other = banks[1 - side]
                if other is None or other.held_elsewhere():
                    other = banks[1 - side] = self._new_bank()
                return bank.flat, other
        for value, shape in zip(current, self.shapes, strict=True):
            if type(value) is not np.ndarray or value.dtype != self.dtype or \
                    value.shape != shape:
                return None, None
        flat = np.concatenate(current, axis=None)
        for side in (0, 1):
            if banks[side] is None or not banks[side].held_elsewhere():
                break
        else:
            side = 0
            banks[0] = None
        if banks[side] is None:
            banks[side] = self._new_bank()
        return flat, banks[side]

    def _new_bank(self) -> _Bank:
        flat = np.empty(self.size, self.dtype)
        views = tuple(flat[start:stop].reshape(shape)
                      for (start, stop), shape in zip(self.bounds, self.shapes, strict=True))
        return _Bank(flat, views)

    def _one_by_one(self, ctx, refs, hypers, grads) -> tuple:
        """Each member's own kernel, in order, naming the member that fails."""
        n, results = self.state_count, []
        for index, (op, kernel) in enumerate(zip(self.ops, self.kernels, strict=True)):
            try:
                results.append(kernel(ctx, *refs[index * n:(index + 1) * n], *hypers,
                                      grads[index]))
            except Exception as err:  # noqa: BLE001 - re-raised naming the member
                raise FusedMemberError(op, err) from err
        return tuple(results)


def _bound_kernel(op: Operation) -> Callable:
    kernel = op._op_def.kernel
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    return (lambda *args: kernel(*args, **attrs)) if attrs else kernel
