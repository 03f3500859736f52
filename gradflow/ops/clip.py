"""Clipping by norm: ``clip_by_norm``, ``clip_by_global_norm``, ``global_norm`` (TF1 names)."""
__all__: list = []
