"""Graph functions: sub-graphs with inputs, outputs and captures of outer tensors.

A ``FuncGraph`` is a Graph nested in another. When one of its ops uses a tensor of an
enclosing graph, the tensor is *captured*: a placeholder stands for it inside, and
the calling op passes the outer tensor in as an extra input. A ``Function`` pairs a
FuncGraph with its input and output tensors. Functions are the building block of
``Defun``, ``cond`` and ``while_loop``.

This module sits on the ground floor, so it neither runs nor differentiates a
function itself: the runtime runs one (``RunContext.call``, keeping the compiled plan
in ``Function.plan``), and autodiff installs the builder of a function's gradient
with ``set_symbolic_gradient_builder`` when it is imported.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Callable, Iterator, Optional, Sequence

from gradflow.framework import dtypes
from gradflow.framework.graph import Graph, Operation, Tensor, get_default_graph
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["FuncGraph", "Function", "trace_function", "set_symbolic_gradient_builder"]

_unique_ids = itertools.count()
_symbolic_gradient_builder: Optional[Callable[["Function"], "Function"]] = None


class FuncGraph(Graph):
    """A graph nested in ``outer_graph`` that captures the outer tensors it uses."""

    def __init__(self, name: str, outer_graph: Graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.captures: dict[Tensor, Tensor] = {}  # outer tensor -> inner placeholder
        self.capture_sources: dict[Tensor, Tensor] = {}  # inner placeholder -> outer tensor
        # Ops of enclosing graphs named as control inputs inside: the op calling this
        # function takes them as its own control inputs, so they run before the call.
        self.outer_control_inputs: list[Operation] = []
        self.loop_inputs: list[Tensor] = []  # a while body's initial loop values (outer)

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs) -> Iterator[None]:
        """As Graph's; control inputs from enclosing graphs go to the calling op."""
        if control_inputs is None:
            with super().control_dependencies(None):
                yield
            return
        inner = []
        for value in control_inputs:
            op = value if isinstance(value, Operation) else getattr(value, "op", None)
            if isinstance(op, Operation) and op.graph is not self and self._encloses(op.graph):
                if op not in self.outer_control_inputs:
                    self.outer_control_inputs.append(op)
            else:
                inner.append(value)
        with super().control_dependencies(inner):
            yield

    def capture(self, tensor: Tensor) -> Tensor:
        """The placeholder standing for ``tensor`` of an enclosing graph (made once).

        A tensor from several graphs out is captured by each graph in between, from the
        outermost inwards, in a loop: no recursion on the depth of nesting."""
        placeholder = self.captures.get(tensor)
        if placeholder is not None:
            return placeholder
        if tensor.graph is not self.outer_graph and not self._encloses(tensor.graph):
            raise ValueError(f"Tensor {tensor} must be from the same graph as the op being "
                             f"created, or from a graph enclosing function '{self.name}'.")
        chain = [self]  # the graphs from here out to the first that has it
        graph = self.outer_graph
        while graph is not tensor.graph and tensor not in graph.captures:
            chain.append(graph)
            graph = graph.outer_graph
        source = tensor if graph is tensor.graph else graph.captures[tensor]
        for graph in reversed(chain):
            source = graph._capture_one(tensor, source)
        return source

    def _capture_one(self, tensor: Tensor, source: Tensor) -> Tensor:
        """The placeholder for ``source`` of the enclosing graph, standing for ``tensor``."""
        placeholder = self.captures.get(source)
        if placeholder is not None:
            self.captures[tensor] = placeholder
            return placeholder
        with self.control_dependencies(None), self.name_scope(None), \
                self.colocate_with(None, ignore_existing=True):
            op = self.create_op("Placeholder", (), {"dtype": source.dtype, "shape": source.shape},
                                name="capture")
        placeholder = op.outputs[0]
        self.captures[source] = placeholder
        if source is not tensor:
            self.captures[tensor] = placeholder
        self.capture_sources[placeholder] = source
        self.inputs.append(placeholder)
        return placeholder

    def captured_sources(self) -> list[Tensor]:
        """Outer tensors captured so far, in the order their placeholders were added."""
        return [self.capture_sources[p] for p in self.inputs if p in self.capture_sources]

    def _encloses(self, graph: Graph) -> bool:
        outer = self.outer_graph
        while outer is not None:
            if outer is graph:
                return True
            outer = outer.outer_graph
        return False

    def add_input(self, dtype, shape, name: str) -> Tensor:
        """A placeholder argument of the function."""
        op = self.create_op("Placeholder", (), {"dtype": dtypes.as_dtype(dtype),
                                                "shape": TensorShape(shape)}, name=name)
        self.inputs.append(op.outputs[0])
        return op.outputs[0]


class Function:
    """A FuncGraph with chosen inputs and outputs, runnable as one step of a plan."""

    def __init__(self, graph: FuncGraph, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
                 name: Optional[str] = None):
        self.graph = graph
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.name = name or f"{graph.name}_{next(_unique_ids)}"
        self.python_grad_func: Optional[Callable] = None
        self.grad_func = None
        self.plan = None  # the runtime's compiled plan, kept here between runs
        self._gradient: Optional[Function] = None

    def symbolic_gradient(self) -> "Function":
        """A function of (inputs..., output gradients...) -> gradients of trainable inputs.

        Built inside this function's own graph, so the forward ops it needs are simply
        recomputed when the gradient runs. Inputs without a gradient get zeros.
        """
        if self._gradient is None:
            if _symbolic_gradient_builder is None:
                raise RuntimeError(f"Cannot differentiate function '{self.name}': no gradient "
                                   "builder is installed (gradflow.autodiff.gradients installs "
                                   "it when imported).")
            self._gradient = _symbolic_gradient_builder(self)
        return self._gradient

    def trainable_input_indices(self) -> list[int]:
        """Inputs that receive gradients: floating, complex and variant (loop state) ones."""
        return [i for i, t in enumerate(self.inputs) if carries_gradient(t)]

    def __repr__(self) -> str:
        return f"<Function {self.name}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"


def carries_gradient(t: Tensor) -> bool:
    return t.dtype.is_trainable or t.dtype is dtypes.variant


def set_symbolic_gradient_builder(builder: Callable[[Function], Function]) -> None:
    """Installs how ``Function.symbolic_gradient`` builds a gradient (autodiff's hook)."""
    global _symbolic_gradient_builder
    _symbolic_gradient_builder = builder


def trace_function(fn: Callable, input_specs: Sequence[tuple], name: str,
                   outer_graph: Optional[Graph] = None) -> tuple[FuncGraph, list, object]:
    """Calls ``fn`` on placeholders made from ``(dtype, shape)`` specs inside a new FuncGraph.

    Returns the graph, the argument placeholders and ``fn``'s raw result.
    """
    outer = outer_graph or get_default_graph()
    graph = FuncGraph(name, outer)
    with graph.as_default():
        args = [graph.add_input(dtype, shape, name=f"arg{i}")
                for i, (dtype, shape) in enumerate(input_specs)]
        result = fn(*args)
    return graph, args, result
