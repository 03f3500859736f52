"""``gf.saved_model.simple_save``: a serving SavedModel in one call."""
from __future__ import annotations

from gradflow.saved_model import signature_constants, tag_constants
from gradflow.saved_model.builder import SavedModelBuilder
from gradflow.saved_model.signature_def_utils import predict_signature_def

__all__ = ["simple_save"]


def simple_save(session, export_dir: str, inputs: dict, outputs: dict,
                legacy_init_op=None) -> None:
    """Saves ``session``'s graph and variables under the ``serve`` tag with one predict
    signature (``serving_default``) from the ``inputs``/``outputs`` tensor dicts."""
    signature = predict_signature_def(inputs=inputs, outputs=outputs)
    builder = SavedModelBuilder(export_dir)
    builder.add_meta_graph_and_variables(
        session, [tag_constants.SERVING], clear_devices=True,
        signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature},
        main_op=legacy_init_op)
    builder.save()
