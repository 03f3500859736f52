"""The string hashes behind TF's hash buckets, from their published algorithms.

- ``fingerprint64``: FarmHash's Fingerprint64 (the ``farmhashna`` 64-bit hash, which
  Google froze as a fingerprint), used by ``to_hash_bucket_fast``.
- ``murmur64``: MurmurHash64A with TF's seed ``0xDECAFCAFFE``, the older hash of
  ``to_hash_bucket``.
- ``siphash24``: SipHash-2-4 keyed by two 64-bit words, used by ``to_hash_bucket_strong``.

All work on ``bytes`` with Python integers masked to 64 bits.
"""
from __future__ import annotations

import struct

__all__ = ["fingerprint64", "murmur64", "siphash24"]

_MASK = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F
_KMUL = 0x9DDFEA08EB382D69


def _fetch64(data: bytes, at: int) -> int:
    return struct.unpack_from("<Q", data, at)[0]


def _fetch32(data: bytes, at: int) -> int:
    return struct.unpack_from("<I", data, at)[0]


def _rotate(value: int, shift: int) -> int:
    """Right rotation of a 64-bit word."""
    return value if shift == 0 else ((value >> shift) | (value << (64 - shift))) & _MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _hash_len16(u: int, v: int, mul: int = _KMUL) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _len0to16(data: bytes) -> int:
    n = len(data)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(data, 0) + _K2) & _MASK
        b = _fetch64(data, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(data, 0)
        return _hash_len16(n + (a << 3), _fetch32(data, n - 4), mul)
    if n > 0:
        y = (data[0] + (data[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (data[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _len17to32(data: bytes) -> int:
    n = len(data)
    mul = _K2 + n * 2
    a = (_fetch64(data, 0) * _K1) & _MASK
    b = _fetch64(data, 8)
    c = (_fetch64(data, n - 8) * mul) & _MASK
    d = (_fetch64(data, n - 16) * _K2) & _MASK
    return _hash_len16((_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
                       (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)


def _len33to64(data: bytes) -> int:
    n = len(data)
    mul = _K2 + n * 2
    a = (_fetch64(data, 0) * _K2) & _MASK
    b = _fetch64(data, 8)
    c = (_fetch64(data, n - 8) * mul) & _MASK
    d = (_fetch64(data, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(data, 16) * mul) & _MASK
    f = _fetch64(data, 24)
    g = ((y + _fetch64(data, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(data, n - 24)) * mul) & _MASK
    return _hash_len16((_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
                       (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak32(data: bytes, at: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = struct.unpack_from("<4Q", data, at)
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(data: bytes) -> int:
    """FarmHash Fingerprint64 of ``data`` (an unsigned 64-bit integer)."""
    n = len(data)
    if n <= 16:
        return _len0to16(data)
    if n <= 32:
        return _len17to32(data)
    if n <= 64:
        return _len33to64(data)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _fetch64(data, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    at = 0
    while at != end:  # 64-byte blocks; the last (overlapping) block is mixed below
        x = (_rotate((x + y + v0 + _fetch64(data, at + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v1 + _fetch64(data, at + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w1
        y = (y + v0 + _fetch64(data, at + 40)) & _MASK
        z = (_rotate((z + w0) & _MASK, 33) * _K1) & _MASK
        v0, v1 = _weak32(data, at, (v1 * _K1) & _MASK, (x + w0) & _MASK)
        w0, w1 = _weak32(data, at + 32, (z + w1) & _MASK, (y + _fetch64(data, at + 16)) & _MASK)
        z, x = x, z
        at += 64
    mul = _K1 + ((z & 0xFF) << 1)
    at = last64
    w0 = (w0 + ((n - 1) & 63)) & _MASK
    v0 = (v0 + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    x = (_rotate((x + y + v0 + _fetch64(data, at + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v1 + _fetch64(data, at + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w1 * 9) & _MASK
    y = (y + v0 * 9 + _fetch64(data, at + 40)) & _MASK
    z = (_rotate((z + w0) & _MASK, 33) * mul) & _MASK
    v0, v1 = _weak32(data, at, (v1 * mul) & _MASK, (x + w0) & _MASK)
    w0, w1 = _weak32(data, at + 32, (z + w1) & _MASK, (y + _fetch64(data, at + 16)) & _MASK)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _MASK,
                       (_hash_len16(v1, w1, mul) + x) & _MASK, mul)


_MURMUR_M = 0xC6A4A7935BD1E995
_TF_SEED = 0xDECAFCAFFE


def murmur64(data: bytes, seed: int = _TF_SEED) -> int:
    """MurmurHash64A of ``data`` with ``seed`` (TF's default seed)."""
    n = len(data)
    h = (seed ^ (n * _MURMUR_M)) & _MASK
    blocks = n // 8
    for (k,) in struct.iter_unpack("<Q", data[:blocks * 8]):
        k = (k * _MURMUR_M) & _MASK
        k ^= k >> 47
        k = (k * _MURMUR_M) & _MASK
        h ^= k
        h = (h * _MURMUR_M) & _MASK
    tail = data[blocks * 8:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * _MURMUR_M) & _MASK
    h ^= h >> 47
    h = (h * _MURMUR_M) & _MASK
    return h ^ (h >> 47)


def _sip_round(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _MASK
    v1 = ((v1 << 13) | (v1 >> 51)) & _MASK ^ v0
    v0 = ((v0 << 32) | (v0 >> 32)) & _MASK
    v2 = (v2 + v3) & _MASK
    v3 = ((v3 << 16) | (v3 >> 48)) & _MASK ^ v2
    v0 = (v0 + v3) & _MASK
    v3 = ((v3 << 21) | (v3 >> 43)) & _MASK ^ v0
    v2 = (v2 + v1) & _MASK
    v1 = ((v1 << 17) | (v1 >> 47)) & _MASK ^ v2
    v2 = ((v2 << 32) | (v2 >> 32)) & _MASK
    return v0, v1, v2, v3


def siphash24(key0: int, key1: int, data: bytes) -> int:
    """SipHash-2-4 of ``data`` under the 128-bit key ``(key0, key1)``."""
    v0 = key0 ^ 0x736F6D6570736575
    v1 = key1 ^ 0x646F72616E646F6D
    v2 = key0 ^ 0x6C7967656E657261
    v3 = key1 ^ 0x7465646279746573
    n = len(data)
    padded = data + b"\0" * (7 - n % 8) + bytes([n & 0xFF])
    for (m,) in struct.iter_unpack("<Q", padded):
        v3 ^= m
        for _ in range(2):
            v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
