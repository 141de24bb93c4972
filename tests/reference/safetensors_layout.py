"""The byte layout of a safetensors file, shared by the golden-file scripts here.

The `safetensors` package is not packaged for Debian, so make_safetensors_golden.py and
make_fp8_safetensors_golden.py lay their files out by hand, exactly as the reference serializer
(huggingface/safetensors, safetensors/src/tensor.rs, `prepare`) does:
  * tensors ordered by decreasing position of their dtype in the reference's Dtype enum (the
    callers give each dtype's position), then by name (byte order of the UTF-8 name);
  * the header is serde_json's compact output of {"__metadata__": {...}, name: {"dtype",
    "shape", "data_offsets"}, ...} in that order (separators ',' ':', non-ASCII verbatim,
    control characters escaped), padded with spaces to a multiple of 8 bytes;
  * an 8-byte little-endian header length, the header, then each tensor's raw little-endian
    bytes, back to back.
"""
import json
import struct


def serialize(entries, metadata=None):
    """The file's bytes. entries: (name, dtype name, rank of the dtype in the reference's Dtype
    enum, shape, raw bytes) for each tensor, in any order; metadata: a str -> str dict or None."""
    items = sorted(entries, key=lambda e: (-e[2], e[0].encode()))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for name, dtype, _, shape, data in items:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(e[4] for e in items)
