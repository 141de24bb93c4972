#!/usr/bin/python3
"""Golden values for tests/nn/test_nn_layers.cpp (suite nn_layers), computed by PyTorch.

Run with Debian's interpreter (python3-torch):  /usr/bin/python3 tests/reference/make_nn_golden.py
Writes one text file per case into tests/data/nn_golden/. Each tensor is two lines:
    <name> <dtype: f32|i64> <ndim> <d0> ... <dn-1>
    <numel values, row-major, %.9g>
Names: inputs (x, w, b, target, ...), "out", optionally "gy" (the gradient fed to
out.backward; absent for scalar outputs, which use 1), and "grad.<input>" for every input whose
gradient is checked. Inputs are deterministic functions of the element index (sin of an
affine function), so no random generator is involved.
"""
import math
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "nn_golden")


def det(shape, k=0.7, phase=0.3, scale=1.0, offset=0.0):
    n = math.prod(shape)
    v = torch.sin(torch.arange(n, dtype=torch.float64) * k + phase) * scale + offset
    return v.reshape(shape).float()


def fmt(name, t):
    t = t.detach()
    if t.dtype == torch.int64:
        kind, vals = "i64", [str(int(v)) for v in t.reshape(-1).tolist()]
    else:
        kind, vals = "f32", ["%.9g" % v for v in t.float().reshape(-1).tolist()]
    return "%s %s %d %s\n%s\n" % (name, kind, t.dim(), " ".join(str(s) for s in t.shape),
                                  " ".join(vals))


def case(name, fn, inputs, grads=None, gy=True):
    """inputs: dict name -> tensor; grads: names whose gradients are recorded."""
    grads = list(grads if grads is not None else
                 [k for k, v in inputs.items() if v.is_floating_point()])
    leaves = {k: (v.clone().requires_grad_(k in grads)) for k, v in inputs.items()}
    out = fn(**leaves)
    text = "".join(fmt(k, v) for k, v in inputs.items())
    text += fmt("out", out)
    if out.dim() > 0 and gy:
        g = det(list(out.shape), k=0.37, phase=1.1)
        out.backward(g)
        text += fmt("gy", g)
    else:
        out.backward()
    for k in grads:
        text += fmt("grad." + k, leaves[k].grad)
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write(text)


