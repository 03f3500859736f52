"""Clustering a plan's program into compiled XLA computations (through ``jax.jit``).

An op is *compilable* when its type has a lowering (``lowerings.py``), its inputs and
outputs have fully known static shapes and numeric dtypes, its static inputs (shapes,
axes) are plan-time constants, and its variable inputs name variables directly. Under
``global_jit`` every compilable op may join a cluster (but those marked
``_XlaCompile=False``); otherwise only ops marked ``_XlaCompile=True`` by ``jit_scope``
may, and only with ops of their own ``_XlaScope``.

Clusters are the largest connected sets of compilable ops that never need a value
computed outside them from one of their own outputs. Each node gets a depth: the
longest path to it, counting one for every edge into or out of a non-compilable node
(and between different scopes); data edges, control edges and the order of stateful
ops (each waits for the one before it) all count. Compilable neighbours of equal depth
form a cluster; every other edge goes to a greater depth, so running the program in
(depth, creation order) runs every cluster as one step, after all it reads and before
all that reads it, with side effects in their order.
"""
from __future__ import annotations

from typing import Optional

from gradflow.backends.xla.devices import device_key
from gradflow.backends.xla.lowerings import is_variable_ref, lowering_of, ref_tensor
from gradflow.backends.xla.lowerings_tensor_array import with_static_sizes
from gradflow.backends.xla.runtime import compile_cluster, jax_available, jax_module
from gradflow.framework import dtypes
from gradflow.framework.graph import Tensor
from gradflow.runtime.optimizer import Constant, Program

__all__ = ["cluster_program", "compilable", "static_numeric", "GLOBAL_MIN_CLUSTER_OPS"]

# Under global_jit a lone op is left to NumPy: a compiled call costs more than most ops.
GLOBAL_MIN_CLUSTER_OPS = 2
_NON_NUMERIC = (dtypes.string, dtypes.resource, dtypes.variant)


def static_numeric(t: Tensor) -> bool:
    """Whether ``t`` has a fully known shape and a numeric dtype (compiled code's values)."""
    dims = t.shape.as_tuple()
    return dims is not None and None not in dims and t.dtype.base_dtype not in _NON_NUMERIC


def compilable(node) -> bool:
    """Whether ``node``'s op lowers with these inputs: see the module docstring."""
    op = node.op
    lowering = lowering_of(op._type)
    if lowering is None or (lowering.accepts is not None and not lowering.accepts(op)):
        return False
    for t in node.outputs:
        if t is None or not _compiled_value(t, lowering):
            return False
    refs = lowering.refs_of(node.inputs)
    for position, value in enumerate(node.inputs):
        static = position in lowering.static or position - len(node.inputs) in lowering.static
        if position in refs:
            tensor = ref_tensor(value)
            if tensor is None or not is_variable_ref(tensor):
                return False
        elif static:
            if not isinstance(value, Constant):
                return False
        elif isinstance(value, Tensor) and not _compiled_value(value, lowering):
            return False
    return True


def _compiled_value(t: Tensor, lowering) -> bool:
    return static_numeric(t) or (lowering.variants and t.dtype.base_dtype is dtypes.variant)


def _scope(node, global_jit: bool) -> Optional[str]:
    """The cluster scope ``node`` may join, or None when it stays on NumPy."""
    marked = node.op._attrs.get("_XlaCompile")
    if global_jit:
        scope = "" if marked is not False else None
    else:
        scope = node.op._attrs.get("_XlaScope", "") if marked is True else None
    if scope is None or not compilable(node):
        return None
    return f"{scope}@{device_key(node.op)}"  # ops asking for other devices never join


def cluster_program(program: Program, global_jit: bool) -> Program:
    """``program`` with its clusters each replaced by one ``ClusterNode``.

    Without JAX, a graph asking for global jit raises ``XlaUnavailableError``; ops
    marked by a compile scope alone (``gf.jit_scope``, compiled ``Defun``s, imported
    graphs) run on NumPy, as they did before XLA was a backend.
    """
    if global_jit:
        jax_module()
    elif not jax_available():
        return program
    program = with_static_sizes(program)
    nodes = program.nodes
    scopes = [_scope(node, global_jit) for node in nodes]
    while True:
        if all(s is None for s in scopes):
            return program
        clusters, depth, parent = _clusters(nodes, scopes, global_jit)
        crossing = _variant_crossings(program, clusters)
        if not crossing:
            break
        for i in crossing:  # its variant values would leave compiled code: keep it on NumPy
            scopes[i] = None
    if not clusters:
        return program
    return Program(_rebuilt(program, clusters, depth, parent), program.fetches)


