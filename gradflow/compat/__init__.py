"""``gf.compat``: text/bytes conversions TF1 programs use, and the ``v1`` namespace.

``import gradflow.compat.v1 as tf`` gives TF1's whole namespace (the same names as
``import gradflow as tf``).
"""
from __future__ import annotations

import os
from typing import Any, Union

__all__ = ["as_bytes", "as_text", "as_str", "as_str_any", "path_to_str",
           "disable_v2_behavior", "disable_eager_execution", "disable_resource_variables",
           "executing_eagerly"]


# TF1 programs ported to TF2 begin with ``tf.disable_v2_behavior()`` (or one of its parts).
# gradflow only ever has TF1's behaviour, so these have nothing left to switch off.
def disable_v2_behavior() -> None:
    """Keeps TF1 behaviour (graph mode, reference variables): gradflow's only one."""


def disable_eager_execution() -> None:
    """Keeps graph mode: gradflow never executes eagerly."""


def disable_resource_variables() -> None:
    """Keeps TF1's reference variables, gradflow's default."""


def executing_eagerly() -> bool:
    """False: gradflow builds graphs and runs them in sessions."""
    return False


def as_bytes(bytes_or_text: Union[bytes, bytearray, str], encoding: str = "utf-8") -> bytes:
    """``bytes_or_text`` as bytes, encoding text with ``encoding``."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Union[bytes, str], encoding: str = "utf-8") -> str:
    """``bytes_or_text`` as a str, decoding bytes with ``encoding``."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value: Any, encoding: str = "utf-8") -> str:
    """``str(value)``, except bytes, which are decoded."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path: Any) -> Any:
    """A path-like object as its string; anything else unchanged."""
    if isinstance(path, os.PathLike):
        return as_str_any(os.fspath(path))
    return path
