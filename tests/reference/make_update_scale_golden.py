#!/usr/bin/python3
"""Golden data for amp::multi_tensor::update_scale_ and amp::GradScaler::update
(tests/multi_tensor/test_multi_tensor_grad_scaler.cpp, tests/amp/test_grad_scaler_update.cpp).

Writes tests/data/update_scale_golden.txt: for several (init_scale, growth_factor, backoff_factor,
growth_interval) configurations and a fixed sequence of found_inf values, the scale (fp32 bit
pattern) and growth tracker after each call of torch._amp_update_scale_.

Run with Debian's interpreter and python3-torch:  /usr/bin/python3 tests/reference/make_update_scale_golden.py

Source of the values: the script first tries torch._amp_update_scale_ itself on CPU tensors.
Debian's python3-torch is 1.13, whose _amp_update_scale_ has only a CUDA kernel ("Could not run
'aten::_amp_update_scale_' with arguments from the 'CPU' backend"), and this machine has no GPU.
In that case -- the case in which the committed file was generated -- the values come from
`update_scale_rule` below, a transcription of torch's kernel (aten/src/ATen/native/cuda/
AmpKernels.cu `amp_update_scale_cuda_kernel`, identical to the later CPU kernel in
aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp; docs/multi_tensor.md, "Formulas"),
with the fp32 scale emulated by numpy.float32 and the products formed in double as in C++.
The file header records which source was used.
"""
import math
import os
import random
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "update_scale_golden.txt")


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", float(x)))[0]


def update_scale_rule(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """torch._amp_update_scale_: scale is a numpy.float32, tracker an int; returns both."""
    if found_inf != 0:  # `if (*found_inf)`: any non-zero value, NaN included
        # float * double is formed in double, then stored into the fp32 scale
        scale = np.float32(float(scale) * backoff_factor)
        tracker = 0
    else:
        successful = tracker + 1
        if successful == growth_interval:
            with np.errstate(over="ignore"):  # an overflow to inf is what the check is for
                new_scale = np.float32(float(scale) * growth_factor)
            if math.isfinite(float(new_scale)):
                scale = new_scale
            tracker = 0
        else:
            tracker = successful
    return scale, tracker


def torch_kernel():
    """Returns a function running torch's own kernel on CPU tensors, or None when unavailable."""
    try:
        import torch
    except ImportError:
        return None, "torch not importable"
    try:
        s = torch.ones(1)
        t = torch.zeros(1, dtype=torch.int32)
        torch._amp_update_scale_(s, t, torch.zeros(1), 2.0, 0.5, 2)
    except Exception as e:  # torch 1.13: no CPU kernel
        first = str(e).strip().splitlines()[0].split(". ")[0]
        return None, "torch %s: %s" % (torch.__version__, first)

    def run(scale, tracker, found_inf, g, b, interval):
        s = torch.tensor([float(scale)], dtype=torch.float32)
        t = torch.tensor([tracker], dtype=torch.int32)
        torch._amp_update_scale_(s, t, torch.tensor([found_inf], dtype=torch.float32), g, b, interval)
        return np.float32(s.item()), int(t.item())

    return run, "torch %s _amp_update_scale_ (CPU)" % torch.__version__


def configs():
    rng = random.Random(20240611)
    # (name, init_scale, growth_factor, backoff_factor, growth_interval, found_inf sequence)
    yield ("default_like", 65536.0, 2.0, 0.5, 3,
           [1.0 if rng.random() < 0.2 else 0.0 for _ in range(80)])
    yield ("torch_growth_vector", 4.0, 2.0, 0.25, 2, [0.0, 0.0, 1.0])
    yield ("finite_cap", 1e38, 16.0, 0.5, 1, [0.0, 0.0, 1.0, 0.0])
    yield ("backoff_to_zero", 65536.0, 2.0, 0.5, 2000, [1.0] * 170)
    yield ("odd_factors", 1.0, 1.5, 0.3, 2,
           [rng.choice([0.0, 0.0, 0.0, 1.0, 2.0, 3.0]) for _ in range(100)])
    yield ("interval_one_growth_to_cap", 3.0e37, 2.0, 0.5, 1, [0.0] * 6)


def main():
    run, source = torch_kernel()
    if run is None:
        used = ("transcription of torch's rule (torch's own kernel unavailable: %s); these values "
                "were NOT produced by PyTorch" % source)
        run = lambda s, t, f, g, b, i: update_scale_rule(s, t, f, g, b, i)
    else:
        used = source
    lines = [
        "# Golden data for update_scale_, made by tests/reference/make_update_scale_golden.py",
        "# source: " + used,
        "# config <name> <init_scale_bits> <growth_factor> <backoff_factor> <growth_interval>",
        "# step <found_inf> <scale_bits_after> <growth_tracker_after>",
    ]
    for name, init, g, b, interval, seq in configs():
        scale, tracker = np.float32(init), 0
        lines.append("config %s 0x%08x %r %r %d" % (name, f32_bits(scale), g, b, interval))
        for found in seq:
            scale, tracker = run(scale, tracker, found, g, b, interval)
            lines.append("step %r 0x%08x %d" % (found, f32_bits(scale), tracker))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s (%s)" % (os.path.normpath(OUT), used), file=sys.stderr)


if __name__ == "__main__":
    main()
