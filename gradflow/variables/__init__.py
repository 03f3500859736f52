"""The TF1 variable store: ``variable_scope``, ``get_variable`` and initializers.

Part of the TF1 API floor: built on the engine's public names, never imported by it.
"""
__all__: list = []
