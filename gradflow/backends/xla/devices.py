"""Placing clusters on JAX devices, as ``tf.device`` asks.

An op's device request (``with tf.device("/gpu:0")``, ``/device:XLA_GPU:0``,
``/cpu:1``) decides where its cluster runs: ops of different requests never share a
cluster (``cluster.py`` keys its scopes by ``device_key``). A cluster asking for a GPU
runs on JAX's GPU of that index, one asking for a CPU on JAX's CPU device of that
index (several with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``); one
asking for nothing on JAX's default device. When JAX has no such device the run
raises TF's InvalidArgumentError ("Cannot assign a device for operation ..."), unless
the session's ``ConfigProto`` sets ``allow_soft_placement``: then the cluster runs on
the default device, as TF places such ops.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import errors
from gradflow.framework.device_spec import DeviceSpec

__all__ = ["device_key", "Placement", "placement"]

_KINDS = {"GPU": "GPU", "XLA_GPU": "GPU", "CPU": "CPU", "XLA_CPU": "CPU"}


def device_key(op) -> str:
    """``"GPU:0"``-like: the kind and index of JAX device the op asks for ('' for none)."""
    if not op._device:
        return ""
    try:
        spec = DeviceSpec.from_string(op._device)
    except ValueError:
        return ""
    kind = _KINDS.get((spec.device_type or "").upper())
    return "" if kind is None else f"{kind}:{spec.device_index or 0}"


def _tf_name(kind: str, index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:XLA_{kind}:{index}"


class Placement:
    """Where a cluster runs: a JAX device (None: JAX's default) and its TF name; for a
    requested device JAX lacks, the request and the devices there are."""

    __slots__ = ("device", "name", "missing", "available")

    def __init__(self, device, name: str, missing: Optional[str] = None,
                 available: tuple = ()):
        self.device = device
        self.name = name
        self.missing = missing
        self.available = available

    def check(self, ctx, op) -> None:
        """Raises TF's error for a missing device, unless the session allows soft placement."""
        if self.missing is None:
            return
        config = ctx.session.config
        if config is not None and config.allow_soft_placement:
            return
        raise errors.InvalidArgumentError(
            None, op, f"Cannot assign a device for operation {op.name}: {{{{node {op.name}}}}} "
            f"was explicitly assigned to {self.missing} but available devices are "
            f"[ {', '.join(self.available)} ]. Make sure the device specification refers to a "
            f"valid device.")


def placement(jax, key: str, default_name: str) -> Placement:
    """The placement of a cluster whose ops ask for ``key`` (see ``device_key``)."""
    if not key:
        return Placement(None, default_name)
    kind, index = key.split(":")
    devices = _devices(jax, kind)
    if int(index) < len(devices):
        return Placement(devices[int(index)], _tf_name(kind, int(index)))
    available = ("/job:localhost/replica:0/task:0/device:CPU:0",) + tuple(  # NumPy's, XLA's
        _tf_name(k, i) for k in ("CPU", "GPU") for i in range(len(_devices(jax, k))))
    return Placement(None, default_name, f"/device:{kind}:{index}", available)


def _devices(jax, kind: str) -> list:
    try:
        return jax.devices(kind.lower())
    except RuntimeError:  # JAX has no backend of that kind
        return []
