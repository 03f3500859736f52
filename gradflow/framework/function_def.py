"""A graph function described as TF's ``FunctionDef`` describes it, in plain Python.

``Defun(...).definition`` returns one: the signature (name, typed input and output
arguments, statefulness), the body's nodes, the function's attrs and which inner
tensor each output returns. Field names follow the protocol buffer's, so TF1 code
reading ``definition.signature.input_arg[0].name`` works; there is no wire format.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ArgDef", "OpDefSignature", "NodeDef", "AttrValue", "FunctionDef"]


@dataclass
class ArgDef:
    """One input or output argument: its name and dtype (a gradflow DType)."""

    name: str
    type: Any


@dataclass
class OpDefSignature:
    """The function's name and typed arguments, as an OpDef."""

    name: str
    input_arg: list = field(default_factory=list)
    output_arg: list = field(default_factory=list)
    is_stateful: bool = False


@dataclass
class NodeDef:
    """One op of the body: name, type, input tensor names (``^name`` for control)."""

    name: str
    op: str
    input: list = field(default_factory=list)
    device: str = ""


@dataclass
class AttrValue:
    """An attribute's value; the field set names its kind, as in the proto."""

    b: bool = False
    i: int = 0
    f: float = 0.0
    s: bytes = b""

    @classmethod
    def of(cls, value) -> "AttrValue":
        if isinstance(value, bool):
            return cls(b=value)
        if isinstance(value, int):
            return cls(i=value)
        if isinstance(value, float):
            return cls(f=value)
        if isinstance(value, str):
            return cls(s=value.encode())
        raise ValueError(f"Unsupported attribute type for a function attr: {value!r} "
                         f"({type(value).__name__}); use a bool, int, float or str")


@dataclass
class FunctionDef:
    """Signature, body nodes, attrs and output bindings of a graph function."""

    signature: OpDefSignature
    node_def: list = field(default_factory=list)
    attr: dict = field(default_factory=dict)
    ret: dict = field(default_factory=dict)
