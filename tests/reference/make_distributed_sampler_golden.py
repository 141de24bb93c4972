#!/usr/bin/python3
"""Golden data for amp::data::DistributedSampler (tests/datasets/test_distributed_sampler.cpp).

Writes tests/data/distributed_sampler_golden.txt: for several dataset sizes n, replica counts and
drop_last, every rank's indices from PyTorch's torch.utils.data.DistributedSampler with
shuffle=False (with shuffling, torch.randperm's generator differs from ours, so only the
unshuffled shards can be compared index for index). One line per shard:

    n num_replicas drop_last rank : index index ...

Run with Debian's interpreter and python3-torch (scripts/setup.sh --reference):
    /usr/bin/python3 tests/reference/make_distributed_sampler_golden.py
"""
import os

import torch
from torch.utils.data import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "distributed_sampler_golden.txt")

CASES = [(10, 1), (10, 2), (10, 3), (11, 4), (12, 4), (3, 5), (1, 2), (0, 3), (100, 7), (2, 5)]


def main():
    lines = [f"# torch {torch.__version__}: torch.utils.data.DistributedSampler, shuffle=False"]
    for n, replicas in CASES:
        for drop_last in (False, True):
            for rank in range(replicas):
                sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank,
                                             shuffle=False, drop_last=drop_last)
                indices = list(iter(sampler))
                assert len(indices) == len(sampler)
                lines.append(f"{n} {replicas} {int(drop_last)} {rank} : "
                             + " ".join(str(i) for i in indices))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(lines) - 1} shards")


if __name__ == "__main__":
    main()
