"""``gf.saved_model.signature_def_utils``: ``SignatureDef`` protos for serving."""
from __future__ import annotations

from typing import Optional

from tensorboard.compat.proto import meta_graph_pb2

from gradflow.saved_model import signature_constants
from gradflow.saved_model.utils import build_tensor_info

__all__ = ["build_signature_def", "predict_signature_def", "is_valid_signature"]


def build_signature_def(inputs: Optional[dict] = None, outputs: Optional[dict] = None,
                        method_name: Optional[str] = None) -> meta_graph_pb2.SignatureDef:
    """A SignatureDef from ``TensorInfo`` dicts and a method name."""
    signature = meta_graph_pb2.SignatureDef()
    for key, info in (inputs or {}).items():
        signature.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        signature.outputs[key].CopyFrom(info)
    if method_name is not None:
        signature.method_name = method_name
    return signature


def predict_signature_def(inputs: dict, outputs: dict) -> meta_graph_pb2.SignatureDef:
    """A predict SignatureDef from dicts of tensors."""
    if inputs is None or not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def(
        {key: build_tensor_info(t) for key, t in inputs.items()},
        {key: build_tensor_info(t) for key, t in outputs.items()},
        signature_constants.PREDICT_METHOD_NAME)


def is_valid_signature(signature_def) -> bool:
    """Whether ``signature_def`` is a well-formed predict, classify or regress signature."""
    if signature_def is None or not signature_def.method_name:
        return False
    if signature_def.method_name == signature_constants.PREDICT_METHOD_NAME:
        return bool(signature_def.inputs) and bool(signature_def.outputs)
    return signature_def.method_name in (signature_constants.CLASSIFY_METHOD_NAME,
                                         signature_constants.REGRESS_METHOD_NAME) \
        and bool(signature_def.inputs) and bool(signature_def.outputs)