def main():
    os.makedirs(OUT, exist_ok=True)
    # ---- layers
    case("linear", lambda x, w, b: F.linear(x, w, b),
         {"x": det([4, 5]), "w": det([3, 5], k=1.3, scale=0.5), "b": det([3], k=2.1)})
    case("linear_3d", lambda x, w, b: F.linear(x, w, b),
         {"x": det([2, 3, 5]), "w": det([4, 5], k=1.3, scale=0.5), "b": det([4], k=2.1)})
    case("linear_nobias", lambda x, w: F.linear(x, w),
         {"x": det([4, 5]), "w": det([3, 5], k=1.3, scale=0.5)})
    act_x = {"x": det([3, 7], scale=3.0)}
    case("relu", lambda x: F.relu(x), act_x)
    case("gelu", lambda x: F.gelu(x), act_x)
    case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), act_x)
    case("silu", lambda x: F.silu(x), act_x)
    case("tanh", lambda x: torch.tanh(x), act_x)
    case("sigmoid", lambda x: torch.sigmoid(x), act_x)
    case("softmax", lambda x: F.softmax(x, 1), act_x)
    case("log_softmax", lambda x: F.log_softmax(x, 1), act_x)
    case("layer_norm", lambda x, w, b: F.layer_norm(x, [4], w, b),
         {"x": det([2, 3, 4], scale=2.0), "w": det([4], k=0.9, offset=1.0),
          "b": det([4], k=1.7, scale=0.3)})
    case("layer_norm_2d", lambda x, w, b: F.layer_norm(x, [3, 4], w, b, eps=1e-3),
         {"x": det([2, 3, 4], scale=2.0), "w": det([3, 4], k=0.9, offset=1.0),
          "b": det([3, 4], k=1.7, scale=0.3)})
    case("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b),
         {"x": det([2, 6, 3], scale=2.0), "w": det([6], k=0.9, offset=1.0),
          "b": det([6], k=1.7, scale=0.3)})
    case("embedding", lambda idx, w: F.embedding(idx, w),
         {"idx": torch.tensor([[1, 3, 1], [7, 0, 3]]), "w": det([8, 4])})
    # ---- losses
    logits = det([5, 4], scale=2.0)
    target = torch.tensor([0, 3, 1, 1, 2])
    for red in ["none", "mean", "sum"]:
        case("cross_entropy_" + red, lambda x, t: F.cross_entropy(x, t, reduction=red),
             {"x": logits, "t": target})
        case("cross_entropy_smooth_" + red,
             lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
             {"x": logits, "t": target})
        case("cross_entropy_ignore_" + red,
             lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.2),
             {"x": logits, "t": torch.tensor([0, -100, 1, 3, -100])})
        case("nll_loss_" + red, lambda x, t: F.nll_loss(x, t, reduction=red),
             {"x": F.log_softmax(logits, 1), "t": target})
        case("mse_loss_" + red, lambda x, y: F.mse_loss(x, y, reduction=red),
             {"x": det([3, 4]), "y": det([3, 4], k=1.9, phase=0.1)})
        case("l1_loss_" + red, lambda x, y: F.l1_loss(x, y, reduction=red),
             {"x": det([3, 4]), "y": det([3, 4], k=1.9, phase=0.1)})
        case("smooth_l1_loss_" + red, lambda x, y: F.smooth_l1_loss(x, y, reduction=red, beta=0.5),
             {"x": det([3, 4], scale=1.5), "y": det([3, 4], k=1.9, phase=0.1)})
        case("binary_cross_entropy_" + red,
             lambda x, y: F.binary_cross_entropy(x, y, reduction=red),
             {"x": torch.sigmoid(det([3, 4], scale=2.0)),
              "y": det([3, 4], k=1.9, scale=0.5, offset=0.5)})
        case("bce_with_logits_" + red,
             lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=red),
             {"x": det([3, 4], scale=3.0), "y": det([3, 4], k=1.9, scale=0.5, offset=0.5)})
        case("bce_with_logits_pos_weight_" + red,
             lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, reduction=red,
                                                                 pos_weight=pw),
             {"x": det([3, 4], scale=3.0), "y": det([3, 4], k=1.9, scale=0.5, offset=0.5),
              "pw": det([4], k=0.8, scale=0.5, offset=1.5)}, grads=["x", "y"])
        case("kl_div_" + red, lambda x, y: F.kl_div(x, y, reduction=red),
             {"x": F.log_softmax(det([3, 4], scale=2.0), 1),
              "y": F.softmax(det([3, 4], k=1.9), 1)})
    case("cross_entropy_3d_mean", lambda x, t: F.cross_entropy(x, t),
         {"x": det([2, 4, 3], scale=2.0), "t": torch.tensor([[0, 3, 1], [2, 2, 0]])})
    case("cross_entropy_probs_mean", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
         {"x": logits, "t": F.softmax(det([5, 4], k=1.9), 1)}, grads=["x"])
    case("kl_div_batchmean", lambda x, y: F.kl_div(x, y, reduction="batchmean"),
         {"x": F.log_softmax(det([3, 4], scale=2.0), 1), "y": F.softmax(det([3, 4], k=1.9), 1)})
    case("kl_div_log_target_sum",
         lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True),
         {"x": F.log_softmax(det([3, 4], scale=2.0), 1),
          "y": F.log_softmax(det([3, 4], k=1.9), 1)})
    case("smooth_l1_loss_beta0_mean",
         lambda x, y: F.smooth_l1_loss(x, y, beta=0.0),
         {"x": det([3, 4], scale=1.5), "y": det([3, 4], k=1.9, phase=0.1)})


if __name__ == "__main__":
    torch.set_printoptions(precision=10)
    main()
