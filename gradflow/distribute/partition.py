"""Splitting the ops a run needs into stages, one task each, shipped as GraphDefs.

Placement: an op runs on the task its device names (``/job:J/task:T``; a job without a
task means the session's own task when it is of that job, else task 0; a device without
a job means the session's own task); an op reading a variable's reference (its
``read``, ``Assign``, the optimizers' ``Apply*``) or a resource handle (a queue's, a
reader's, a tensor array's), or colocated with another op (``_class``), runs where that
op runs, as TF1's placer does. The device type (CPU/GPU) is recorded, but every task
computes on its CPU.

Stages: an op's level is the highest level of its inputs, plus one where an input comes
from another task, then raised as far as its consumers allow; the ops of one task at
one level form a stage. Stages of a level
depend only on stages of lower levels, so the client can submit them in level order,
each stage's inputs being earlier stages' outputs. A stage is a GraphDef of its ops
(``gradflow.io.graph_def``; the graph functions its ops call in its library), with a
``Placeholder`` standing for each tensor it receives
and a copy of each variable whose reference it uses; control inputs from other stages
become ordering between stages.
"""
from __future__ import annotations

import hashlib
from typing import Optional, Sequence

from tensorboard.compat.proto import graph_pb2, node_def_pb2

from gradflow.framework import dtypes, errors
from gradflow.framework.device_spec import DeviceSpec
from gradflow.framework.function import Function
from gradflow.framework.graph import Graph, Operation, Tensor
from gradflow.io.graph_def import attr_value, full_node_def, function_library, node_def
from gradflow.runtime.executor import required_ops, state_writes
from gradflow.runtime.state_locks import state_order

__all__ = ["Stage", "Partitioning", "partition", "place_ops", "RECV_PREFIX"]

# Names of the placeholders standing for received tensors inside a stage's graph.
RECV_PREFIX = "gradflow_recv/"

Task = tuple  # (job, task index)
# Tensors that name state held by the task that made them (a queue, a reader, a tensor
# array): their consumers run on that task, as TF1's placer colocates them.
_HANDLES = frozenset({dtypes.resource, dtypes.variant})


def task_name(task: Task) -> str:
    return f"/job:{task[0]}/replica:0/task:{task[1]}"


class Stage:
    """The ops of one task at one level, and what they exchange with other stages."""

    def __init__(self, task: Task, level: int, ops: list[Operation]):
        self.task = task
        self.level = level
        self.ops = ops
        self.members = frozenset(ops)
        self.inputs: list[Tensor] = []     # received: other stages' outputs or feeds
        self.input_sources: list[tuple] = []  # per input: ("feed", i) | ("stage", s, o)
        self.outputs: list[Tensor] = []    # sent to later stages or fetched, by bundle
        self.bundles: list[int] = []       # how many outputs each Ray object carries
        self.targets: list[Operation] = []  # ops run for their effect
        self.after: list[int] = []         # stages (indices) that must run first
        self.graph_def: bytes = b""
        self.names: tuple = ()  # in the stage's graph: (inputs, outputs, targets)
        self.key = ""



class Partitioning:
    """A run's stages in submission order, and where each fetch comes from."""

    def __init__(self, stages: list[Stage], fetch_sources: list, writes: dict,
                 variable_fetches: list):
        self.stages = stages
        # per fetch: ("stage", stage index, bundle, position) | ("feed", feed index)
        #          | ("variable", task, key)
        self.fetch_sources = fetch_sources
        # the tasks that write, and the state keys they may write (None: any)
        self.writes = writes
        self.variable_fetches = variable_fetches
        self.tasks = sorted({stage.task for stage in stages} |
                            {task for task, _ in variable_fetches})
        self.first_on: dict = {}
        self.last_on: dict = {}
        for index, stage in enumerate(stages):
            self.first_on.setdefault(stage.task, index)
            self.last_on[stage.task] = index
        self.sink = self._sink()

    def _sink(self) -> Optional[int]:
        """The last stage, when it runs after every other one (it can then commit the
        run's writes on its task); else None."""
        if not self.stages:
            return None
        seen, stack = set(), [len(self.stages) - 1]
        while stack:
            index = stack.pop()
            if index not in seen:
                seen.add(index)
                stack.extend(self.stages[index].after)
        return len(self.stages) - 1 if len(seen) == len(self.stages) else None