def _clusters(nodes: list, scopes: list, global_jit: bool) -> tuple:
    """The clusters (root -> member indices), each node's depth, and the union-find parents."""
    index_of_op = {node.op: i for i, node in enumerate(nodes)}
    producer = {t: i for i, node in enumerate(nodes) for t in node.outputs if t is not None}
    depth = [0] * len(nodes)
    parent = list(range(len(nodes)))
    last_stateful = None
    for i, node in enumerate(nodes):
        # a compiled op reads a variable by its key: the VariableV2 naming it is no edge
        refs = lowering_of(node.op._type).refs_of(node.inputs) if scopes[i] is not None \
            else ()
        preds = {producer[v] for p, v in enumerate(node.inputs)
                 if isinstance(v, Tensor) and v in producer and p not in refs}
        preds.update(index_of_op[c] for c in node.op._control_inputs if c in index_of_op)
        if node.op._op_def.stateful and node.op._type != "VariableV2":
            if last_stateful is not None:
                preds.add(last_stateful)
            last_stateful = i
        joined = [p for p in preds if scopes[i] is not None and scopes[p] == scopes[i]]
        depth[i] = max((depth[p] + (0 if p in joined else 1) for p in preds), default=0)
        for p in joined:
            if depth[p] == depth[i]:
                parent[_find(parent, p)] = _find(parent, i)
    members: dict = {}
    for i, scope in enumerate(scopes):
        if scope is not None:
            members.setdefault(_find(parent, i), []).append(i)
    minimum = GLOBAL_MIN_CLUSTER_OPS if global_jit else 1
    clusters = {root: group for root, group in members.items() if len(group) >= minimum}
    return clusters, depth, parent


def _variant_crossings(program: Program, clusters: dict) -> set:
    """Nodes of ``clusters`` that read a variant value from outside their cluster or
    give one to a reader outside it (or to a fetch)."""
    cluster_of = {i: root for root, group in clusters.items() for i in group}
    producer = {t: i for i, node in enumerate(program.nodes) for t in node.outputs
                if t is not None}
    fetched = {v for v in program.fetches if isinstance(v, Tensor)}
    crossing = set()
    for i, node in enumerate(program.nodes):
        mine = cluster_of.get(i)
        for value in node.inputs:
            if not isinstance(value, Tensor) or value.dtype.base_dtype is not dtypes.variant:
                continue
            source = producer.get(value)
            theirs = cluster_of.get(source) if source is not None else None
            if mine != theirs:
                crossing.update(j for j in (i, source) if j is not None and j in cluster_of)
        if mine is not None and any(t in fetched and t.dtype.base_dtype is dtypes.variant
                                    for t in node.outputs if t is not None):
            crossing.add(i)
    return crossing


def _find(parent: list, i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _rebuilt(program: Program, clusters: dict, depth: list, parent: list) -> list:
    """The nodes in (depth, creation) order, each cluster compiled in the place of its
    first member."""
    nodes = program.nodes
    in_cluster = {i: root for root, group in clusters.items() for i in group}
    readers: dict = {}
    for i, node in enumerate(nodes):
        for v in node.inputs:
            if isinstance(v, Tensor):
                readers.setdefault(v, set()).add(in_cluster.get(i, -1 - i))
    fetched = {v for v in program.fetches if isinstance(v, Tensor)}
    order = []
    for root, group in clusters.items():
        order.append(((depth[group[0]], group[0]), _cluster_node(nodes, group, root, readers,
                                                                 fetched)))
    for i, node in enumerate(nodes):
        if i not in in_cluster:
            order.append(((depth[i], i), node))
    order.sort(key=lambda item: item[0])
    return [node for _, node in order]


def _cluster_node(nodes: list, group: list, root: int, readers: dict, fetched: set):
    members = [nodes[i] for i in group]
    produced = {t for node in members for t in node.outputs}
    inputs, seen = [], set()
    for node in members:
        refs = lowering_of(node.op._type).refs_of(node.inputs)
        for position, value in enumerate(node.inputs):
            if position in refs or isinstance(value, Constant) or value in produced \
                    or value in seen:
                continue
            seen.add(value)
            inputs.append(value)
    outputs = [t for node in members for t in node.outputs
               if t in fetched or any(r != root for r in readers.get(t, ()))]
    return compile_cluster(members, inputs, outputs)
