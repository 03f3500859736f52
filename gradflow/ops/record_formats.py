"""The hook through which reader and dataset kernels open record files.

The engine does not know file formats: ``gradflow/io/tfrecord.py`` registers the
TFRecord format here when imported (``gradflow`` imports it), and the kernels of
``TFRecordDataset`` and ``TFRecordReaderV2`` ask for it by name.
"""
from __future__ import annotations

from typing import Callable, Iterator

from gradflow.framework import errors

__all__ = ["register_record_format", "open_records"]

_FORMATS: dict[str, Callable[[str, str], Iterator[bytes]]] = {}


def register_record_format(name: str, opener: Callable[[str, str], Iterator[bytes]]) -> None:
    """Makes ``opener(path, compression_type) -> iterator of records`` format ``name``."""
    _FORMATS[name] = opener


def open_records(name: str, path: str, compression_type: str = "") -> Iterator[bytes]:
    """The records of file ``path`` in format ``name`` (one bytes object each)."""
    opener = _FORMATS.get(name)
    if opener is None:
        raise errors.UnimplementedError(None, None, f"No reader registered for record format "
                                        f"{name!r} (import gradflow.io.tfrecord)")
    return opener(path, compression_type)