def _device_task(device: str, default: Task) -> Task:
    if not device:
        return default
    spec = DeviceSpec.from_string(device)
    if spec.job is None or (spec.job == default[0] and spec.task is None):
        return (default[0], default[1] if spec.task is None else spec.task)
    return (spec.job, 0 if spec.task is None else spec.task)


def _colocated_name(op: Operation) -> Optional[str]:
    for group in op.colocation_groups():
        text = group.decode("utf-8") if isinstance(group, bytes) else group
        if text.startswith("loc:@") and text[5:] != op.name:
            return text[5:]
    return None


def _colocated_op(graph: Graph, op: Operation) -> Optional[Operation]:
    name = _colocated_name(op)
    if name is None:
        return None
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None  # colocated with an op of another graph: its own device decides


def place_ops(ops: Sequence[Operation], graph: Graph, default: Task,
              known: set) -> dict[Operation, Task]:
    """The task of each op (and of the ops they are colocated with). Raises TF1's
    InvalidArgumentError for a device naming a task outside the cluster ``known``."""
    placed: dict[Operation, Task] = {}
    for op in ops:
        placed[op] = _task_of(op, graph, default, known, placed)
    return placed


def _task_of(op: Operation, graph: Graph, default: Task, known: set, placed: dict) -> Task:
    """Follows colocation (reference inputs, ``_class``) to the op that decides."""
    chain, current = [], op
    while current not in placed:
        chain.append(current)
        owner = next((t.op for t in current.inputs if t.op.type == "VariableV2" or
                      t.dtype in _HANDLES), None)
        if owner is None:
            owner = _colocated_op(graph, current)
        if owner is None or owner in chain:
            break
        current = owner
    task = placed[current] if current in placed else \
        _device_task(current.device, default)
    if task not in known:
        devices = ", ".join(sorted(task_name(t) + "/device:CPU:0" for t in known))
        raise errors.InvalidArgumentError(
            None, op, f"Cannot assign a device for operation {op.name}: {op.name} was "
            f"explicitly assigned to {current.device} but available devices are "
            f"[ {devices} ]. Make sure the device specification refers to a valid device.")
    for member in chain:
        placed[member] = task
    return task


def _recv_name(tensor: Tensor) -> str:
    return f"{RECV_PREFIX}{tensor.op.name}_{tensor.value_index}"


def partition(graph: Graph, fetches: Sequence[Tensor], targets: Sequence[Operation],
              feeds: Sequence[Tensor], default: Task, known: set) -> Partitioning:
    """The stages computing ``fetches`` and running ``targets`` from ``feeds``."""
    fed = set(feeds)
    variable_fetches, computed = [], []
    for t in fetches:  # a fetched variable reference reads the value after the run
        if t.op.type == "VariableV2" and t not in fed:
            variable_fetches.append(t)
        elif t not in fed:
            computed.append(t)
    required = required_ops(computed, targets, fed)
    placed = place_ops(required + [t.op for t in variable_fetches], graph, default, known)
    _move_free_ops(required, placed, fed)
    # variables are copied into each stage using them (always on their own task)
    ops = [op for op in required if op.type != "VariableV2"]
    _check_shippable(ops)
    stage_of = _levels(ops, placed, fed)
    stages = _group(ops, stage_of)
    index_of = {id(stage): i for i, stage in enumerate(stages)}
    destinations = _wire(stages, stage_of, index_of, fed, computed, targets)
    producers = _bundle(stages, destinations)
    feed_index = {t: i for i, t in enumerate(feeds)}
    fetch_sources = []
    for t in fetches:
        if t in fed:
            fetch_sources.append(("feed", feed_index[t]))
        elif t.op.type == "VariableV2":
            fetch_sources.append(("variable", placed[t.op], t.op.get_attr("shared_name")))
        else:
            fetch_sources.append(producers[t])
    for stage in stages:
        stage.input_sources = [("feed", feed_index[t]) if t in fed else producers[t]
                               for t in stage.inputs]
        _encode(stage)
    variables = [(placed[t.op], t.op.get_attr("shared_name")) for t in variable_fetches]
    return Partitioning(stages, fetch_sources, _writes(stages), variables)


