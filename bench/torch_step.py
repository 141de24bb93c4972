#!/usr/bin/python3
"""PyTorch's side of bench_step: the same training steps (MLP 784-1024-1024-10 at batch 256 and
the small CNN at batch 128, lr 0.01; amp_compare's cnn and transformer at their default widths,
batch 256, lr 0.05, as examples/compare/models.cpp builds them; SGD momentum 0.9; Fashion-MNIST
batches) in fp32 and bf16 autocast, as a coprocess of build/bench/bench_step, which interleaves
its own steps with these.

Protocol (one line each way): bench_step writes `<model> <precision> <steps>` (model
mlp|cnn|compare_cnn|compare_transformer, precision fp32|bf16|fp16|o2bf16); this script runs one
warm-up step the first time a configuration is seen, then `steps` timed steps, and answers
`ms <t1> <t2> ...`, or `unsupported <reason>`.
An empty line or EOF ends it.

    /usr/bin/python3 bench/torch_step.py --threads 2 --data-dir /usr/share/datasets/fashion-mnist
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    _, _, dtype_code, ndim = struct.unpack(">BBBB", data[:4])
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(directory, limit):
    def path(name):
        gz = os.path.join(directory, name + ".gz")
        return gz if os.path.exists(gz) else os.path.join(directory, name)

    images = read_idx(path("train-images-idx3-ubyte"))[:limit]
    labels = read_idx(path("train-labels-idx1-ubyte"))[:limit]
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def blas_library():
    """The BLAS shared object torch's matmul loaded (Debian's libblas.so.3 alternative)."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    with open("/proc/self/maps") as maps:
        names = {line.split()[-1] for line in maps if "blas" in line.lower()}
    return ", ".join(sorted(os.path.realpath(n) for n in names)) or "unknown"


class EncoderBlock(torch.nn.Module):
    """amp_compare's pre-norm encoder block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width):
        super().__init__()
        nn = torch.nn
        self.attention_norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, 4, dropout=0.0, bias=True, batch_first=True)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        y = self.attention_norm(x)
        h = x + self.attention(y, y, y, need_weights=False)[0]
        return h + self.mlp(self.mlp_norm(h))


class PatchTransformer(torch.nn.Module):
    """amp_compare's transformer: 16 patches of 7x7 pixels, position embedding, 2 blocks."""

    def __init__(self, width):
        super().__init__()
        nn = torch.nn
        self.embedding = nn.Linear(49, width)
        self.position = nn.Parameter(torch.randn(16, width) * 0.02)
        self.blocks = nn.ModuleList([EncoderBlock(width) for _ in range(2)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, images):
        n = images.shape[0]
        patches = images.reshape(n, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(n, 16, 49)
        x = self.embedding(patches) + self.position
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(1))


def make_model(name):
    nn = torch.nn
    if name == "compare_cnn":
        w = 16
        return nn.Sequential(nn.Conv2d(1, w, 3, 1, 1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(w, 2 * w, 3, 1, 1), nn.BatchNorm2d(2 * w), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2 * w * 7 * 7, 10))
    if name == "compare_transformer":
        return PatchTransformer(64)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                             nn.ReLU(), nn.Linear(1024, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                         nn.Linear(128, 10))


class Runner:
    def __init__(self, model_name, precision, images, labels):
        torch.manual_seed(0)
        self.model = make_model(model_name)
        lr = 0.05 if model_name.startswith("compare_") else 0.01
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.batch = 128 if model_name == "cnn" else 256
        self.precision = precision
        self.images, self.labels = images, labels
        self.position = 0
        self.step()  # warm-up: allocations, oneDNN/OpenBLAS initialisation

    def step(self):
        n = self.images.shape[0]
        if self.position + self.batch > n:
            self.position = 0
        x = self.images[self.position:self.position + self.batch]
        y = self.labels[self.position:self.position + self.batch]
        self.position += self.batch
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--limit", type=int, default=12800)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    images, labels = load_fashion_mnist(args.data_dir, args.limit)
    # fp32 matrix products go to the BLAS; bf16 ones, and convolutions of these shapes in both
    # dtypes, to oneDNN when torch was built with it (docs/PERFORMANCE.md says which ran).
    onednn = "yes" if torch.backends.mkldnn.is_available() else "no"
    print(f"ready torch {torch.__version__} threads {torch.get_num_threads()} "
          f"BLAS {blas_library()} (fp32 products), oneDNN {onednn} (bf16 products, convolutions)",
          flush=True)
    runners = {}
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            break
        model_name, precision, steps = parts[0], parts[1], int(parts[2])
        if precision == "fp16":
            print("unsupported torch 1.13 has no CPU fp16 autocast", flush=True)
            continue
        if precision == "o2bf16":
            print("unsupported apex O2 is ampcpp's side only", flush=True)
            continue
        key = (model_name, precision)
        if key not in runners:
            runners[key] = Runner(model_name, precision, images, labels)
        runner = runners[key]
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            runner.step()
            times.append((time.perf_counter() - start) * 1e3)
        print("ms " + " ".join(f"{t:.4f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
