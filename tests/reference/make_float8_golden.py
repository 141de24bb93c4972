#!/usr/bin/python3
"""Golden data for amp::Float8_e4m3fn and amp::Float8_e5m2 (csrc/core/float8.h), checked by
tests/core/test_float8.cpp.

Writes tests/data/float8_golden.txt. Run with Debian's interpreter and python3-numpy
(scripts/setup.sh --reference):  /usr/bin/python3 tests/reference/make_float8_golden.py

Written from the OCP 8-bit floating point specification (OFP8 rev 1.0, 2023-12-01), in float64,
sharing nothing with the C++ code: each format's 256 codes are decoded by the specification's
formula ((-1)^S * 2^(E-bias) * 1.M, subnormals 2^(1-bias) * 0.M; E4M3: no infinities, NaN only
S.1111.111; E5M2: inf S.11111.00, NaN S.11111.{01,10,11}). A value is rounded by searching the
sorted finite magnitudes for its two neighbours and comparing it with their midpoint (exact in
float64), ties going to the even code; past the largest finite value the next value of the
unbounded-exponent grid (max + one ulp: 480 for E4M3, 65536 for E5M2) is the upper neighbour,
so a value that rounds there has overflowed. Overflow and specials then follow the two casts:
  plain      PyTorch's cast (c10/util/Float8_e4m3fn.h, Float8_e5m2.h; docs/fp8.md): overflow
             and +-inf give NaN for E4M3 (0x7F | sign), +-inf for E5M2 (0x7C | sign);
  saturated  the scaled paths' cast (CUDA __NV_SATFINITE, TE): overflow and +-inf give +-max.
A NaN gives 0x7F | sign in both (PyTorch's pattern). The sign is kept on zero and underflow.

The file holds, per format: the 256 decoded values (shortest round-trip decimals, which read
back as the same double; nan with its sign); the
rounding of all 65536 bfloat16 and all 65536 binary16 bit patterns, plain and saturated, as
run-length encoded code sequences in bit-pattern order; fp32 points around every rounding tie
of both formats (the tie and its fp32 neighbours, both signs) and the specials; float64 points
just off the ties, which only a single rounding of the double gets right; and a sweep of every
4093rd fp32 bit pattern (0, 4093, 8186, ... below 2^32), run-length encoded. Run-length tokens
are <code hex>x<count> (count 1 written as the code alone).
"""
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "float8_golden.txt")
SWEEP_STRIDE = 4093
NAN_CODE = 0x7F


class Format:
    def __init__(self, name, exp_bits, man_bits, bias, has_inf):
        self.name = name
        self.exp_bits = exp_bits
        self.man_bits = man_bits
        self.bias = bias
        self.has_inf = has_inf
        self.values = [self.decode(c) for c in range(256)]
        # Largest finite code: the finite magnitudes are increasing in the code up to it.
        self.max_code = max(c for c in range(128) if math.isfinite(self.values[c]))
        self.max = self.values[self.max_code]
        assert all(self.values[c] < self.values[c + 1] for c in range(self.max_code))
        top_exp = self.max_code >> man_bits
        ulp = 2.0 ** (top_exp - bias - man_bits)
        # Magnitudes 0..max, then the first value past max of the unbounded-exponent grid; its
        # index (max_code + 1) is its code there, whose parity decides the tie with max.
        self.grid = np.array(self.values[: self.max_code + 1] + [self.max + ulp])

    def decode(self, code):
        """The specification's value of `code`."""
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> self.man_bits) & ((1 << self.exp_bits) - 1)
        m = code & ((1 << self.man_bits) - 1)
        top = (1 << self.exp_bits) - 1
        if e == top:
            if self.has_inf:
                return sign * math.inf if m == 0 else math.copysign(math.nan, sign)
            if m == (1 << self.man_bits) - 1:
                return math.copysign(math.nan, sign)
        if e == 0:
            return sign * 2.0 ** (1 - self.bias) * (m / 2.0**self.man_bits)
        return sign * 2.0 ** (e - self.bias) * (1 + m / 2.0**self.man_bits)

    def round(self, x, saturate):
        """Codes of the float64 array `x`, rounded to nearest even."""
        x = np.asarray(x, dtype=np.float64)
        sign = np.where(np.signbit(x), 0x80, 0).astype(np.int64)
        a = np.abs(x)
        finite = np.isfinite(a)
        af = np.where(finite, a, 0.0)
        last = len(self.grid) - 1
        lo_index = np.searchsorted(self.grid, af, side="right") - 1  # grid[lo] <= a
        hi_index = np.minimum(lo_index + 1, last)
        mid = (self.grid[lo_index] + self.grid[hi_index]) / 2  # exact: few significant bits
        up = (af > mid) | ((af == mid) & (hi_index % 2 == 0) & (hi_index != lo_index))
        code = lo_index + up
        overflow_code = self.max_code if saturate else (0x7C if self.has_inf else NAN_CODE)
        code = np.where(code > self.max_code, overflow_code, code)
        code = np.where(np.isinf(a), overflow_code, code)
        code = np.where(np.isnan(a), NAN_CODE, code)
        return (code | sign).astype(np.int64)