def _move_free_ops(ops: list[Operation], placed: dict, fed: set) -> None:
    """Places ops whose task cannot be observed where they save a stage: a constant
    used on one task only runs there, a ``NoOp`` (a ``group``) on the task of its last
    control input. TF1 runs them where their device says and pays a message for it."""
    users: dict[Operation, set] = {}
    for op in ops:
        for t in op.inputs:
            if t not in fed:
                users.setdefault(t.op, set()).add(placed[op])
    for op in ops:
        if op.type == "NoOp" and op.control_inputs and not op.inputs:
            controls = [c for c in op.control_inputs if c in placed]
            if controls:
                placed[op] = placed[controls[-1]]
    for op in ops:
        tasks = users.get(op)
        if op.type == "Const" and not op.control_inputs and tasks and len(tasks) == 1:
            placed[op] = next(iter(tasks))


def _check_shippable(ops: list[Operation]) -> None:
    """Refuses, before anything is sent, the ops a stage's GraphDef cannot carry yet:
    TensorArrays (gradflow's ops take other inputs than TF's GraphDef form of them), in
    the run's ops or in the graph functions they call."""
    pending, seen = list(ops), set()
    while pending:
        op = pending.pop()
        if op.type.startswith("TensorArray"):
            raise ValueError(f"Operation '{op.name}' ({op.type}) uses a TensorArray "
                             "(dynamic_rnn, map_fn, scan, ...): a cluster session cannot ship "
                             "TensorArrays to a task yet. Run it in a session without a "
                             "target.")
        for value in op.attrs.values():
            if isinstance(value, Function) and value.graph not in seen:
                seen.add(value.graph)
                pending.extend(value.graph.get_operations())


def _writes(stages: list[Stage]) -> dict:
    """Per task, the state keys its stages may write (None: unknown, so all)."""
    writes: dict = {}
    for stage in stages:
        keys = state_writes(stage.ops)
        if keys is None or (stage.task in writes and writes[stage.task] is None):
            writes[stage.task] = None
        else:
            writes[stage.task] = tuple(sorted(set(keys) | set(writes.get(stage.task, ())),
                                              key=state_order))
    return {task: keys for task, keys in writes.items() if keys is None or keys}


def _levels(ops: list[Operation], placed: dict, fed: set) -> dict:
    """Each op's (task, level). As soon as possible: one level more than an input
    computed on another task. Then as late as its consumers allow, so that an op feeding
    only its own task's later ops (a constant, a shape) joins their stage."""
    stage_of: dict[Operation, tuple] = {}
    consumers: dict[Operation, list] = {}
    for op in ops:  # creation order is topological
        task = placed[op]
        level = 0
        producers = [t.op for t in op.inputs if t not in fed] + list(op.control_inputs)
        for producer in producers:
            source = stage_of.get(producer)
            if source is None:
                continue  # fed, or a variable: the stage carries its own copy
            level = max(level, source[1] + (source[0] != task))
            consumers.setdefault(producer, []).append(op)
        stage_of[op] = (task, level)
    for op in reversed(ops):
        users = consumers.get(op)
        if users:
            task = stage_of[op][0]
            stage_of[op] = (task, min(stage_of[u][1] - (stage_of[u][0] != task)
                                      for u in users))
    return stage_of


def _group(ops: list[Operation], stage_of: dict) -> list[Stage]:
    groups: dict[tuple, list] = {}
    for op in ops:
        groups.setdefault(stage_of[op], []).append(op)
    return [Stage(task, level, members)
            for (task, level), members in sorted(groups.items(), key=lambda kv: (kv[0][1],
                                                                                   kv[0][0]))]


