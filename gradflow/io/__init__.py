"""``gf.io``: file formats (GraphDef, event files) and ``gf.io.gfile``."""
from gradflow.io import gfile  # noqa: F401
from gradflow.io.graph_def import write_graph  # noqa: F401
