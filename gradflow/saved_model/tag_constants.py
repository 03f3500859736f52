"""``gf.saved_model.tag_constants``: the tags naming a SavedModel's MetaGraphs."""
SERVING = "serve"
TRAINING = "train"
EVAL = "eval"
GPU = "gpu"
TPU = "tpu"

__all__ = ["SERVING", "TRAINING", "EVAL", "GPU", "TPU"]
