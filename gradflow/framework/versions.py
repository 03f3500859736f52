"""Version constants TF1 programs print (``tf.VERSION``, ``tf.GIT_VERSION``...).

They describe gradflow, not a TensorFlow build: claiming TF's numbers would be a lie.
``GRAPH_DEF_VERSION`` is the producer version gradflow writes into GraphDefs, and the
two ``MIN`` versions bound what its GraphDef reader accepts.
"""
from __future__ import annotations

import platform

__all__ = ["VERSION", "GIT_VERSION", "COMPILER_VERSION", "CXX_VERSION", "CXX11_ABI_FLAG",
           "MONOLITHIC_BUILD", "GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER",
           "GRAPH_DEF_VERSION_MIN_PRODUCER"]

VERSION = "0.1.0"
# gradflow is pure Python: no git stamp is compiled in, and no C++ compiler built it.
GIT_VERSION = "unknown"
COMPILER_VERSION = platform.python_compiler()
CXX_VERSION = 0
CXX11_ABI_FLAG = 0
MONOLITHIC_BUILD = 0
GRAPH_DEF_VERSION = 1994
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