def _wire(stages: list[Stage], stage_of: dict, index_of: dict, fed: set,
          fetches: list, targets: Sequence[Operation]) -> dict:
    """Fills each stage's inputs, targets and ordering; returns, per tensor a stage
    sends, where it goes: the receiving stages' indices, -1 for the client."""
    by_key = {(s.task, s.level): s for s in stages}
    destinations: dict[Tensor, set] = {}
    previous_on_task: dict = {}
    for position, stage in enumerate(stages):
        members = set(stage.ops)
        after = set()
        before = previous_on_task.get(stage.task)
        if before is not None:  # one task's stages run in order, as in-process ops do
            after.add(index_of[id(before)])
        previous_on_task[stage.task] = stage
        consumed_here = set()
        for op in stage.ops:
            for t in op.inputs:
                if t in fed:
                    if t not in stage.inputs:
                        stage.inputs.append(t)
                    continue
                if t.op in members:
                    consumed_here.add(t.op)
                    continue
                if t.op.type == "VariableV2":
                    continue  # copied into this stage (it is on this task)
                destinations.setdefault(t, set()).add(position)
                after.add(index_of[id(by_key[stage_of[t.op]])])
                if t not in stage.inputs:
                    stage.inputs.append(t)
            for control in op.control_inputs:
                if control in members:
                    consumed_here.add(control)
                elif control in stage_of:
                    producer = by_key[stage_of[control]]
                    if control not in producer.targets:
                        producer.targets.append(control)
                    after.add(index_of[id(producer)])
        stage.after = sorted(after)
        stage.targets.extend(op for op in stage.ops if op not in consumed_here and
                             op not in stage.targets)
    for t in fetches:
        destinations.setdefault(t, set()).add(-1)
    for op in targets:
        if op not in stage_of:
            continue  # a variable op: running it has no effect
        producer = by_key[stage_of[op]]
        if op not in producer.targets:
            producer.targets.append(op)
    return destinations


def _bundle(stages: list[Stage], destinations: dict) -> dict:
    """Groups each stage's sent tensors by where they go, one Ray object per group;
    returns each sent tensor's place: ("stage", stage index, bundle, position)."""
    index_of = {id(stage): i for i, stage in enumerate(stages)}
    by_stage: dict[int, dict] = {}
    for t, where in destinations.items():
        stage = next(s for s in stages if t.op in s.members)
        groups = by_stage.setdefault(index_of[id(stage)], {})
        groups.setdefault(frozenset(where), []).append(t)
    places = {}
    for index, groups in sorted(by_stage.items()):
        stage = stages[index]
        for bundle, (_, tensors) in enumerate(sorted(groups.items(), key=lambda kv: sorted(
                kv[0]))):
            stage.bundles.append(len(tensors))
            for position, t in enumerate(tensors):
                stage.outputs.append(t)
                places[t] = ("stage", index, bundle, position)
    return places


def _encode(stage: Stage) -> None:
    """The stage's GraphDef: its ops, a placeholder per received tensor, and a copy of
    each variable of its task whose reference it uses (inputs renamed accordingly)."""
    members = set(stage.ops)
    received = set(stage.inputs)
    result = graph_pb2.GraphDef()
    copied: set = set()
    for t in stage.inputs:
        node = node_def_pb2.NodeDef(name=_recv_name(t), op="Placeholder")
        node.attr["dtype"].CopyFrom(attr_value(t.dtype))
        node.attr["shape"].CopyFrom(attr_value(t.shape))
        result.node.append(node)
    for op in stage.ops:
        for t in op.inputs:
            if t.op not in members and t not in received and t.op not in copied:
                copied.add(t.op)  # a variable of this task, used by reference
                node = node_def(t.op)
                node.device = ""
                result.node.append(node)
    library, function_names = function_library(stage.ops)  # cond, while_loop, Defun
    result.library.CopyFrom(library)
    for op in stage.ops:
        node = full_node_def(op, function_names)  # with gradflow's attrs TF's op lacks
        del node.input[:]
        for t in op.inputs:
            if t in received:
                node.input.append(_recv_name(t))
            else:
                node.input.append(t.op.name if t.value_index == 0 else t.name)
        node.input.extend("^" + c.name for c in op.control_inputs if c in members)
        node.device = ""
        result.node.append(node)
    stage.graph_def = result.SerializeToString()
    stage.names = ([_recv_name(t) + ":0" for t in stage.inputs],
                   [t.name for t in stage.outputs], [op.name for op in stage.targets])
    digest = hashlib.sha256(stage.graph_def)
    digest.update(repr(stage.names).encode("utf-8"))
    stage.key = digest.hexdigest()
