#!/usr/bin/python3
"""torch.optim.Adam (single-tensor path, foreach=False) on bench_optim's shapes: 10M fp32
parameters in 100 tensors of 100,000. Prints the median single step as `ms_per_step=<ms>`
(bench_optim --torch runs this and reads that line).

    /usr/bin/python3 bench/torch_adam.py
"""
import os
import statistics
import time

import torch


def main():
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    params = []
    for _ in range(100):
        p = torch.nn.Parameter(torch.rand(100_000) * 0.1)
        p.grad = torch.rand(100_000) * 1e-3
        params.append(p)
    adam = torch.optim.Adam(params, lr=1e-3, foreach=False)
    for _ in range(2):  # warm-up: state allocation
        adam.step()
    times = []
    for _ in range(30):
        start = time.perf_counter()
        adam.step()
        times.append(time.perf_counter() - start)
    print(f"torch {torch.__version__}, {threads} threads")
    print(f"ms_per_step={statistics.median(times) * 1e3:.3f}")


if __name__ == "__main__":
    main()
