"""``gf.saved_model.signature_constants``: TF Serving's signature keys and method names."""
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
PREDICT_INPUTS = "inputs"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
PREDICT_OUTPUTS = "outputs"
REGRESS_INPUTS = "inputs"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
REGRESS_OUTPUTS = "outputs"

__all__ = ["DEFAULT_SERVING_SIGNATURE_DEF_KEY", "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME",
           "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "PREDICT_INPUTS",
           "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS", "REGRESS_INPUTS", "REGRESS_METHOD_NAME",
           "REGRESS_OUTPUTS"]
