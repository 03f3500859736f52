"""CRC-32C (Castagnoli), the checksum of TF's checkpoint and table files, on NumPy.

A CRC is serial, so a long buffer is cut into many equal chunks whose CRCs advance
together, one byte per NumPy step, and are then joined: appending ``n`` bytes to a
message transforms its CRC linearly (a 32x32 matrix over GF(2)), so the chunk CRCs are
folded left to right with the matrix for "shift by one chunk". ``mask``/``unmask`` are the
rotation TF applies to a CRC stored next to the data it covers.
"""
from __future__ import annotations

import numpy as np

__all__ = ["crc32c", "crc32c_rows", "mask", "unmask"]

_POLY = 0x82F63B78  # reflected Castagnoli polynomial
_MASK_DELTA = 0xA282EAD8
_CHUNKS = 4096  # chunks advanced together on long buffers


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1)
    return table.astype(np.uint32)


_TABLE = _byte_table()


def _advance(states: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The raw CRC states after feeding each row of ``columns`` (shape ``[k, n]``)."""
    for j in range(columns.shape[1]):
        states = _TABLE[(states ^ columns[:, j]) & 0xFF] ^ (states >> 8)
    return states


def _zeros_matrix(count: int) -> list[int]:
    """The GF(2) matrix (32 column ints) taking a raw CRC past ``count`` zero bytes."""
    one_bit = [int(_advance(np.array([1 << i], np.uint32),
                            np.zeros((1, 1), np.uint8))[0]) for i in range(32)]
    result = [1 << i for i in range(32)]  # identity
    power = one_bit
    while count:
        if count & 1:
            result = [_apply(power, column) for column in result]
        power = [_apply(power, column) for column in power]
        count >>= 1
    return result


def _apply(matrix: list[int], vector: int) -> int:
    out = 0
    bit = 0
    while vector:
        if vector & 1:
            out ^= matrix[bit]
        vector >>= 1
        bit += 1
    return out


def _byte_tables(matrix: list[int]) -> list[np.ndarray]:
    """``matrix`` as four 256-entry tables, one per byte of the vector it multiplies."""
    tables = []
    for byte in range(4):
        tables.append(np.array([_apply(matrix, v << (8 * byte)) for v in range(256)],
                               np.uint32))
    return tables


def _raw(data: np.ndarray, state: int) -> int:
    """The raw (no final inversion) CRC of ``data`` starting from ``state``."""
    n = data.size
    if n < 4 * _CHUNKS:
        return int(_advance(np.array([state], np.uint32), data.reshape(1, -1))[0])
    width = -(-n // _CHUNKS)
    # Zero bytes in front leave a raw CRC that starts at 0 unchanged.
    padded = np.concatenate([np.zeros(width * _CHUNKS - n, np.uint8), data])
    chunk_crcs = _advance(np.zeros(_CHUNKS, np.uint32), padded.reshape(_CHUNKS, width))
    shift = _byte_tables(_zeros_matrix(width))
    total = 0
    for value in chunk_crcs.tolist():
        total = int(shift[0][total & 0xFF] ^ shift[1][(total >> 8) & 0xFF]
                    ^ shift[2][(total >> 16) & 0xFF] ^ shift[3][total >> 24]) ^ value
    # The starting state travels past all n bytes.
    return total ^ _apply(_zeros_matrix(n), state)


def crc32c(data) -> int:
    """The CRC-32C of ``data`` (bytes-like)."""
    array = np.frombuffer(memoryview(data).cast("B"), np.uint8)
    return _raw(array, 0xFFFFFFFF) ^ 0xFFFFFFFF


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """The CRC-32C of each row of a ``[k, n]`` uint8 array (uint32), the rows advanced
    together: many short buffers of one length cost ``n`` NumPy steps in all."""
    states = np.full(rows.shape[0], 0xFFFFFFFF, np.uint32)
    return _advance(states, rows) ^ np.uint32(0xFFFFFFFF)


def mask(crc: int) -> int:
    """TF's masked form of a CRC stored beside the bytes it covers."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """The CRC behind a masked one."""
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF
