#!/usr/bin/python3
"""Golden values for tests/nn/test_nn_conv.cpp (suite nn_conv), computed by PyTorch.

Run with Debian's python3-torch (1.13): /usr/bin/python3 tests/reference/make_nn_conv_golden.py
Writes tests/data/nn_conv_golden/<case>.txt. Every case holds its deterministic inputs and
weights (drawn here from torch.manual_seed, in float64) and PyTorch's float64 outputs and
gradients, so the C++ test reads everything it needs from the file and never runs Python.

File format, one tensor per two lines:
    <name> <ndim> <size_0> ... <size_ndim-1>
    <numel values, row-major, %.17g>
"""
import math
import os

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "nn_conv_golden")


def write(case, tensors):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, case + ".txt"), "w") as f:
        for name, t in tensors.items():
            t = t.detach().to(torch.float64).contiguous()
            f.write(f"{name} {t.dim()} {' '.join(str(s) for s in t.shape)}\n")
            f.write(" ".join("%.17g" % v for v in t.reshape(-1).tolist()) + "\n")


def leaf(*shape):
    return torch.randn(*shape).requires_grad_(True)


def conv_case(case, n, c, h, w, o, kh, kw, stride, padding, bias):
    x, wt = leaf(n, c, h, w), leaf(o, c, kh, kw)
    b = leaf(o) if bias else None
    y = F.conv2d(x, wt, b, stride=stride, padding=padding)
    gy = torch.randn(y.shape)
    y.backward(gy)
    t = {"x": x, "w": wt}
    if bias:
        t["b"] = b
    t.update({"y": y, "gy": gy, "gx": x.grad, "gw": wt.grad})
    if bias:
        t["gb"] = b.grad
    t["config"] = torch.tensor([stride, padding], dtype=torch.float64)
    write(case, t)


def pool_case(case, fn, n, c, h, w, kernel, stride, padding):
    x = leaf(n, c, h, w)
    y = fn(x, kernel, stride=stride, padding=padding)
    gy = torch.randn(y.shape)
    y.backward(gy)
    write(case, {"x": x, "y": y, "gy": gy, "gx": x.grad,
                 "config": torch.tensor([kernel, stride, padding], dtype=torch.float64)})


def batch_norm_case(case, shape, momentum=0.1, eps=1e-5):
    c = shape[1]
    bn = torch.nn.BatchNorm1d(c, eps=eps, momentum=momentum) if len(shape) < 4 else \
        torch.nn.BatchNorm2d(c, eps=eps, momentum=momentum)
    with torch.no_grad():
        bn.weight.copy_(torch.rand(c) + 0.5)
        bn.bias.copy_(torch.randn(c))
    t = {"weight": bn.weight.clone(), "bias": bn.bias.clone()}
    x1, x2, x3 = torch.randn(shape) * 2 + 1, leaf(*shape), torch.randn(shape)
    bn.train()
    y1 = bn(x1)
    t.update({"x1": x1, "y1": y1, "running_mean1": bn.running_mean.clone(),
              "running_var1": bn.running_var.clone()})
    y2 = bn(x2)
    gy = torch.randn(shape)
    y2.backward(gy)
    t.update({"x2": x2, "y2": y2, "gy": gy, "gx2": x2.grad, "gweight": bn.weight.grad,
              "gbias": bn.bias.grad, "running_mean2": bn.running_mean.clone(),
              "running_var2": bn.running_var.clone(),
              "num_batches_tracked": bn.num_batches_tracked.to(torch.float64)})
    bn.eval()
    t.update({"x3": x3, "y3": bn(x3)})
    write(case, t)


def sdpa_reference(q, k, v, causal):
    # torch 1.13 has no F.scaled_dot_product_attention; this is its documented definition.
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        allowed = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def sdpa_case(case, causal):
    q, k, v = leaf(2, 3, 4, 5), leaf(2, 3, 6, 5), leaf(2, 3, 6, 7)
    y = sdpa_reference(q, k, v, causal)
    gy = torch.randn(y.shape)
    y.backward(gy)
    write(case, {"q": q, "k": k, "v": v, "y": y, "gy": gy, "gq": q.grad, "gk": k.grad,
                 "gv": v.grad})


