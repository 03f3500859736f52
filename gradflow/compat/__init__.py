"""``gf.compat``: text/bytes conversions TF1 programs use, and the ``v1`` namespace.

``import gradflow.compat.v1 as tf`` gives TF1's whole namespace (the same names as
``import gradflow as tf``).
"""
from __future__ import annotations

import os
from typing import Any, Union

__all__ = ["as_bytes", "as_text", "as_str", "as_str_any", "path_to_str"]


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
