"""Scalars out of TensorBoard event files (``events.out.tfevents.*``), without TensorFlow or tensorboard.

An event file is a TFRecord stream: per record a little-endian uint64 length, a masked CRC-32C of those 8
bytes, the payload, and a masked CRC-32C of the payload. Each payload is an ``Event`` protocol buffer; the
fields read here (from tensorflow/core/util/event.proto and framework/summary.proto, tensor.proto):

    Event         wall_time = 1 (double), step = 2 (int64), summary = 5 (Summary)
    Summary       value = 1 (repeated Value)
    Value         tag = 1, simple_value = 2 (float), tensor = 8 (TensorProto), metadata = 9
    TensorProto   dtype = 1, tensor_shape = 2, tensor_content = 4, float_val = 5, double_val = 6,
                  int_val = 7, int64_val = 10, half_val = 13

Old-style writers (torch's ``SummaryWriter.add_scalar``, tensorboardX) store ``simple_value``; TF2's
``tf.summary.scalar`` and ``add_scalar(new_style=True)`` store a one-element float tensor. Both are read;
tensors with more than one element (histograms, images, text) are not scalars and are skipped.

A torn last record (a writer killed mid-write) ends the file quietly; a record whose CRC does not match is
skipped and counted. The decoder is a plain protobuf wire-format reader: varints, 64-bit, length-delimited
and 32-bit fields, unknown fields skipped (train/export/hf_tokenizer.py's, shared).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

# (field, wire type, value) of a message; a truncated or unknown field raises WireFormatError (a ValueError).
from train.tokenizer.protowire import fields, varint

# ------------------------------------------------------------------------------------------------ CRC-32C

_CRC_TABLE: list[int] = []


def _table() -> list[int]:
    if not _CRC_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC_TABLE.append(c)
    return _CRC_TABLE


def crc32c(data: bytes) -> int:
    t, c = _table(), 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ------------------------------------------------------------------------------------------- wire format

def _packed(v, wt: int, fmt: str, size: int) -> list[float]:
    """Repeated numeric field: packed (one length-delimited blob) or one element."""
    if wt == 2:
        return list(struct.unpack(f"<{len(v) // size}{fmt}", v[:len(v) // size * size]))
    return list(struct.unpack(f"<{fmt}", v))


def _packed_varints(v, wt: int, signed64: bool = True) -> list[int]:
    if wt == 0:
        vals = [v]
    else:
        vals, i = [], 0
        while i < len(v):
            x, i = varint(v, i)
            vals.append(x)
    return [x - (1 << 64) if signed64 and x >= 1 << 63 else x for x in vals]


# TensorProto dtypes (tensorflow/core/framework/types.proto) with a numeric tensor_content layout.
_CONTENT = {1: ("f", 4), 2: ("d", 8), 3: ("i", 4), 9: ("q", 8), 19: ("e", 2)}


def _tensor_scalar(buf: bytes) -> float | None:
    """The value of a one-element numeric tensor, else None."""
    dtype, vals = None, []
    for num, wt, v in fields(buf):
        if num == 1 and wt == 0:
            dtype = v
        elif num == 4 and wt == 2 and dtype in _CONTENT:
            fmt, size = _CONTENT[dtype]
            vals += list(struct.unpack(f"<{len(v) // size}{fmt}", v[:len(v) // size * size]))
        elif num == 5:
            vals += _packed(v, wt, "f", 4)
        elif num == 6:
            vals += _packed(v, wt, "d", 8)
        elif num in (7, 10):
            vals += [float(x) for x in _packed_varints(v, wt)]
        elif num == 13:
            vals += [struct.unpack("<e", struct.pack("<H", x & 0xFFFF))[0] for x in _packed_varints(v, wt)]
        elif num == 4 and wt == 2 and dtype is not None and dtype not in _CONTENT:
            return None                                   # strings, bools, complex: not a scalar curve
    if dtype is not None and dtype not in _CONTENT and dtype != 14:
        return None
    return float(vals[0]) if len(vals) == 1 else None


def _value(buf: bytes) -> tuple[str, float] | None:
    tag, val = None, None
    for num, wt, v in fields(buf):
        if num == 1 and wt == 2:
            tag = v.decode("utf-8", errors="replace")
        elif num == 2 and wt == 5:
            val = struct.unpack("<f", v)[0]
        elif num == 8 and wt == 2:
            val = _tensor_scalar(v)
    return (tag, val) if tag is not None and val is not None else None


@dataclass
class Scalar:
    tag: str
    step: int
    value: float
    wall_time: float


def parse_event(buf: bytes) -> list[Scalar]:
    wall, step, values = 0.0, 0, []
    for num, wt, v in fields(buf):
        if num == 1 and wt == 1:
            wall = struct.unpack("<d", v)[0]
        elif num == 2 and wt == 0:
            step = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 5 and wt == 2:
            for n2, w2, v2 in fields(v):
                if n2 == 1 and w2 == 2 and (tv := _value(v2)) is not None:
                    values.append(tv)
    return [Scalar(tag, step, val, wall) for tag, val in values]


def read_records(path: str | Path) -> tuple[list[bytes], int]:
    """(payloads, records skipped for a CRC mismatch) of one TFRecord file; a torn tail ends it."""
    data = Path(path).read_bytes()
    out, bad, i = [], 0, 0
    while i + 12 <= len(data):
        head = data[i:i + 8]
        (n,) = struct.unpack("<Q", head)
        (hcrc,) = struct.unpack("<I", data[i + 8:i + 12])
        if masked_crc(head) != hcrc:
            bad += 1                         # the framing itself is broken: nothing after it can be trusted
            break
        end = i + 12 + n + 4
        if end > len(data):
            break                            # torn last record
        payload = data[i + 12:i + 12 + n]
        (dcrc,) = struct.unpack("<I", data[i + 12 + n:end])
        if masked_crc(payload) == dcrc:
            out.append(payload)
        else:
            bad += 1
        i = end
    return out, bad


def read_scalars(path: str | Path) -> tuple[list[Scalar], int]:
    """(scalars in file order, records skipped) of one event file."""
    scalars, bad = [], 0
    payloads, bad = read_records(path)
    for p in payloads:
        try:
            scalars += parse_event(p)
        except (ValueError, struct.error):
            bad += 1
    return scalars, bad
