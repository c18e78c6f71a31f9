"""What the peer asks of the machine it runs on, as shardbench's engines do: ranks pinned to
cores (timing.pin_cores) and the device's matmul rate (the MFU denominator)."""
import os
import time


def pin_to_rank_cores(local_rank, local_world_size):
    """timing.pin_cores as harness/timing_controls.cc does it: local ranks split the cores this
    process may use, in order (round robin when there are more ranks than cores)."""
    cores = sorted(os.sched_getaffinity(0))
    if local_world_size <= 1:
        return
    per_rank = max(1, len(cores) // local_world_size)
    first = local_rank * per_rank % len(cores)
    os.sched_setaffinity(0, {cores[(first + i) % len(cores)] for i in range(per_rank)})


def matmul_peak(device, n=8192):
    """The bf16 n^3 matmul rate this device reaches now (engine/profile/matmul_peak.h's measure)."""
    import torch
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    best = 0.0
    for _ in range(5):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        torch.cuda.synchronize(device)
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0))
    return best
