"""Run-time error types of ``Session.run``, named as in ``tf.errors``, and their codes."""
from __future__ import annotations

import warnings

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
    "UnauthenticatedError", "OperatorNotAllowedInGraphError", "OK", "CANCELLED", "UNKNOWN",
    "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED", "error_code_from_exception_type",
    "exception_type_from_error_code",
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

# The canonical status codes (TF's ``error_codes.proto`` numbers).
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16

_CODE_TO_TYPE = {cls.error_code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}
_TYPE_TO_CODE = {cls: code for code, cls in _CODE_TO_TYPE.items()}


def exception_type_from_error_code(error_code: int) -> type:
    """The ``OpError`` subclass of a status code; KeyError for ``OK`` or an unknown code."""
    return _CODE_TO_TYPE[error_code]


def error_code_from_exception_type(cls: type) -> int:
    """The status code of an ``OpError`` subclass. Any other class warns "Unknown class
    exception" as TF does, and gives ``UNKNOWN`` (TF hands back an ``UnknownError``
    instance there, which no caller can use as a code)."""
    if cls in _TYPE_TO_CODE:
        return _TYPE_TO_CODE[cls]
    warnings.warn("Unknown class exception", stacklevel=2)
    return UNKNOWN


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