def mha_case(case, batch_first, cross, masks):
    e, h, n, l = 8, 2, 2, 4
    s = 5 if cross else l
    mha = torch.nn.MultiheadAttention(e, h, batch_first=batch_first)
    with torch.no_grad():  # non-zero biases so the test sees them
        mha.in_proj_bias.copy_(torch.randn(3 * e) * 0.1)
        mha.out_proj.bias.copy_(torch.randn(e) * 0.1)
    shape_q = (n, l, e) if batch_first else (l, n, e)
    shape_k = (n, s, e) if batch_first else (s, n, e)
    query = leaf(*shape_q)
    key = leaf(*shape_k) if cross else query
    value = leaf(*shape_k) if cross else query
    t = {"in_proj_weight": mha.in_proj_weight, "in_proj_bias": mha.in_proj_bias,
         "out_proj.weight": mha.out_proj.weight, "out_proj.bias": mha.out_proj.bias,
         "query": query}
    if cross:
        t.update({"key": key, "value": value})
    kwargs = {}
    if masks:
        kpm = torch.zeros(n, s, dtype=torch.bool)
        kpm[0, s - 1] = True  # sample 0 ignores its last key
        kpm[1, 0] = True
        attn_mask = torch.zeros(l, s, dtype=torch.bool)
        attn_mask[0, 1] = True  # query 0 may not see key 1
        kwargs = {"key_padding_mask": kpm, "attn_mask": attn_mask}
        t.update({"key_padding_mask": kpm.to(torch.float64),
                  "attn_mask": attn_mask.to(torch.float64)})
    out, weights = mha(query, key, value, need_weights=True, **kwargs)
    gy = torch.randn(out.shape)
    out.backward(gy)
    t.update({"out": out, "weights": weights, "gy": gy, "gquery": query.grad,
              "gin_proj_weight": mha.in_proj_weight.grad, "gin_proj_bias": mha.in_proj_bias.grad,
              "gout_proj.weight": mha.out_proj.weight.grad})
    if cross:
        t.update({"gkey": key.grad, "gvalue": value.grad})
    write(case, t)


def main():
    torch.manual_seed(20240601)
    conv_case("conv_s1_p1_bias", 2, 3, 7, 6, 4, 3, 3, stride=1, padding=1, bias=True)
    conv_case("conv_s2_p1_nobias", 2, 2, 9, 8, 3, 3, 2, stride=2, padding=1, bias=False)
    conv_case("conv_s1_p0_bias", 3, 4, 6, 6, 5, 3, 3, stride=1, padding=0, bias=True)
    pool_case("max_pool_k2_s2", F.max_pool2d, 2, 3, 8, 8, 2, 2, 0)
    pool_case("max_pool_k3_s2_p1", F.max_pool2d, 2, 2, 7, 7, 3, 2, 1)
    pool_case("avg_pool_k2_s2", F.avg_pool2d, 2, 3, 8, 8, 2, 2, 0)
    pool_case("avg_pool_k3_s2_p1", F.avg_pool2d, 2, 2, 7, 7, 3, 2, 1)
    batch_norm_case("batch_norm2d", (4, 3, 5, 5))
    batch_norm_case("batch_norm1d_nc", (8, 5))
    batch_norm_case("batch_norm1d_ncl", (4, 3, 6), momentum=0.2)
    sdpa_case("sdpa", causal=False)
    sdpa_case("sdpa_causal", causal=True)
    mha_case("mha_self_batch_first", batch_first=True, cross=False, masks=False)
    mha_case("mha_cross_masks", batch_first=False, cross=True, masks=True)


if __name__ == "__main__":
    main()
