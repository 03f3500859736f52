"""TF1's namespace: ``import gradflow.compat.v1 as tf`` (names handed on, nothing defined).

Everything public in ``gradflow`` (ops, ``nn``, ``layers``, ``train``, ``summary``,
``app``, ``flags``, ``logging``, ``gfile``...) is reachable here under the same name:
a star import of a module without ``__all__`` hands on its submodules too.
"""
from gradflow import *  # noqa: F401,F403
