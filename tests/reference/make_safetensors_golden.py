#!/usr/bin/python3
"""Writes tests/data/golden_small.safetensors and its sidecar golden_small.txt.

Run with Debian's python3-torch (scripts/setup.sh --reference):

    /usr/bin/python3 tests/reference/make_safetensors_golden.py          # regenerate
    /usr/bin/python3 tests/reference/make_safetensors_golden.py --verify FILE

The `safetensors` package is not packaged for Debian, so this script lays the file out by hand
(the file is NOT written by the safetensors library, and says so in its __metadata__
"written_by") exactly as the reference serializer does (safetensors_layout.py), with the
reference's Dtype enum order I64 > F64 > F32 > BF16 > F16 > BOOL.
The values come from torch (its own fp32 -> fp16/bf16 rounding), and the sidecar lists every
element's raw bits, so the C++ test compares bit for bit. The file is read back with a reader
that applies the reference loader's checks (`read_safetensors`), and `--verify FILE` applies it
to any file (for instance one written by amp::save) and compares it with the golden tensors.
"""

import argparse
import json
import math
import os
import struct
import sys

import torch

import safetensors_layout

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(os.path.dirname(HERE), "data")
GOLDEN = os.path.join(DATA_DIR, "golden_small.safetensors")
SIDECAR = os.path.join(DATA_DIR, "golden_small.txt")
# "format": what transformers' save_pretrained writes. "written_by": the file's provenance, in
# the file itself. Keys in byte order, the order amp::save writes a std::map in.
METADATA = {
    "format": "pt",
    "written_by": "tests/reference/make_safetensors_golden.py: values from torch, layout by a "
                  "hand-written serializer following safetensors/src/tensor.rs; not written by "
                  "the safetensors library",
}

# safetensors name, element size, rank in the reference's Dtype enum, bit-view dtype
DTYPES = {
    torch.int64: ("I64", 8, 13, torch.int64),
    torch.float64: ("F64", 8, 12, torch.int64),
    torch.float32: ("F32", 4, 11, torch.int32),
    torch.bfloat16: ("BF16", 2, 8, torch.int16),
    torch.float16: ("F16", 2, 7, torch.int16),
    torch.bool: ("BOOL", 1, 0, torch.bool),
}
BY_NAME = {v[0]: k for k, v in DTYPES.items()}


def golden_tensors():
    """Deterministic values: every dtype, special values, a 0-d and empty tensors."""
    f32 = torch.float32
    return {
        "layer.0.weight": (torch.arange(12, dtype=torch.float64) / 7 - 0.5).to(f32).reshape(3, 4),
        "layer.0.bias": torch.tensor([0.1, -0.2, 0.3], dtype=f32),
        "special.f32": torch.tensor(
            [math.inf, -math.inf, math.nan, -0.0, 1.401298464324817e-45, 3.4028234663852886e38],
            dtype=f32),
        "half": torch.linspace(-3, 3, 10, dtype=f32).to(torch.float16).reshape(2, 5),
        "special.f16": torch.tensor([65504.0, 2.0 ** -24, 70000.0, math.nan, -0.0],
                                    dtype=f32).to(torch.float16),
        "brain": (torch.arange(6, dtype=f32) / 3).to(torch.bfloat16).reshape(2, 3),
        "special.bf16": torch.tensor([3.4e38, 1e-40, math.inf, -1.0 / 3.0], dtype=f32)
                        .to(torch.bfloat16),
        "f64": torch.tensor([[math.pi, math.e], [-1e300, 5e-324]], dtype=torch.float64),
        "i64": torch.tensor([-2 ** 63, -1, 0, 1, 2 ** 63 - 1], dtype=torch.int64),
        "mask": torch.tensor([[True, False, True], [False, False, True]]),
        "scalar": torch.tensor(2.5, dtype=f32),
        "bn.num_batches_tracked": torch.tensor(7, dtype=torch.int64),
        "empty": torch.zeros(0, 3, dtype=f32),
        "empty.bf16": torch.zeros(4, 0, dtype=torch.bfloat16),
        "empty.bool": torch.zeros(0, dtype=torch.bool),
        # A name that needs JSON escapes (quote, backslash, tab, U+0001) and non-ASCII text.
        'name "quoted"\\\t\x01 caf\u00e9 \u03bb': torch.tensor([1.5, -2.25], dtype=torch.float64),
    }


