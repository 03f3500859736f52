"""Random well-typed gradflow programs, and their check against finite differences.

A :class:`ProgramBuilder` draws a float64 program op by op from a pool of tensors whose
run-time shapes it knows: broadcasting elementwise ops, reductions, slicing, gathers,
matmuls, reshapes, concats, conds, while loops, TensorArrays, losses, stop gradients
and shared subexpressions. It then picks several ys (with random ``grad_ys``) and
several xs (placeholders and intermediate tensors).

:func:`check_program` compares ``gradients(ys, xs)`` with central differences of
``L = sum_i sum(y_i * grad_y_i)`` along random directions (an intermediate x is
perturbed by feeding it; a stopped tensor is held at its value by feeding it too),
checks that every aggregation method and gate/colocate setting gives the same values,
and on request checks second derivatives the same way.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np
from hypothesis import event, strategies as st

import gradflow as gf

MAX_ELEMENTS = 24
DELTA = 1e-6


@dataclasses.dataclass
class Entry:
    """A pool tensor and its run-time shape (its static shape may be less known)."""

    tensor: gf.Tensor
    shape: tuple


@dataclasses.dataclass
class Program:
    graph: gf.Graph
    feeds: dict                      # placeholder -> value (roots, predicates, counts)
    roots: list                      # float placeholders, differentiable leaves
    ys: list
    grad_ys: list                    # ndarray or None (default seed) per y
    xs: list
    stop_ops: list                   # outputs of StopGradient ops (held fixed)
    stop_args: list                  # tensors passed as ``stop_gradients``
    unconnected: str
    log: list

    def describe(self) -> str:
        return "\n".join(self.log)


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _broadcast(a: tuple, b: tuple) -> Optional[tuple]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


UNARY: dict[str, Callable] = {
    "tanh": gf.tanh, "sin": gf.sin, "cos": gf.cos, "sigmoid": gf.sigmoid,
    "softplus": gf.nn.softplus, "square": gf.square, "atan": gf.atan, "erf": gf.math.erf,
    "log_sigmoid": gf.math.log_sigmoid, "identity": gf.identity,
    "neg": lambda t: -t,
    "exp_tanh": lambda t: gf.exp(gf.tanh(t)),
    "log1p_square": lambda t: gf.log1p(gf.square(t)),
    "sqrt_1p_square": lambda t: gf.sqrt(1.0 + t * t),
    "pow_1p_square": lambda t: (t * t + 1.0) ** 0.75,
    "affine": lambda t: t * 0.5 - 0.25,
}

BINARY: dict[str, Callable] = {
    "add": gf.add, "sub": lambda a, b: a - b, "mul": gf.multiply,
    "safe_div": lambda a, b: a / (1.5 + gf.tanh(b)),
    "squared_difference": gf.math.squared_difference,
    "atan2": lambda a, b: gf.atan2(a, 2.0 + b * b),
    # x stays away from 0, where TF defines d/dx xlogy(x, y) = 0 (a - a is exactly 0)
    "xlogy": lambda a, b: gf.math.xlogy(1.0 + a * a, 1.0 + b * b),
}

REDUCTIONS: dict[str, Callable] = {
    "sum": gf.reduce_sum, "mean": gf.reduce_mean, "logsumexp": gf.reduce_logsumexp,
    "prod": gf.reduce_prod, "max": gf.reduce_max, "variance": gf.math.reduce_variance,
}


class ProgramBuilder:
    """Draws one program with ``draw`` (Hypothesis' ``data.draw``)."""

    def __init__(self, draw: Callable, seed: int):
        self.draw = draw
        self.rng = np.random.default_rng(seed)
        self.graph = gf.Graph()
        self.pool: list[Entry] = []
        self.feeds: dict = {}
        self.roots: list = []
        self.stop_ops: list = []
        self.log: list[str] = []

    # ------------------------------------------------------------ drawing helpers
    def choice(self, options, label: str = ""):
        return self.draw(st.sampled_from(list(options)), label=label or None)

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def pick(self, accept: Callable[[Entry], bool] = lambda e: True,
             allow_empty: bool = False) -> Optional[Entry]:
        """A pool entry (recent ones more likely), or None if none is acceptable.

        Entries with a zero-size dimension are offered only when ``allow_empty``.
        """
        candidates = [e for e in self.pool if accept(e) and (allow_empty or all(e.shape))]
        if not candidates:
            return None
        index = self.integer(0, len(candidates) - 1)
        if self.flag():  # bias towards recent tensors: longer chains
            index = len(candidates) - 1 - index // 2
        return candidates[index]

    def random_shape(self, max_rank: int = 3) -> tuple:
        rank = self.integer(0, max_rank)
        return tuple(self.integer(1, 3) for _ in range(rank))

    def add(self, tensor: gf.Tensor, shape: tuple, what: str) -> Entry:
        assert tensor.dtype == gf.float64, what
        assert tensor.shape.is_compatible_with(shape), (what, tensor.shape, shape)
        entry = Entry(tensor, tuple(shape))
        self.pool.append(entry)
        self.log.append(f"{tensor.name} {shape} = {what}")
        return entry

    # ------------------------------------------------------------------- leaves
    def leaf(self, shape: Optional[tuple] = None) -> Entry:
        """A new placeholder (a root), sometimes with unknown dims, or a constant."""
        shape = self.random_shape() if shape is None else shape
        value = self.rng.uniform(-1.5, 1.5, size=shape)
        if self.roots and self.integer(0, 3) == 0:
            return self.add(gf.constant(value, dtype=gf.float64), shape, "constant")
        static = [None if self.integer(0, 4) == 0 else d for d in shape]
        t = gf.placeholder(gf.float64, static if self.flag() or not shape else shape)
        self.feeds[t] = value
        self.roots.append(t)
        return self.add(t, shape, "placeholder")

    def fed(self, dtype, value) -> gf.Tensor:
        t = gf.placeholder(dtype, np.shape(value))
        self.feeds[t] = value
        return t

    # --------------------------------------------------------------- op templates
    def unary(self) -> Entry:
        e = self.pick(allow_empty=True)
        name = self.choice(UNARY, "unary")
        return self.add(UNARY[name](e.tensor), e.shape, f"{name}({e.tensor.name})")

    def binary(self) -> Entry:
        a = self.pick(allow_empty=True)
        b = self.pick(lambda e: _size(_broadcast(a.shape, e.shape) or (MAX_ELEMENTS + 1,))
                      <= MAX_ELEMENTS, allow_empty=True)
        if b is None:
            b = self.leaf(a.shape)
        if self.flag():
            a, b = b, a
        name = self.choice(BINARY, "binary")
        return self.add(BINARY[name](a.tensor, b.tensor), _broadcast(a.shape, b.shape),
                        f"{name}({a.tensor.name}, {b.tensor.name})")

    def reduction(self) -> Entry:
        e = self.pick(allow_empty=True)
        name = self.choice(REDUCTIONS, "reduction")
        rank = len(e.shape)
        keepdims = self.flag()
        if rank == 0 or self.integer(0, 3) == 0:
            axes = None
        else:
            axes = sorted({self.integer(0, rank - 1) for _ in range(self.integer(1, rank))})
            if self.flag():
                axes = [a - rank for a in axes]
        shape = np.sum(np.zeros(e.shape), axis=None if axes is None else tuple(axes),
                       keepdims=keepdims).shape
        out = REDUCTIONS[name](e.tensor, axis=axes, keepdims=keepdims)
        return self.add(out, shape, f"reduce_{name}({e.tensor.name}, {axes}, {keepdims})")

    def slicing(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((3, 2))
        key = []
        for dim in e.shape:
            kind = self.integer(0, 3)
            if kind == 0:
                key.append(self.integer(-dim, dim - 1))
            elif kind == 1:
                key.append(slice(self.integer(-dim, dim), self.integer(-dim, dim),
                                 self.choice([1, 2, -1, None])))
            else:
                key.append(slice(None))
        if self.integer(0, 4) == 0:
            key.insert(self.integer(0, len(key)), None)
        key = tuple(key)
        shape = np.zeros(e.shape)[key].shape
        return self.add(e.tensor[key], shape, f"{e.tensor.name}[{key}]")

    def gather(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((3, 2))
        axis = self.integer(0, len(e.shape) - 1)
        index_shape = self.choice([(), (2,), (3,), (2, 2)])
        indices = self.rng.integers(0, e.shape[axis], size=index_shape)
        shape = np.take(np.zeros(e.shape), indices, axis=axis).shape
        out = gf.gather(e.tensor, indices.astype(np.int32), axis=axis)
        return self.add(out, shape, f"gather({e.tensor.name}, {indices.tolist()}, {axis})")

    def matmul(self) -> Entry:
        a = self.pick(lambda e: len(e.shape) == 2) or self.leaf((2, 3))
        ta, tb = self.flag(), self.flag()
        m, k = a.shape[::-1] if ta else a.shape
        want = lambda e: len(e.shape) == 2 and (e.shape[1] if tb else e.shape[0]) == k  # noqa: E731
        b = self.pick(want)
        if b is None:
            n = self.integer(1, 3)
            b = self.leaf((n, k) if tb else (k, n))
        n = b.shape[0] if tb else b.shape[1]
        out = gf.matmul(a.tensor, b.tensor, transpose_a=ta, transpose_b=tb)
        return self.add(out, (m, n), f"matmul({a.tensor.name}, {b.tensor.name}, {ta}, {tb})")

    def reshape(self) -> Entry:
        e = self.pick()
        size = _size(e.shape)
        shape = [d for d in (1, 2, 3, 4, 6, 8, 12) if size % d == 0 and d <= size]
        first = self.choice(shape)
        new = (first, size // first) if self.flag() else (size,)
        spec = list(new)
        if self.flag():
            spec[self.integer(0, len(spec) - 1)] = -1
        return self.add(gf.reshape(e.tensor, spec), new, f"reshape({e.tensor.name}, {spec})")

    def transpose(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 2) or self.leaf((2, 3))
        perm = list(self.rng.permutation(len(e.shape)))
        shape = tuple(e.shape[p] for p in perm)
        return self.add(gf.transpose(e.tensor, perm), shape, f"transpose({e.tensor.name}, {perm})")

    def concat(self) -> Entry:
        a = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((2, 2))
        axis = self.integer(0, len(a.shape) - 1)

        def fits(e):
            return len(e.shape) == len(a.shape) and all(
                p == q for i, (p, q) in enumerate(zip(e.shape, a.shape)) if i != axis)
        parts = [a] + [self.pick(fits) for _ in range(self.integer(1, 2))]
        shape = list(a.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        if _size(tuple(shape)) > MAX_ELEMENTS:
            return self.unary()
        out = gf.concat([p.tensor for p in parts], axis=axis)
        return self.add(out, tuple(shape), f"concat({[p.tensor.name for p in parts]}, {axis})")

    def stack(self) -> Entry:
        a = self.pick(lambda e: _size(e.shape) <= MAX_ELEMENTS // 2)
        if a is None:
            return self.unary()
        parts = [a, self.pick(lambda e: e.shape == a.shape)]
        axis = self.integer(0, len(a.shape))
        shape = np.stack([np.zeros(a.shape)] * 2, axis=axis).shape
        return self.add(gf.stack([p.tensor for p in parts], axis=axis), shape,
                        f"stack({[p.tensor.name for p in parts]}, {axis})")

    def add_n(self) -> Entry:
        a = self.pick()
        parts = [a] + [self.pick(lambda e: e.shape == a.shape) for _ in range(self.integer(1, 3))]
        function = self.choice(["add_n", "accumulate_n"])
        tensors = [p.tensor for p in parts]
        out = gf.add_n(tensors) if function == "add_n" else \
            gf.accumulate_n(tensors, shape=a.shape)
        return self.add(out, a.shape, f"{function}({[t.name for t in tensors]})")

    def softmax(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((2, 3))
        name = self.choice(["softmax", "log_softmax", "l2_normalize_like"])
        if name == "l2_normalize_like":
            out = e.tensor * gf.math.rsqrt(gf.reduce_sum(gf.square(e.tensor), -1, True) + 0.5)
        else:
            out = getattr(gf.nn, name)(e.tensor)
        return self.add(out, e.shape, f"{name}({e.tensor.name})")

    def loss(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((2, 3))
        kind = self.choice(["softmax_xent", "sigmoid_xent", "l2_loss"])
        if kind == "softmax_xent":
            labels = self.rng.dirichlet(np.ones(e.shape[-1]), size=e.shape[:-1])
            out = gf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=e.tensor)
            return self.add(out, e.shape[:-1], f"softmax_xent({e.tensor.name})")
        if kind == "sigmoid_xent":
            labels = self.rng.uniform(0, 1, size=e.shape)
            out = gf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=e.tensor)
            return self.add(out, e.shape, f"sigmoid_xent({e.tensor.name})")
        return self.add(gf.nn.l2_loss(e.tensor), (), f"l2_loss({e.tensor.name})")

    def where(self) -> Entry:
        a = self.pick()
        b = self.pick(lambda e: e.shape == a.shape)
        mask = self.rng.integers(0, 2, size=a.shape).astype(bool)
        out = gf.where(mask, a.tensor, gf.sin(b.tensor))
        return self.add(out, a.shape,
                        f"where({mask.tolist()}, {a.tensor.name}, sin({b.tensor.name}))")

    def segment_sum(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((3, 2))
        segments = self.integer(1, 3)
        ids = self.rng.integers(0, segments, size=e.shape[0]).astype(np.int32)
        out = gf.math.unsorted_segment_sum(e.tensor, ids, segments)
        return self.add(out, (segments,) + e.shape[1:],
                        f"unsorted_segment_sum({e.tensor.name}, {ids.tolist()}, {segments})")

    def cumsum(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((3,))
        axis = self.integer(0, len(e.shape) - 1)
        exclusive, reverse = self.flag(), self.flag()
        out = gf.cumsum(e.tensor, axis=axis, exclusive=exclusive, reverse=reverse)
        return self.add(out, e.shape, f"cumsum({e.tensor.name}, {axis}, {exclusive}, {reverse})")

    def stop_gradient(self) -> Entry:
        e = self.pick()
        out = gf.stop_gradient(e.tensor)
        self.stop_ops.append(out)
        return self.add(out, e.shape, f"stop_gradient({e.tensor.name})")

    def cond(self) -> Entry:
        e = self.pick()
        c = self.pick()
        f, g = self.choice(UNARY, "then"), self.choice(UNARY, "else")
        pred = self.fed(gf.bool, np.bool_(self.flag()))
        nested = self.flag()
        inner_pred = self.fed(gf.bool, np.bool_(self.flag()))

        def then_fn():
            return UNARY[f](e.tensor) * gf.reduce_mean(c.tensor), gf.reduce_sum(c.tensor)

        def else_fn():
            inner = gf.cond(inner_pred, lambda: gf.sin(e.tensor),
                            lambda: gf.cos(e.tensor) * gf.reduce_mean(c.tensor)) \
                if nested else e.tensor
            return UNARY[g](inner) + 0.5, gf.reduce_prod(gf.tanh(c.tensor))
        out, side = gf.cond(pred, then_fn, else_fn)
        self.add(side, (), f"cond#2({pred.name})")
        return self.add(out, e.shape, f"cond({pred.name}, {f}({e.tensor.name})*mean("
                        f"{c.tensor.name}), {g}(nested={nested}))")

    def while_loop(self) -> Entry:
        a = self.pick()
        w = self.pick()
        b = self.pick(lambda e: e.shape == a.shape)
        f = self.choice(UNARY, "body")
        dynamic = self.flag()
        count = self.integer(0, 3)
        limit = self.fed(gf.int32, np.int32(count)) if dynamic else gf.constant(count)
        bound = self.choice([None, count + 1, max(count - 1, 0)])

        def body(i, x, y):
            return i + 1, UNARY[f](x) * gf.reduce_mean(gf.tanh(w.tensor)) + 0.3 * y, x * 0.5
        _, out, other = gf.while_loop(lambda i, x, y: i < limit, body,
                                      [gf.constant(0), a.tensor, b.tensor],
                                      maximum_iterations=bound)
        if self.flag():
            self.add(other, a.shape, "while#2")
        return self.add(out, a.shape, f"while(n={count}, dynamic={dynamic}, max={bound}, "
                        f"{f}({a.tensor.name})*mean(tanh({w.tensor.name}))+0.3*{b.tensor.name})")

    def tensor_array(self) -> Entry:
        e = self.pick(lambda e: len(e.shape) >= 1) or self.leaf((3, 2))
        n = e.shape[0]
        f = self.choice(UNARY, "element")
        source = gf.TensorArray(gf.float64, size=n).unstack(e.tensor)
        target = gf.TensorArray(gf.float64, size=n)

        def body(i, ta):
            return i + 1, ta.write(i, UNARY[f](source.read(i)) * gf.cast(i + 1, gf.float64))
        _, result = gf.while_loop(lambda i, ta: i < n, body, [gf.constant(0), target])
        return self.add(result.stack(), e.shape, f"tensor_array({f}, {e.tensor.name})")

    TEMPLATES = {
        "unary": 6, "binary": 6, "reduction": 3, "slicing": 2, "gather": 2, "matmul": 2,
        "reshape": 1, "transpose": 1, "concat": 1, "stack": 1, "add_n": 1, "softmax": 1,
        "loss": 1, "where": 1, "segment_sum": 1, "cumsum": 1, "stop_gradient": 1, "cond": 2,
        "while_loop": 2, "tensor_array": 1, "leaf": 1,
    }
    _WEIGHTED = [name for name, weight in TEMPLATES.items() for _ in range(weight)]

    # ------------------------------------------------------------------- program
    def build(self, num_ops: int) -> Program:
        with self.graph.as_default():
            for _ in range(self.integer(1, 2)):
                self.leaf()
            for _ in range(num_ops):
                template = self.choice(self._WEIGHTED, "template")
                getattr(self, template)()
            return self._finish()

    def _finish(self) -> Program:
        ys = self._distinct(self.integer(1, 3), recent=True)
        grad_ys = [None if self.flag() else self.rng.standard_normal(e.shape) for e in ys]
        xs = self._distinct(self.integer(1, 3), recent=False)
        stop_args = [self.pick().tensor] if self.integer(0, 4) == 0 else []
        unconnected = self.choice(["none", "zero"])
        self.log.append(f"ys={[e.tensor.name for e in ys]} xs={[e.tensor.name for e in xs]} "
                        f"stop_gradients={[t.name for t in stop_args]} default_seeds="
                        f"{[g is None for g in grad_ys]}")
        return Program(self.graph, self.feeds, self.roots, [e.tensor for e in ys], grad_ys,
                       [e.tensor for e in xs], self.stop_ops, stop_args, unconnected, self.log)

    def _distinct(self, count: int, recent: bool) -> list[Entry]:
        chosen: list[Entry] = []
        for _ in range(count):
            if recent and not chosen:
                entry = self.pool[-1]
            elif not recent and self.flag():
                roots = set(self.roots)
                entry = self.pick(lambda e, roots=roots: e.tensor in roots)
            else:
                entry = self.pick()
            if entry is not None and all(entry.tensor is not c.tensor for c in chosen):
                chosen.append(entry)
        return chosen


# ======================================================================= checking
SETTINGS = [dict(aggregation_method=method, gate_gradients=gate,
                 colocate_gradients_with_ops=colocate)
            for method in (gf.AggregationMethod.ADD_N, gf.AggregationMethod.EXPERIMENTAL_TREE,
                           gf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N)
            for gate in (False, True) for colocate in (False, True)]


class ProgramChecker:
    """Runs the checks on one program in one session."""

    def __init__(self, program: Program, rng: np.random.Generator):
        self.p = program
        self.rng = rng
        self.session = gf.Session(graph=program.graph)

    def close(self) -> None:
        self.session.close()

    def loss(self) -> gf.Tensor:
        terms = [gf.reduce_sum(y if g is None else y * g)
                 for y, g in zip(self.p.ys, self.p.grad_ys)]
        return gf.add_n(terms) if len(terms) > 1 else terms[0]

    def gradients(self, setting: dict) -> list:
        p = self.p
        grad_ys = [None if g is None else gf.constant(g) for g in p.grad_ys]
        version = p.graph.version
        grads = gf.gradients(p.ys, p.xs, grad_ys=grad_ys,
                             stop_gradients=p.stop_args or None,
                             unconnected_gradients=p.unconnected, **setting)
        assert len(grads) == len(p.xs)
        scopes = {op.name.split("/")[0] for op in p.graph.operations_since(version)}
        assert len(scopes) <= 1, f"gradient ops outside one scope: {sorted(scopes)}"
        return grads

    def values(self, grads: list, feeds: dict) -> list:
        """Each gradient as a dense array (None stays None)."""
        fetches = [g for g in grads if g is not None]
        results = iter(self.session.run(fetches, feeds))
        out = []
        for x, g in zip(self.p.xs, grads):
            if g is None:
                out.append(None)
                continue
            value = next(results)
            out.append(_densify(value, self._shape_of(x, feeds)))
        return out

    def _shape_of(self, x: gf.Tensor, feeds: dict) -> tuple:
        return tuple(np.shape(self.session.run(x, feeds)))

    def fixed_feeds(self, stopped: list) -> dict:
        """Roots and switches, plus every stopped tensor held at its current value."""
        feeds = dict(self.p.feeds)
        if stopped:
            feeds.update(zip(stopped, self.session.run(stopped, self.p.feeds)))
        return feeds

    def directional(self, target: gf.Tensor, x: gf.Tensor, base: dict, direction) -> float:
        """Central difference of scalar ``target`` along ``direction`` at x (fed)."""
        x0 = base[x] if x in base else self.session.run(x, base)
        plus = {**base, x: x0 + DELTA * direction}
        minus = {**base, x: x0 - DELTA * direction}
        return (self.session.run(target, plus) - self.session.run(target, minus)) / (2 * DELTA)

    def check_against_fd(self, target: gf.Tensor, xs: list, grads: list, base: dict,
                         tolerance: float, what: str) -> None:
        scale = 1.0 + abs(float(self.session.run(target, base)))
        for x, g in zip(xs, grads):
            shape = self._shape_of(x, base)
            for _ in range(2):
                direction = self.rng.standard_normal(shape)
                numeric = self.directional(target, x, base, direction)
                symbolic = 0.0 if g is None else float(np.sum(g * direction))
                error = abs(numeric - symbolic)
                assert np.isfinite(symbolic) and error <= tolerance * (scale + abs(numeric)), (
                    f"{what}: d/d{x.name} along a random direction: symbolic {symbolic!r}, "
                    f"numeric {numeric!r}\n{self.p.describe()}")


def _densify(value, shape: tuple) -> np.ndarray:
    if isinstance(value, gf.IndexedSlicesValue):
        dense = np.zeros(shape)
        np.add.at(dense, np.asarray(value.indices), value.values)
        return dense
    return np.asarray(value)


def check_program(program: Program, seed: int, extra_settings: int = 2,
                  second_order: bool = False) -> None:
    """All the checks of the module docstring; AssertionError describes the program."""
    rng = np.random.default_rng(seed)
    checker = ProgramChecker(program, rng)
    try:
        with program.graph.as_default():
            _check(checker, program, rng, extra_settings, second_order)
    finally:
        checker.close()


def _check(checker: ProgramChecker, p: Program, rng, extra_settings: int,
           second_order: bool) -> None:
    loss = checker.loss()
    # TF1 semantics: ``stop_gradients`` stops the op, so all of its outputs are held.
    held = [t for s in p.stop_args for t in s.op.outputs if t.dtype == gf.float64]
    base = checker.fixed_feeds(p.stop_ops + held)
    if not _is_tame(checker.session.run([loss] + p.ys, base)):
        event("skipped: non-finite or huge values")
        return
    event(f"checked, second order: {second_order}")
    grads = checker.gradients(SETTINGS[0])
    values = checker.values(grads, p.feeds)
    if p.unconnected == "zero":
        assert all(g is not None for g in grads)
    checker.check_against_fd(loss, p.xs, values, base, 1e-6, "first order")
    for index in rng.choice(len(SETTINGS) - 1, size=extra_settings, replace=False):
        setting = SETTINGS[index + 1]
        others = checker.values(checker.gradients(setting), p.feeds)
        for x, a, b in zip(p.xs, values, others):
            assert (a is None) == (b is None), (setting, x.name, p.describe())
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12,
                                           err_msg=f"{setting} d/d{x.name}\n{p.describe()}")
    if second_order:
        _check_second_order(checker, p, grads, values, rng)


def _check_second_order(checker: ProgramChecker, p: Program, grads: list, values: list,
                        rng) -> None:
    first = next((g for g in grads if g is not None), None)
    if first is None:
        return
    dense = gf.convert_to_tensor(first)
    weights = rng.standard_normal(values[grads.index(first)].shape)
    target = gf.reduce_sum(dense * weights)
    second = gf.gradients(target, p.roots)
    base = checker.fixed_feeds(p.stop_ops)
    second_values = [None if g is None else _densify(v, np.shape(p.feeds[x]))
                     for x, g, v in zip(p.roots, second, _run_all(checker, second, base))]
    checker.check_against_fd(target, p.roots, second_values, base, 1e-4, "second order")


def _run_all(checker: ProgramChecker, grads: list, feeds: dict) -> list:
    present = [g for g in grads if g is not None]
    results = iter(checker.session.run(present, feeds))
    return [None if g is None else next(results) for g in grads]


def _is_tame(values: list) -> bool:
    """Values finite and moderate: finite differences are meaningful there."""
    return all(np.all(np.isfinite(v)) and np.max(np.abs(v), initial=0.0) < 1e4 for v in values)