E4M3FN = Format("e4m3fn", 4, 3, 7, has_inf=False)
E5M2 = Format("e5m2", 5, 2, 15, has_inf=True)
FORMATS = [E4M3FN, E5M2]
assert E4M3FN.max == 448.0 and E5M2.max == 57344.0
assert E4M3FN.grid[-1] == 480.0 and E5M2.grid[-1] == 65536.0


def float_text(v):
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    # repr is the shortest decimal that reads back as the same double (strtod), so it is exact.
    return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def runs_text(codes):
    tokens = []
    start = 0
    n = len(codes)
    change = np.flatnonzero(np.diff(codes)) + 1
    for end in list(change) + [n]:
        count = end - start
        code = int(codes[start])
        tokens.append("%02x" % code if count == 1 else "%02xx%d" % (code, count))
        start = end
    return [" ".join(tokens[i : i + 16]) for i in range(0, len(tokens), 16)]


def table(lines, name, codes):
    lines.append("table %s %d" % (name, len(codes)))
    lines.extend(runs_text(codes))


def bfloat16_values():
    bits = np.arange(65536, dtype=np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def half_values():
    return np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)


def float32_points():
    """fp32 inputs around every rounding tie of both formats, and the specials."""
    pts = set()
    for f in FORMATS:
        for i in range(len(f.grid) - 1):
            mid = np.float32((f.grid[i] + f.grid[i + 1]) / 2)
            assert float(mid) == (f.grid[i] + f.grid[i + 1]) / 2
            pts.update([mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(1e38))])
        top = np.float32(f.max)
        pts.update([top, np.nextafter(top, np.float32(1e38))])
    smallest = np.float32(np.finfo(np.float32).smallest_subnormal)
    pts.update([np.float32(0), smallest, np.finfo(np.float32).max, np.float32(np.inf)])
    bits = sorted(int(np.float32(p).view(np.uint32)) for p in pts)
    bits += [b | 0x80000000 for b in bits]
    # NaNs: quiet, signalling, payload-only; both signs.
    bits += [0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0xFFC00000, 0xFF800001]
    return np.array(bits, dtype=np.uint32)


def float64_points():
    """Positive doubles a hair off each format's ties: a conversion through float would round
    them onto the tie. (The sign rule is covered by the fp32 points and the tables.)"""
    pts = []
    for f in FORMATS:
        for i in range(len(f.grid) - 1):
            mid = (f.grid[i] + f.grid[i + 1]) / 2
            step = mid * 2.0**-40
            pts += [mid - step, mid + step]
    return np.array(pts)


def codes_text(x):
    cols = [f.round(x, s) for f in FORMATS for s in (False, True)]
    return [" ".join("%02x" % int(c[i]) for c in cols) for i in range(len(x))]


def main():
    np.seterr(invalid="ignore")  # numpy flags signalling NaNs widened to float64; they stay NaN
    lines = [
        "# Golden data for amp::Float8_e4m3fn / amp::Float8_e5m2, made by "
        "tests/reference/make_float8_golden.py",
        "# source: the OCP OFP8 rev 1.0 definitions in float64 (numpy %s); overflow as PyTorch's "
        "cast (plain) or clamped to max (saturated)" % np.__version__,
        "# decode <format>: 256 values in code order (shortest round-trip decimals)",
        "# table <source>.<format>.<plain|saturated> <count>: run-length codes (<code>x<count>)",
        "# points32 <count>: <fp32 bits> <e4m3fn plain> <e4m3fn sat> <e5m2 plain> <e5m2 sat>",
        "# points64 <count>: <double, shortest round-trip decimal> and the same four codes",
        "# sweep <stride> <count>: inputs are the fp32 bit patterns i * stride, i < count",
    ]
    for f in FORMATS:
        lines.append("decode %s" % f.name)
        text = [float_text(v) for v in f.values]
        lines.extend(" ".join(text[i : i + 8]) for i in range(0, 256, 8))
    for source, values in (("bf16", bfloat16_values()), ("fp16", half_values())):
        for f in FORMATS:
            for mode, saturate in (("plain", False), ("saturated", True)):
                table(lines, "%s.%s.%s" % (source, f.name, mode), f.round(values, saturate))
    p32 = float32_points()
    lines.append("points32 %d" % len(p32))
    x32 = p32.view(np.float32).astype(np.float64)
    lines.extend("%08x %s" % (b, c) for b, c in zip(p32, codes_text(x32)))
    p64 = float64_points()
    lines.append("points64 %d" % len(p64))
    lines.extend("%s %s" % (float_text(float(v)), c) for v, c in zip(p64, codes_text(p64)))
    count = -(-(1 << 32) // SWEEP_STRIDE)
    sweep = (np.arange(count, dtype=np.uint64) * SWEEP_STRIDE).astype(np.uint32)
    lines.append("sweep %d %d" % (SWEEP_STRIDE, count))
    xs = sweep.view(np.float32).astype(np.float64)
    for f in FORMATS:
        for mode, saturate in (("plain", False), ("saturated", True)):
            table(lines, "fp32.%s.%s" % (f.name, mode), f.round(xs, saturate))
    with open(OUT, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("wrote %s (%d lines)" % (OUT, len(lines)))


if __name__ == "__main__":
    main()
