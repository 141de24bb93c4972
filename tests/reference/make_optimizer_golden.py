#!/usr/bin/python3
"""Golden files for tests/optimizers/test_reference_optimizers.cpp, made with torch.optim.

Run with Debian's interpreter, which has python3-torch 1.13:

    /usr/bin/python3 tests/reference/make_optimizer_golden.py

Each case writes tests/data/optim_golden/<case>.txt: the optimizer and its options, the initial
parameters, the gradient fed at every step and the parameters torch.optim produced after every
step. Values are float32 written with 9 significant digits, which round-trip exactly. A
parameter with no "grad" line at a step has grad None there (torch skips it; so must we).
lr_schedulers.txt holds torch's learning-rate sequences for StepLR and CosineAnnealingLR.

ATEN_CPU_CAPABILITY=default makes torch run its scalar (non-AVX) CPU kernels, which round after
every multiply and add like ampcpp's ops do. With AVX2 torch fuses x.add_(y, alpha=a) into one
FMA, and SGD then differs from an unfused evaluation by up to ~2e-7 absolute (2e-5 relative on
elements that pass near zero). With the scalar kernels ampcpp matches these files bit for bit.
"""
import os

os.environ["ATEN_CPU_CAPABILITY"] = "default"  # must be set before torch is imported

import torch  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "optim_golden")
STEPS = 20
SHAPES = [(4, 3), (7,), (2, 3, 5), ()]

# name, optimizer, options (ampcpp names), params whose grad is None on odd steps
CASES = [
    ("sgd_plain", "sgd", dict(lr=0.1), []),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9), [2]),
    ("sgd_momentum_dampening_wd", "sgd",
     dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01), []),
    ("sgd_nesterov_wd", "sgd", dict(lr=0.05, momentum=0.9, nesterov=1, weight_decay=1e-3), []),
    ("adam_default", "adam", dict(lr=1e-3), []),
    ("adam_betas_eps_wd", "adam",
     dict(lr=1e-2, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.05), [2]),
    ("adam_amsgrad_wd", "adam", dict(lr=1e-2, amsgrad=1, weight_decay=0.01), []),
    ("adamw_default_wd", "adamw", dict(lr=1e-2, weight_decay=1e-2), []),
    ("adamw_amsgrad", "adamw",
     dict(lr=5e-3, beta1=0.85, beta2=0.995, weight_decay=0.1, amsgrad=1), [1]),
]


def make_optimizer(kind, params, o):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o.get("momentum", 0.0),
                               dampening=o.get("dampening", 0.0),
                               weight_decay=o.get("weight_decay", 0.0),
                               nesterov=bool(o.get("nesterov", 0)), foreach=False)
    cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    default_wd = 0.0 if kind == "adam" else 1e-2
    return cls(params, lr=o["lr"], betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
               eps=o.get("eps", 1e-8), weight_decay=o.get("weight_decay", default_wd),
               amsgrad=bool(o.get("amsgrad", 0)), foreach=False)


def values(t):
    return " ".join("%.9e" % v for v in t.detach().reshape(-1).tolist())


def write_case(name, kind, options, intermittent, seed):
    gen = torch.Generator().manual_seed(seed)
    params = [torch.randn(s, generator=gen, dtype=torch.float32).requires_grad_() for s in SHAPES]
    opt = make_optimizer(kind, params, options)
    lines = ["# made by tests/reference/make_optimizer_golden.py with torch " + torch.__version__
             + " (ATEN_CPU_CAPABILITY=default)", "optimizer " + kind]
    lines += ["option %s %r" % (k, float(v)) for k, v in sorted(options.items())]
    lines.append("steps %d" % STEPS)
    for i, p in enumerate(params):
        lines.append("shape %d %s" % (i, " ".join(str(d) for d in p.shape)))
    for i, p in enumerate(params):
        lines.append("init %d %s" % (i, values(p)))
    for step in range(1, STEPS + 1):
        for i, p in enumerate(params):
            if i in intermittent and step % 2 == 1:
                p.grad = None
                continue
            # Gradients of varied sizes so the moments are not all alike.
            g = torch.randn(p.shape, generator=gen) * (0.5 + i) + 0.1 * step
            p.grad = g.to(torch.float32)
            lines.append("grad %d %d %s" % (step, i, values(p.grad)))
        opt.step()
        for i, p in enumerate(params):
            lines.append("after %d %d %s" % (step, i, values(p)))
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_schedulers():
    lines = ["# made by tests/reference/make_optimizer_golden.py with torch " + torch.__version__,
             "# name, then lr after construction and after each of the following step() calls"]
    p = torch.zeros(1, requires_grad=True)

    opt = torch.optim.SGD([p], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(12):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    lines.append("step_lr_size3_gamma0.5_lr0.1 " + " ".join(repr(v) for v in lrs))

    opt = torch.optim.SGD([p], lr=0.2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(10):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    lines.append("cosine_tmax10_min0.01_lr0.2 " + " ".join(repr(v) for v in lrs))
    with open(os.path.join(OUT, "lr_schedulers.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, kind, options, intermittent) in enumerate(CASES):
        write_case(name, kind, options, intermittent, seed + 1)
    write_schedulers()


if __name__ == "__main__":
    main()
