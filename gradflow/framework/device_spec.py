"""Device names as TF1 spells, parses and merges them (``tf.DeviceSpec``).

A device name is a sequence of ``/job:<name>``, ``/replica:<int>``, ``/task:<int>`` and
one device: ``/device:<TYPE>:<index or *>``, or the short ``/cpu:0``, ``/GPU:1``,
``gpu`` forms. The canonical string is ``/job:x/replica:0/task:0/device:GPU:1``, with
the fields that are set, in that order. Merging lets the inner spec's set fields
override the outer's, field by field.

A device scope may also be a function of the op (``replica_device_setter``). Nested
scopes then apply innermost first, as TF1's graph does: a string fills the fields the
device so far leaves unset, a function gets the op carrying the device so far and
returns the new one (a string, kept as spelled, or a DeviceSpec), and ``None`` stops
the scopes outside it from applying.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

__all__ = ["DeviceSpec", "parse_device", "merge_device", "nest_device",
           "NestedDeviceFunction"]

# Device types that may be written without ``device:`` (``/cpu:0``, ``GPU``).
_SHORT_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})


class DeviceSpec:
    """A (possibly partial) device: job, replica, task, device type and index."""

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job: Optional[str] = None, replica: Optional[int] = None,
                 task: Optional[int] = None, device_type: Optional[str] = None,
                 device_index: Optional[int] = None):
        self.job = None if job is None else str(job)
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = _canonical_type(device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        """Parses ``spec`` (any TF1 spelling); ValueError names a part it cannot read."""
        return cls().parse_from_string(spec)

    def parse_from_string(self, spec: str) -> "DeviceSpec":
        """Sets the fields that ``spec`` names (TF1's mutating ``DeviceSpecV1`` method)."""
        if not isinstance(spec, str):
            raise TypeError(f"Device specification must be a string or function, got {spec!r}")
        seen_type = False
        for part in spec.split("/"):
            pieces = part.split(":")
            count, key = len(pieces), pieces[0]
            if count == 2 and key in ("job", "replica", "task"):
                setattr(self, key, pieces[1] if key == "job" else int(pieces[1]))
            elif count in (1, 2) and key.upper() in _SHORT_DEVICE_TYPES:
                seen_type = self._set_device(spec, seen_type, key,
                                             pieces[1] if count == 2 else "*")
            elif count == 3 and key == "device":
                seen_type = self._set_device(spec, seen_type, pieces[1], pieces[2])
            elif key:
                raise ValueError(f"Unknown attribute '{key}' is encountered while parsing the "
                                 f"device spec: '{spec}'.")
        return self

    def _set_device(self, spec: str, seen_type: bool, device_type: str, index: str) -> bool:
        if seen_type:
            raise ValueError(f"Multiple device types are not allowed while parsing the device "
                             f"spec: {spec}.")
        self.device_type = _canonical_type(device_type)
        self.device_index = None if index == "*" else int(index)
        return True

    def merge_from(self, dev: "DeviceSpec") -> None:
        """Takes every field that ``dev`` sets (TF1's mutating ``DeviceSpecV1`` method)."""
        for field in self.__slots__:
            value = getattr(dev, field)
            if value is not None:
                setattr(self, field, value)

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        """A new spec: this one with ``dev``'s set fields taking precedence."""
        merged = self.replace()
        merged.merge_from(dev)
        return merged

    def replace(self, **kwargs) -> "DeviceSpec":
        """A copy with the given fields changed."""
        fields = {field: getattr(self, field) for field in self.__slots__}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"DeviceSpec has no fields {sorted(unknown)}")
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def to_string(self) -> str:
        """The canonical name: ``/job:x/replica:0/task:0/device:GPU:1`` (set fields only)."""
        parts = [f"/{field}:{getattr(self, field)}" for field in ("job", "replica", "task")
                 if getattr(self, field) is not None]
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<DeviceSpec {self.to_string()!r}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())


def _canonical_type(device_type: Optional[str]) -> Optional[str]:
    if device_type is None:
        return None
    return device_type.upper() if device_type.upper() in ("CPU", "GPU") else device_type


def parse_device(spec: Union[str, DeviceSpec]) -> DeviceSpec:
    """A DeviceSpec from a device string or spec (a copy: the argument is not changed)."""
    if isinstance(spec, DeviceSpec):
        return spec.replace()
    return DeviceSpec.from_string(spec)


def merge_device(outer: Union[str, DeviceSpec], inner: Union[str, DeviceSpec]) -> str:
    """The canonical name of ``inner`` placed within ``outer`` (inner fields win)."""
    return parse_device(outer).make_merged_spec(parse_device(inner)).to_string()


DeviceScope = Union[str, Callable]


class NestedDeviceFunction:
    """The device of nested scopes some of which are functions: the layers, outermost
    first, applied innermost first (see the module docstring). Graphs call it with the
    new op and set the op's device to the result."""

    __slots__ = ("layers",)

    def __init__(self, layers: tuple):
        self.layers = layers

    def __call__(self, op) -> str:
        device = op.device
        for layer in reversed(self.layers):
            if callable(layer):
                op._set_device(device)
                device = layer(op)
                device = device.to_string() if isinstance(device, DeviceSpec) else device or ""
            else:
                device = merge_device(layer, device)
        return device


def nest_device(outer: DeviceScope, inner) -> DeviceScope:
    """The device scope ``inner`` (a string, DeviceSpec, function or None) opened within
    ``outer`` (a device string or a function made by this): a string while every layer
    is one, else a :class:`NestedDeviceFunction`."""
    if inner is None:
        return ""
    if not callable(inner):
        if isinstance(outer, NestedDeviceFunction) and not callable(outer.layers[-1]):
            return NestedDeviceFunction(outer.layers[:-1] +
                                        (merge_device(outer.layers[-1], inner),))
        if not callable(outer):
            return merge_device(outer, inner)
        return NestedDeviceFunction((outer, parse_device(inner).to_string()))
    if isinstance(outer, NestedDeviceFunction):
        return NestedDeviceFunction(outer.layers + (inner,))
    return NestedDeviceFunction(((outer,) if outer else ()) + (inner,))
