"""Peak memory of running a gradient: what the executor holds vs what it cannot avoid.

Runs the gradients of a 50-layer ReLU MLP (width 256, batch 256, float32) with respect
to every weight and bias, and measures the peak of NumPy allocations during
``Session.run`` with ``tracemalloc`` (NumPy reports its array buffers to it), against
two references. The graph's floor is the unavoidable live set of the graph's own
schedule (creation order): at every op, the bytes of all tensors already computed and
still needed (by a later op, or as a fetched result), plus the op's own outputs; views
(Identity, Reshape, ...) share their input's bytes, and variable values, constants
and fed arrays are not the run's to allocate. The plan's floor is the same count for
the compiled plan, whose optimizer may need fewer tensors alive (ReLU gradients read
the ReLU's output, so the pre-activation dies at the ReLU) and whose fast kernels may
write results into dying inputs.

A second table measures an optimizer update alone: Adam (``apply_gradients`` with fed
gradients) on the variables of the deep-MNIST model (3.27 M parameters), its CPU time
per run and its peak NumPy allocation per run, after warm-up runs; ``--tree`` measures
the gradflow of another checkout (before/after).

    python benchmarks/memory.py [--layers 50] [--width 256] [--batch 256] [--tree PATH]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from common import Table, load, print_tables, verdict

RATIO_LIMIT = 1.2
VIEW_OPS = {"Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze"}
NOT_ALLOCATED = {"VariableV2", "ReadVariableOp", "Const", "Placeholder", "NoOp"}


def build(layers: int, width: int, batch: int):
    """The graph, its gradient fetches and the feed."""
    gf = load("gradflow")
    rng = np.random.default_rng(0)
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [batch, width], name="x")
        y = gf.placeholder(gf.int32, [batch], name="y")
        h, params = x, []
        for i in range(layers):
            w = gf.Variable((rng.standard_normal((width, width)) / np.sqrt(width))
                            .astype(np.float32))
            b = gf.Variable(np.zeros(width, np.float32))
            h = gf.nn.bias_add(gf.matmul(h, w), b)
            h = gf.nn.relu(h) if i < layers - 1 else h
            params += [w, b]
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                            logits=h))
        grads = gf.gradients(loss, params)
        init = gf.global_variables_initializer()
    feed = {x: rng.standard_normal((batch, width)).astype(np.float32),
            y: rng.integers(0, width, batch).astype(np.int32)}
    return graph, init, grads, feed


def unavoidable_bytes(fetches: list, feeds) -> int:
    """Peak over the schedule (creation order) of the bytes that must be live."""
    from gradflow.runtime.executor import required_ops
    ops = required_ops(fetches, [], set(feeds))
    position = {op: i for i, op in enumerate(ops)}
    storage = {}  # tensor -> the tensor whose buffer it is (views resolve to their base)
    last_use: dict = {}
    for op in ops:
        for t in op.outputs:
            storage[t] = storage.get(op.inputs[0], op.inputs[0]) \
                if op.type in VIEW_OPS else t
        for t in op.inputs:
            base = storage.get(t, t)
            last_use[base] = max(last_use.get(base, -1), position[op])
    for t in fetches:
        last_use[storage[t]] = len(ops)
    delta = [0] * (len(ops) + 2)
    for base, end in last_use.items():
        op = base.op
        if op not in position or op.type in NOT_ALLOCATED or base in feeds:
            continue
        delta[position[op]] += _nbytes(base)
        delta[end + 1] -= _nbytes(base)
    for op in ops:  # outputs nobody reads still exist for the moment they are made
        for t in op.outputs:
            if storage[t] is t and t not in last_use and op.type not in NOT_ALLOCATED:
                delta[position[op]] += _nbytes(t)
                delta[position[op] + 1] -= _nbytes(t)
    return int(np.max(np.cumsum(delta)))


def plan_floor_bytes(plan) -> int:
    """Peak of the bytes the compiled plan's slots hold, from static shapes."""
    from gradflow.runtime.executor import SCRATCH
    held: dict = {}
    live = peak = 0
    for step in plan.steps:
        for tensor, slot in zip(step.op.outputs, step.outputs):
            if slot == SCRATCH:
                continue
            if step.out is not None:  # written into a dying input: that input's bytes
                held[slot] = held.pop(step.out, 0)
            else:
                held[slot] = 0 if step.op.type in VIEW_OPS | NOT_ALLOCATED else _nbytes(tensor)
                live += held[slot]
        peak = max(peak, live)
        for slot in step.frees:
            live -= held.pop(slot, 0)
    return peak