def raw_bytes(t):
    """Little-endian bytes of a tensor in row-major order."""
    bits = t.contiguous().view(DTYPES[t.dtype][3]).reshape(-1)
    arr = bits.numpy()
    if t.dtype != torch.bool:
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr.tobytes()


def element_bits(t):
    """Each element's raw bits as an unsigned integer."""
    size = DTYPES[t.dtype][1]
    data = raw_bytes(t)
    return [int.from_bytes(data[i:i + size], "little") for i in range(0, len(data), size)]


def serialize(tensors, metadata=None):
    """The bytes the reference serializer produces for `tensors` (name -> torch.Tensor)."""
    return safetensors_layout.serialize(
        [(name, DTYPES[t.dtype][0], DTYPES[t.dtype][2], t.shape, raw_bytes(t))
         for name, t in tensors.items()], metadata)


def read_safetensors(path):
    """Reads a file with the reference loader's checks; returns (tensors, metadata)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError("HeaderTooSmall")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > 100_000_000:
        raise ValueError("HeaderTooLarge")
    if 8 + n > len(buf):
        raise ValueError("InvalidHeaderLength")
    text = buf[8:8 + n].decode("utf-8")
    if not text.startswith("{"):
        raise ValueError("InvalidHeaderStart")
    header = json.loads(text)
    metadata = header.pop("__metadata__", None)
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    data = buf[8 + n:]
    start = 0
    tensors = {}
    for name, info in entries:
        s, e = info["data_offsets"]
        if s != start or e < s:
            raise ValueError(f"InvalidOffset({name})")
        start = e
        dtype = BY_NAME[info["dtype"]]
        numel = math.prod(info["shape"])
        if e - s != numel * DTYPES[dtype][1]:
            raise ValueError("TensorInvalidInfo")
        chunk = bytearray(data[s:e])
        bits_dtype = DTYPES[dtype][3]
        flat = torch.frombuffer(chunk, dtype=bits_dtype) if chunk else torch.empty(0, dtype=bits_dtype)
        tensors[name] = flat.view(dtype).reshape(info["shape"]).clone()
    if start != len(data):
        raise ValueError("MetadataIncompleteBuffer")
    return tensors, metadata


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and element_bits(a) == element_bits(b)


def write_sidecar(tensors, path):
    lines = [
        "# Expected contents of golden_small.safetensors (tests/reference/make_safetensors_golden.py,",
        f"# torch {torch.__version__}). Values from torch; the file's layout comes from this script's",
        "# hand-written serializer, not from the safetensors library (not packaged for Debian).",
        "# 'metadata <key hex> <value hex>'; 'tensor <UTF-8 name as hex>",
        "# <dtype> <ndim> <dims...> <numel> <raw bits of each element as unsigned decimal...>'.",
        "# The '#' line above each tensor shows its values as torch prints them.",
    ]
    for k, v in sorted(METADATA.items()):
        lines.append(f"metadata {k.encode().hex()} {v.encode().hex()}")
    for name, t in sorted(tensors.items(), key=lambda kv: kv[0].encode()):
        exact = t.dtype in (torch.bool, torch.int64)
        values = (t if exact else t.to(torch.float64)).reshape(-1).tolist()
        lines.append(f"# {name!r}: {values}")
        bits = element_bits(t)
        fields = ["tensor", name.encode().hex(), DTYPES[t.dtype][0], str(t.dim())]
        fields += [str(d) for d in t.shape] + [str(t.numel())] + [str(b) for b in bits]
        lines.append(" ".join(fields))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verify", metavar="FILE",
                        help="check FILE (e.g. written by amp::save) against the golden tensors")
    args = parser.parse_args()
    expected = golden_tensors()
    if args.verify:
        got, metadata = read_safetensors(args.verify)
        bad = [k for k in expected if k not in got or not same(expected[k], got[k])]
        extra = sorted(set(got) - set(expected))
        if bad or extra:
            print(f"{args.verify}: mismatching {bad}, unexpected {extra}")
            return 1
        print(f"{args.verify}: {len(got)} tensors match the golden values, metadata {metadata}")
        return 0
    blob = serialize(expected, METADATA)
    os.makedirs(DATA_DIR, exist_ok=True)
    with open(GOLDEN, "wb") as f:
        f.write(blob)
    write_sidecar(expected, SIDECAR)
    back, metadata = read_safetensors(GOLDEN)
    assert metadata == METADATA and set(back) == set(expected)
    assert all(same(expected[k], back[k]) for k in expected)
    print(f"wrote {GOLDEN} ({len(blob)} bytes, {len(expected)} tensors) and {SIDECAR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
