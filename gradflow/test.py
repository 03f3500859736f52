"""``gf.test``: gradient checking (``compute_gradient``) and TF1's test helpers."""
from gradflow.autodiff.checker import compute_gradient, compute_gradient_error  # noqa: F401
from gradflow.tools.testing import (  # noqa: F401
    TestCase, get_temp_dir, gpu_device_name, is_built_with_cuda, is_built_with_gpu_support,
    is_built_with_rocm, is_gpu_available, main)