def _nbytes(t) -> int:
    return int(np.prod(t.shape.as_list())) * np.dtype(t.dtype.as_numpy_dtype).itemsize


def measured_peak_bytes(session, fetches, feed) -> int:
    """Peak NumPy/Python allocation during one run, above what existed before it."""
    session.run(fetches, feed)  # compile and warm up outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = session.run(fetches, feed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def tables(layers: int = 50, width: int = 256, batch: int = 256) -> list[Table]:
    gf = load("gradflow")
    graph, init, grads, feed = build(layers, width, batch)
    with gf.Session(graph=graph) as session:
        session.run(init)
        peak = measured_peak_bytes(session, grads, feed)
    from gradflow.runtime.executor import compile_plan
    plan = compile_plan(graph, grads, list(feed))  # the plan that run used, compiled again
    graph_floor, plan_floor = unavoidable_bytes(grads, feed), plan_floor_bytes(plan)
    every = sum(_nbytes(t) for op in graph.get_operations() for t in op.outputs
                if op.type not in NOT_ALLOCATED | VIEW_OPS and t.shape.is_fully_defined())
    table = Table(f"memory: gradients of a {layers}-layer MLP (width {width}, batch {batch}), "
                  "MiB", ["peak held", "graph's floor", "peak/graph floor",
                          "plan's floor", "peak/plan floor", f"<={RATIO_LIMIT}x",
                          "all tensors"],
                  note="floors: the live set each schedule cannot avoid (see memory.py); "
                       "all tensors: every tensor of the graph at once (no freeing).")
    ratio = peak / plan_floor
    table.add(peak / 2 ** 20, graph_floor / 2 ** 20, f"{peak / graph_floor:.2f}x",
              plan_floor / 2 ** 20, f"{ratio:.2f}x", verdict(ratio <= RATIO_LIMIT),
              every / 2 ** 20)
    return [table]


# deep_mnist_step's variables: two 5x5 convolutions, dense 3136 -> 1024 -> 10
DEEP_MNIST_SHAPES = ((5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (3136, 1024), (1024,),
                     (1024, 10), (10,))


def update_table(repeats: int = 7) -> Table:
    """CPU time and peak memory of one Adam update of deep MNIST's variables."""
    gf = load("gradflow")
    rng = np.random.default_rng(0)
    graph = gf.Graph()
    with graph.as_default():
        params = [gf.Variable(rng.standard_normal(s).astype(np.float32) * 0.1)
                  for s in DEEP_MNIST_SHAPES]
        grads = [gf.placeholder(gf.float32, s) for s in DEEP_MNIST_SHAPES]
        train = gf.train.AdamOptimizer(1e-4).apply_gradients(
            list(zip(grads, params, strict=True)))
        init = gf.global_variables_initializer()
    feed = {g: rng.standard_normal(g.shape.as_list()).astype(np.float32) for g in grads}
    count = sum(int(np.prod(s)) for s in DEEP_MNIST_SHAPES)
    with gf.Session(graph=graph) as session:
        session.run(init)
        for _ in range(3):
            session.run(train, feed)
        samples = []
        for _ in range(repeats):
            time.sleep(0.05)
            start = time.process_time()
            for _ in range(5):
                session.run(train, feed)
            samples.append((time.process_time() - start) / 5)
        peak = measured_peak_bytes(session, train, feed)
    table = Table(f"memory: one Adam update of deep MNIST's {count / 1e6:.2f} M parameters",
                  ["CPU ms per update (median)", "peak MiB per update",
                   "parameters MiB"],
                  note="apply_gradients with fed gradients; the peak counts the update's "
                       "own NumPy allocations (tracemalloc), not the fed gradients.")
    table.add(statistics.median(samples) * 1e3, peak / 2 ** 20, count * 4 / 2 ** 20)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=50)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--tree", type=Path, help="import gradflow from this checkout")
    parser.add_argument("--only-update", action="store_true",
                        help="the Adam update table only")
    args = parser.parse_args(argv)
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))  # ahead of this checkout
    gf = load("gradflow")
    print(f"gradflow from {Path(gf.__file__).parent.parent}")
    produced = [] if args.only_update else tables(args.layers, args.width, args.batch)
    print_tables(produced + [update_table()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
