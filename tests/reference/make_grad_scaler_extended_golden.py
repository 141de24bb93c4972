#!/usr/bin/python3
"""Golden data for amp::GradScaler's additions to PyTorch (tests/amp/test_grad_scaler_update.cpp).

Writes tests/data/grad_scaler_extended_golden.txt: for configurations of (init_scale,
growth_factor, backoff_factor, growth_interval, hysteresis, min_scale, max_scale) and a fixed
sequence of found_inf values, the scale (fp32 bit pattern), the growth tracker and the
hysteresis tracker after each update().

Run with Debian's interpreter (standard library only):
  /usr/bin/python3 tests/reference/make_grad_scaler_extended_golden.py

The rule, written here from its sources rather than from ampcpp's code:
- hysteresis: Megatron-LM's DynamicGradScaler.update (megatron/core/optimizer/grad_scaler.py),
  transcribed below. Megatron lets its hysteresis tracker go negative; ampcpp stores
  max(tracker, 0), which behaves the same, so the file records that;
- the scale change itself: torch's _amp_update_scale_ (aten/src/ATen/native/cpu/
  AmpGradScalerKernels.cpp; docs/multi_tensor.md, "Formulas"): products formed in double and
  rounded to fp32, growth only when the result is finite;
- the bounds of docs/grad_scaler.md: a backoff below min_scale is clamped to min_scale, a
  growth above max_scale is clamped to max_scale (both as fp32).
"""
import math
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "grad_scaler_extended_golden.txt")


def f32(x):
    """Rounds a double to the nearest fp32 value (round half to even), inf on overflow."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


class MegatronScaler:
    """Megatron-LM DynamicGradScaler with torch's fp32 scale arithmetic and ampcpp's bounds."""

    def __init__(self, init, growth, backoff, interval, hysteresis, min_scale, max_scale):
        self.scale = f32(init)
        self.growth_factor = growth
        self.backoff_factor = backoff
        self.growth_interval = interval
        self.hysteresis = hysteresis
        self.min_scale = f32(min_scale)
        self.max_scale = f32(max_scale) if math.isfinite(max_scale) else math.inf
        self.growth_tracker = 0
        self.hysteresis_tracker = hysteresis

    def update(self, found_inf):
        if found_inf:
            self.growth_tracker = 0
            self.hysteresis_tracker -= 1
            if self.hysteresis_tracker <= 0:
                self.scale = max(f32(self.scale * self.backoff_factor), self.min_scale)
        else:
            self.growth_tracker += 1
            if self.growth_tracker == self.growth_interval:
                self.growth_tracker = 0
                self.hysteresis_tracker = self.hysteresis
                grown = f32(self.scale * self.growth_factor)
                if math.isfinite(grown):  # torch's cap (pytorch/pytorch#98876)
                    self.scale = min(grown, self.max_scale)


def configs():
    rng = random.Random(20261124)

    def seq(n, p):
        return [1 if rng.random() < p else 0 for _ in range(n)]

    # (name, init, growth, backoff, interval, hysteresis, min_scale, max_scale, found sequence)
    yield ("hysteresis_2", 65536.0, 2.0, 0.5, 3, 2, 0.0, math.inf, seq(120, 0.3))
    yield ("hysteresis_5_bursts", 1024.0, 2.0, 0.5, 2, 5, 0.0, math.inf,
           [1] * 7 + [0] * 5 + [1, 0, 1, 0, 1, 1, 1, 1, 1, 1] + seq(60, 0.5))
    yield ("min_scale_floor", 64.0, 2.0, 0.5, 4, 1, 1.0, math.inf, [1] * 10 + seq(60, 0.4))
    yield ("max_scale_ceiling", 4.0, 2.0, 0.5, 1, 1, 0.0, 100.0, [0] * 10 + seq(60, 0.2))
    yield ("all_three_odd_factors", 300.0, 1.7, 0.35, 2, 3, 0.75, 5000.0, seq(200, 0.35))
    yield ("smallest_normal_floor", 2.0 ** -120, 2.0, 0.5, 1000, 1, 2.0 ** -126, math.inf,
           [1] * 12 + [0] * 3)


def main():
    lines = [
        "# Golden data for GradScaler's hysteresis and bounds, made by",
        "# tests/reference/make_grad_scaler_extended_golden.py (Megatron-LM's hysteresis, torch's",
        "# fp32 scale rule, docs/grad_scaler.md's clamps). A Python transcription of those rules:",
        "# these values were NOT produced by Megatron-LM or PyTorch.",
        "# config <name> <init_scale_bits> <growth_factor> <backoff_factor> <growth_interval>",
        "#        <hysteresis> <min_scale> <max_scale>",
        "# step <found_inf> <scale_bits_after> <growth_tracker_after> <hysteresis_tracker_after>",
    ]
    for name, init, g, b, interval, hyst, lo, hi, found_seq in configs():
        s = MegatronScaler(init, g, b, interval, hyst, lo, hi)
        lines.append("config %s 0x%08x %r %r %d %d %r %r" %
                     (name, f32_bits(s.scale), g, b, interval, hyst, lo, hi))
        for found in found_seq:
            s.update(found)
            lines.append("step %d 0x%08x %d %d" % (found, f32_bits(s.scale), s.growth_tracker,
                                                   max(s.hysteresis_tracker, 0)))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % os.path.normpath(OUT))


if __name__ == "__main__":
    main()
