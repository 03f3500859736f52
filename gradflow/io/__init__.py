"""gradflow's file formats: GraphDef/MetaGraph/SavedModel, checkpoints (tensor bundles),
TFRecord files, event files, gradflow's own JSON/NPZ, and the ``gfile`` API.

Import the modules (``from gradflow.io import tfrecord``); TF1's public ``tf.io`` names
are in ``gradflow/io_namespace.py``, which ``gf.io`` is.
"""
