"""``gf.saved_model``: TF1-style SavedModels (``simple_save``, ``builder``, ``loader``,
``signature_def_utils``, ``utils``, ``tag_constants``, ``signature_constants``)."""
from gradflow.saved_model import (  # noqa: F401
    builder, loader, signature_constants, signature_def_utils, tag_constants, utils)
from gradflow.saved_model.builder import Builder, SavedModelBuilder  # noqa: F401
from gradflow.saved_model.loader import (  # noqa: F401
    contains_saved_model, load, maybe_saved_model_directory)
from gradflow.saved_model.signature_def_utils import (  # noqa: F401
    build_signature_def, is_valid_signature, predict_signature_def)
from gradflow.saved_model.simple_save import simple_save  # noqa: F401
from gradflow.saved_model.utils import (  # noqa: F401
    build_tensor_info, get_tensor_from_tensor_info)
from gradflow.saved_model.signature_constants import *  # noqa: F401,F403
from gradflow.saved_model.tag_constants import *  # noqa: F401,F403
