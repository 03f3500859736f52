"""TF1's namespace: ``import gradflow.compat.v1 as tf`` (names handed on, nothing defined).

Everything public in ``gradflow`` (ops, ``nn``, ``layers``, ``train``, ``summary``,
``app``, ``flags``, ``logging``, ``gfile``...) is reachable here under the same name:
the star import hands on what exists when this module loads (submodules included), and
``__getattr__`` what the package gains afterwards.
"""
import gradflow as _gradflow
from gradflow import *  # noqa: F401,F403
# TF2's switches back to TF1, which TF1 programs ported to TF2 call first.
from gradflow.compat import disable_eager_execution as disable_eager_execution
from gradflow.compat import disable_resource_variables as disable_resource_variables
from gradflow.compat import disable_v2_behavior as disable_v2_behavior
from gradflow.compat import executing_eagerly as executing_eagerly


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(_gradflow, name)
    except AttributeError:
        raise AttributeError(f"module 'gradflow.compat.v1' has no attribute '{name}'") from None


def __dir__() -> list:
    return sorted(set(globals()) | {n for n in dir(_gradflow) if not n.startswith("_")})
