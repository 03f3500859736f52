"""Run-time error types of ``Session.run``, named as in ``tf.errors``."""
from __future__ import annotations

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
    "UnauthenticatedError", "OperatorNotAllowedInGraphError",
]


class OpError(Exception):
    """An error raised while running an op; ``.op`` names the op that failed."""

    error_code = 2

    def __init__(self, node_def, op, message: str, *args):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return self.message


def _error(name: str, code: int) -> type:
    return type(name, (OpError,), {"error_code": code, "__module__": __name__})


CancelledError = _error("CancelledError", 1)
UnknownError = _error("UnknownError", 2)
InvalidArgumentError = _error("InvalidArgumentError", 3)
DeadlineExceededError = _error("DeadlineExceededError", 4)
NotFoundError = _error("NotFoundError", 5)
AlreadyExistsError = _error("AlreadyExistsError", 6)
PermissionDeniedError = _error("PermissionDeniedError", 7)
ResourceExhaustedError = _error("ResourceExhaustedError", 8)
FailedPreconditionError = _error("FailedPreconditionError", 9)
AbortedError = _error("AbortedError", 10)
OutOfRangeError = _error("OutOfRangeError", 11)
UnimplementedError = _error("UnimplementedError", 12)
InternalError = _error("InternalError", 13)
UnavailableError = _error("UnavailableError", 14)
DataLossError = _error("DataLossError", 15)
UnauthenticatedError = _error("UnauthenticatedError", 16)


class InvalidShapeError(ValueError):
    """A shape function's refusal of an op's inputs. ``Graph.create_op`` re-raises it as
    TF1 words it, ``<core> for '{{node NAME}} = TYPE[attrs](inputs)' with input shapes:
    ...``, followed by ``detail`` (gradflow's own words: `` (the tensors' names...)``);
    elsewhere its text is ``core`` followed by ``detail``."""

    def __init__(self, core: str, detail: str = ""):
        super().__init__(core + detail)
        self.core = core
        self.detail = detail


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation a graph tensor cannot support (``bool(t)``, ``for x in t``)."""

