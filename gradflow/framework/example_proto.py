"""TensorFlow's ``Example`` protocol buffers (``tensorflow/core/example/*.proto``).

The ``tensorboard`` package does not ship these two files, so their schema is declared
here as protobuf ``FileDescriptorProto``s and the message classes are made by protobuf's
own ``message_factory``: encoding, decoding and text format are protobuf's, with TF's
full names (``tensorflow.Example``...), so bytes written here are what TF writes.

``ExampleFeatureBytes`` reads the same bytes as ``Example`` but keeps each feature's
value as the bytes of its ``Feature`` message: parsing kernels decode the features they
were asked for from those bytes in bulk (``ops/parsing_ops.py``) instead of building a
Python message per feature.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
           "FeatureLists", "Example", "SequenceExample", "ExampleFeatureBytes"]

_F = descriptor_pb2.FieldDescriptorProto


def _field(message, name: str, number: int, kind: int, label: int = _F.LABEL_OPTIONAL,
           type_name: str = "", packed: bool = False, oneof: int | None = None) -> None:
    field = message.field.add(name=name, number=number, type=kind, label=label,
                              json_name=_camel(name))
    if type_name:
        field.type_name = type_name
    if packed:
        field.options.packed = True
    if oneof is not None:
        field.oneof_index = oneof


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _map_entry(message, entry_name: str, value_type: str) -> None:
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    if value_type:
        _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    else:  # the value message kept as its bytes (same wire type: length-delimited)
        _field(entry, "value", 2, _F.TYPE_BYTES)


def _feature_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/feature.proto", package="tensorflow", syntax="proto3")
    for name, kind in (("BytesList", _F.TYPE_BYTES), ("FloatList", _F.TYPE_FLOAT),
                       ("Int64List", _F.TYPE_INT64)):
        message = proto.message_type.add(name=name)
        _field(message, "value", 1, kind, _F.LABEL_REPEATED, packed=kind != _F.TYPE_BYTES)
    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, type_name) in enumerate(
            (("bytes_list", "BytesList"), ("float_list", "FloatList"),
             ("int64_list", "Int64List")), start=1):
        _field(feature, name, number, _F.TYPE_MESSAGE, type_name=f".tensorflow.{type_name}",
               oneof=0)
    features = proto.message_type.add(name="Features")
    _map_entry(features, "FeatureEntry", ".tensorflow.Feature")
    _field(features, "feature", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           type_name=".tensorflow.Features.FeatureEntry")
    feature_list = proto.message_type.add(name="FeatureList")
    _field(feature_list, "feature", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           type_name=".tensorflow.Feature")
    feature_lists = proto.message_type.add(name="FeatureLists")
    _map_entry(feature_lists, "FeatureListEntry", ".tensorflow.FeatureList")
    _field(feature_lists, "feature_list", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           type_name=".tensorflow.FeatureLists.FeatureListEntry")
    return proto


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/example.proto", package="tensorflow", syntax="proto3",
        dependency=["tensorflow/core/example/feature.proto"])
    example = proto.message_type.add(name="Example")
    _field(example, "features", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    sequence = proto.message_type.add(name="SequenceExample")
    _field(sequence, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(sequence, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    return proto


def _feature_bytes_file() -> descriptor_pb2.FileDescriptorProto:
    """``Example`` with ``Features.feature`` a map of key to the ``Feature``'s bytes."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="gradflow/example_feature_bytes.proto", package="gradflow", syntax="proto3")
    features = proto.message_type.add(name="FeaturesBytes")
    _map_entry(features, "FeatureEntry", "")
    _field(features, "feature", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           type_name=".gradflow.FeaturesBytes.FeatureEntry")
    example = proto.message_type.add(name="ExampleFeatureBytes")
    _field(example, "features", 1, _F.TYPE_MESSAGE, type_name=".gradflow.FeaturesBytes")
    return proto


# A pool of our own: a process that also imports TensorFlow keeps both without clashes.
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_feature_file())
_POOL.Add(_example_file())
_POOL.Add(_feature_bytes_file())


def _message(name: str):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"tensorflow.{name}"))


BytesList = _message("BytesList")
FloatList = _message("FloatList")
Int64List = _message("Int64List")
Feature = _message("Feature")
Features = _message("Features")
FeatureList = _message("FeatureList")
FeatureLists = _message("FeatureLists")
Example = _message("Example")
SequenceExample = _message("SequenceExample")
ExampleFeatureBytes = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("gradflow.ExampleFeatureBytes"))
