"""Just enough of the protobuf wire format to read two files without protobuf: sentencepiece's
ModelProto (train/tokenizer/sp_model.py) and TensorBoard's event records (train/record/tfevents.py)."""
from __future__ import annotations


class WireFormatError(ValueError):
    """The bytes are not a protobuf message (truncated, or a wire type this reader does not know)."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the base-128 varint at `pos`."""
    shift = value = 0
    while True:
        if pos >= len(buf):
            raise WireFormatError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes):
    """Yield (field number, wire type, value) of one message; value is int, bytes or a 4/8-byte blob."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            value, pos = varint(buf, pos)
        elif wt == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise WireFormatError(f"unsupported protobuf wire type {wt}")
        if pos > len(buf):
            raise WireFormatError("truncated field")
        yield num, wt, value
