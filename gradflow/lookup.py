"""``gf.lookup``: lookup tables under their ``tf.lookup`` names."""
from gradflow.ops.lookup_ops import (  # noqa: F401
    KeyValueTensorInitializer, StaticHashTable, StaticVocabularyTable, TextFileIndex,
    TextFileInitializer)
