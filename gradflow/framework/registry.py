"""The two registries keyed by op type: op definitions and gradient functions.

An op family module declares each op once with :func:`define_op` (how its outputs'
dtypes and shapes follow from its inputs, and its NumPy kernel) and, right beside it,
its gradient with ``@RegisterGradient("Type")`` or ``NotDifferentiable("Type")``.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

__all__ = ["OpDef", "define_op", "get_op_def", "registered_op_types", "RegisterGradient",
           "NotDifferentiable", "no_gradient", "get_gradient_function", "has_gradient_entry",
           "gradient_needed", "gradient_targets"]


class OpDef:
    """What the graph and the executor need to know about one op type.

    ``infer(inputs, attrs)`` returns one ``(dtype, TensorShape)`` per output and raises
    TypeError/ValueError for bad input; ``kernel(*arrays, **attrs)`` computes the outputs
    (one array, or a tuple when the op has several outputs). A ``needs_context`` kernel
    gets the run context first (variables, functions); ``stateful`` ops are never pruned
    or folded. ``state_key(attrs)`` names the entry of the session's state that a
    context kernel writes besides the variables it is given (a random op's stream), so
    that a run can lock it before it starts. A ``locks_itself`` context kernel only
    reaches a session resource that synchronizes itself (a queue, reader or iterator):
    a run takes no session lock for it, so a dequeue that blocks holds none either.
    """

    __slots__ = ("type", "infer", "kernel", "stateful", "needs_context", "state_key",
                 "locks_itself")

    def __init__(self, op_type: str, infer: Callable, kernel: Optional[Callable],
                 stateful: bool, needs_context: bool, state_key: Optional[Callable] = None,
                 locks_itself: bool = False):
        self.type = op_type
        self.infer = infer
        self.kernel = kernel
        self.stateful = stateful
        self.needs_context = needs_context
        self.state_key = state_key
        self.locks_itself = locks_itself

    def __repr__(self) -> str:
        return f"OpDef({self.type!r})"


_OP_DEFS: dict[str, OpDef] = {}
_GRADIENTS: dict[str, Optional[Callable]] = {}


def define_op(op_type: str, *, infer: Callable, kernel: Optional[Callable],
              stateful: bool = False, needs_context: bool = False,
              state_key: Optional[Callable] = None, locks_itself: bool = False) -> OpDef:
    """Registers op type ``op_type``; each type is defined exactly once."""
    if op_type in _OP_DEFS:
        raise KeyError(f"Op type {op_type!r} is already defined.")
    op_def = OpDef(op_type, infer, kernel, stateful, needs_context, state_key, locks_itself)
    _OP_DEFS[op_type] = op_def
    return op_def


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OP_DEFS[op_type]
    except KeyError:
        raise ValueError(f"Op type not registered '{op_type}'") from None


def registered_op_types() -> list[str]:
    return sorted(_OP_DEFS)


class RegisterGradient:
    """Decorator registering ``fn(op, *output_grads) -> input_grads`` for an op type.

    >>> @RegisterGradient("MySquare")
    ... def _my_square_grad(op, grad):
    ...     return grad * 2.0 * op.inputs[0]
    """

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        _register(self._op_type, fn)
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's public name
    """Declares that ops of ``op_type`` have no gradient: backprop stops there (None)."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _register(op_type, None)


no_gradient = NotDifferentiable


def _register(op_type: str, fn: Optional[Callable]) -> None:
    if op_type in _GRADIENTS:
        raise KeyError(f"Registering two gradient with name '{op_type}'!")
    _GRADIENTS[op_type] = fn


def has_gradient_entry(op_type: str) -> bool:
    """True when ``op_type`` has a gradient function or an explicit NotDifferentiable."""
    return op_type in _GRADIENTS


def get_gradient_function(op) -> Optional[Callable]:
    """The gradient function for ``op`` (None if NotDifferentiable); LookupError if none.

    A ``gradient_override_map`` in force when the op was made takes precedence.
    """
    op_type = op.gradient_op_type
    try:
        return _GRADIENTS[op_type]
    except KeyError:
        # TF1 names the op's own type; the override, when there is one, is what to fix
        override = (f"; gradient_override_map maps it to '{op_type}', which has no "
                    "registered gradient" if op_type != op.type else "")
        raise LookupError(
            f"No gradient defined for operation '{op.name}' (op type: {op.type}){override}. "
            "Register one with @RegisterGradient, or wrap the op's input in stop_gradient "
            "if no gradient is needed.") from None


_targets = threading.local()


def gradient_needed(tensor) -> bool:
    """Whether the ``gradients`` call now running wants a gradient for ``tensor``.

    Rules may skip building gradients for inputs this returns False for (constants,
    integer side inputs...). Outside a gradients call every input is wanted.
    """
    stack = getattr(_targets, "stack", None)
    return not stack or tensor in stack[-1]


class gradient_targets:  # noqa: N801 - used as a context manager, like a function
    """Declares, for the duration of a block, which tensors need gradients."""

    def __init__(self, tensors: set):
        self._tensors = tensors

    def __enter__(self):
        stack = getattr(_targets, "stack", None)
        if stack is None:
            stack = _targets.stack = []
        stack.append(self._tensors)

    def __exit__(self, *exc):
        _targets.stack.pop()
