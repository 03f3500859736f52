"""TF's SavedModel directory (TF1 style): ``saved_model.pb`` holding a ``SavedModel`` proto
(a schema version and one ``MetaGraphDef`` per tag set) beside ``variables/variables``,
a V2 checkpoint.

``SavedModel`` is not in the ``tensorboard`` package; its two-field descriptor is built
here (as TF's ``saved_model.proto`` declares it) over tensorboard's ``MetaGraphDef``.
"""
from __future__ import annotations

import os

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory, text_format
from tensorboard.compat.proto import meta_graph_pb2

from gradflow.framework import errors

__all__ = ["SavedModel", "read_saved_model", "write_saved_model", "SAVED_MODEL_FILENAME_PB",
           "SAVED_MODEL_FILENAME_PBTXT", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME"]

SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
MAX_SAVED_MODEL_BYTES = 1 << 31
_FILE_NAME = "gradflow/io/saved_model.proto"
_FIELD = descriptor_pb2.FieldDescriptorProto


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_FILE_NAME)
    except KeyError:
        proto = descriptor_pb2.FileDescriptorProto(
            name=_FILE_NAME, package="gradflow.tensorflow", syntax="proto3",
            dependency=[meta_graph_pb2.DESCRIPTOR.name])
        proto.message_type.add(name="SavedModel", field=[
            _FIELD(name="saved_model_schema_version", number=1, type=_FIELD.TYPE_INT64,
                   label=_FIELD.LABEL_OPTIONAL),
            _FIELD(name="meta_graphs", number=2, type=_FIELD.TYPE_MESSAGE,
                   type_name=".tensorboard.MetaGraphDef", label=_FIELD.LABEL_REPEATED)])
        pool.Add(proto)
    return pool


SavedModel = message_factory.GetMessageClass(
    _pool().FindMessageTypeByName("gradflow.tensorflow.SavedModel"))


def read_saved_model(export_dir: str):
    """The ``SavedModel`` proto of ``export_dir`` (``saved_model.pb`` or ``.pbtxt``).

    IOError (TF's type) when neither file exists; DataLossError naming the file when it
    cannot be parsed."""
    binary = os.path.join(export_dir, SAVED_MODEL_FILENAME_PB)
    text = os.path.join(export_dir, SAVED_MODEL_FILENAME_PBTXT)
    path = binary if os.path.isfile(binary) else text
    if not os.path.isfile(path):
        raise OSError(f"SavedModel file does not exist at: {export_dir}{os.sep}"
                      f"{{{SAVED_MODEL_FILENAME_PBTXT}|{SAVED_MODEL_FILENAME_PB}}}")
    size = os.path.getsize(path)
    if size > MAX_SAVED_MODEL_BYTES:
        raise errors.DataLossError(None, None, f"{path}: {size} bytes, more than a SavedModel "
                                   "may hold")
    with open(path, "rb") as f:
        data = f.read(size + 1)
    result = SavedModel()
    try:
        if path == binary:
            result.ParseFromString(data)
        else:
            text_format.Parse(data.decode("utf-8"), result)
    except (message.DecodeError, UnicodeDecodeError, text_format.ParseError) as err:
        raise errors.DataLossError(None, None, f"Cannot parse file {path}: {err}") from None
    return result


def write_saved_model(export_dir: str, meta_graphs: list, as_text: bool = False) -> str:
    """Writes ``saved_model.pb`` (or ``.pbtxt``) of ``meta_graphs``; returns its path."""
    proto = SavedModel(saved_model_schema_version=1, meta_graphs=meta_graphs)
    os.makedirs(export_dir, exist_ok=True)
    if as_text:
        path = os.path.join(export_dir, SAVED_MODEL_FILENAME_PBTXT)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(proto))
    else:
        path = os.path.join(export_dir, SAVED_MODEL_FILENAME_PB)
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    return path
