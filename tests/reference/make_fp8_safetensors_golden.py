#!/usr/bin/python3
"""Writes tests/data/fp8_small.safetensors and its sidecar fp8_small.txt, checked by
tests/fp8/test_fp8_checkpoint.cpp.

Run with Debian's interpreter and python3-numpy (scripts/setup.sh --reference):

    /usr/bin/python3 tests/reference/make_fp8_safetensors_golden.py

Neither torch with fp8 dtypes nor the safetensors package is available from Debian, so the fp8
codes come from the OCP OFP8 reference of make_float8_golden.py (float64 math, round to nearest
even, PyTorch's plain overflow rule), and the file is laid out by hand exactly as the reference
serializer does (safetensors_layout.py, as in make_safetensors_golden.py), with the positions of
the reference's Dtype enum (BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32,
F64, I64, U64 in safetensors 0.4; newer releases insert F4/F6/F8_E8M0 without changing this
order).
The sidecar lists, per tensor, the float64 inputs the codes were rounded from and the codes.
"""
import math
import os

import numpy as np

import safetensors_layout
from make_float8_golden import E4M3FN, E5M2, float_text

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(os.path.dirname(HERE), "data")
GOLDEN = os.path.join(DATA_DIR, "fp8_small.safetensors")
SIDECAR = os.path.join(DATA_DIR, "fp8_small.txt")
METADATA = {
    "format": "pt",
    "written_by": "tests/reference/make_fp8_safetensors_golden.py: codes from the OCP OFP8 "
                  "reference in float64, layout by a hand-written serializer following "
                  "safetensors/src/tensor.rs; not written by the safetensors library",
}

# safetensors name, rank in the reference's Dtype enum, element size, format
DTYPES = {
    "F32": (11, 4, None),
    "F8_E4M3": (4, 1, E4M3FN),
    "F8_E5M2": (3, 1, E5M2),
}


def golden_tensors():
    """name -> (safetensors dtype, shape, float64 inputs). fp8 tensors hold the plain (PyTorch)
    rounding of the inputs: ties, subnormals, -0, overflow and NaN included."""
    e4m3_inputs = [0.0, -0.0, 1.0, -1.5, 300.0, 464.0, 465.0, -448.0, 2.0 ** -9, 2.0 ** -10,
                   3 * 2.0 ** -10, 0.1, math.inf, math.nan]
    e5m2_inputs = [0.0, 1.0, -3.0, 17.0, 57344.0, 61440.0, -1e6, 2.0 ** -16, 2.0 ** -17, 0.3,
                   -math.inf, -math.nan]
    grid = [(i - 12) / 3.0 for i in range(24)]
    return {
        "layer.weight_fp8": ("F8_E4M3", [2, 7], e4m3_inputs),
        "grad.e5m2": ("F8_E5M2", [12], e5m2_inputs),
        "scaled.e4m3": ("F8_E4M3", [4, 6], [v * 100 for v in grid]),
        "scale": ("F32", [], [0.5]),
        "empty.e5m2": ("F8_E5M2", [0, 4], []),
    }


def encode(dtype, values):
    fmt = DTYPES[dtype][2]
    if fmt is None:
        return np.array(values, dtype="<f4").tobytes()
    return bytes(int(c) for c in fmt.round(np.array(values, dtype=np.float64), False))


def serialize(tensors):
    entries = []
    for name, (dtype, shape, values) in tensors.items():
        blob = encode(dtype, values)
        assert len(blob) == math.prod(shape) * DTYPES[dtype][1]
        entries.append((name, dtype, DTYPES[dtype][0], shape, blob))
    return safetensors_layout.serialize(entries, METADATA)


def write_sidecar(tensors):
    lines = [
        "# Expected contents of fp8_small.safetensors (tests/reference/make_fp8_safetensors_golden.py).",
        "# 'tensor <name> <dtype> <ndim> <dims...> <numel>', then 'inputs <float64 values...>' (what",
        "# each element was rounded from) and 'bits <each element's raw bits, hex>'.",
    ]
    for name, (dtype, shape, values) in sorted(tensors.items(), key=lambda kv: kv[0].encode()):
        blob = encode(dtype, values)
        size = DTYPES[dtype][1]
        bits = [int.from_bytes(blob[i:i + size], "little") for i in range(0, len(blob), size)]
        lines.append(" ".join(["tensor", name, dtype, str(len(shape))] + [str(d) for d in shape]
                              + [str(len(values))]))
        lines.append(" ".join(["inputs"] + [float_text(float(v)) for v in values]))
        lines.append(" ".join(["bits"] + ["%x" % b for b in bits]))
    with open(SIDECAR, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    tensors = golden_tensors()
    blob = serialize(tensors)
    with open(GOLDEN, "wb") as f:
        f.write(blob)
    write_sidecar(tensors)
    print("wrote %s (%d bytes, %d tensors) and %s" % (GOLDEN, len(blob), len(tensors), SIDECAR))


if __name__ == "__main__":
    main()
