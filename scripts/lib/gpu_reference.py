#!/usr/bin/env python3
"""PyTorch reference figures for the GPU acceptance run (scripts/gpu-validate.sh --bundle).

Measures, on one GPU, what Vigil's CUDA probes measure, the same way and at the same sizes
(checks/src/cuda/probe_math.h), so that each probe's figure can be judged as a ratio against
an independent implementation on the same GPU at the same moment:
  gemm   bf16 8192^3 matmul, uniform random data in [-0.5, 0.5) like gpu_gemm; TFLOP/s = 2mnk/t
         (also on zeros, for the record: easy data runs faster, docs/gpu-validation.md)
  hbm    device-to-device copy of a 1 GiB (quick) and 4 GiB (full) buffer, counted as
         read + write (2 x bytes), like gpu_hbm
  h2d/d2h  pinned host buffer of 256 MiB (quick) and 1 GiB (full), one direction, like
         gpu_pcie_bw
Each figure is the median of timed batches (CUDA events) after a warm-up of at least the
probe's own minimum time. Writes one JSON object to stdout.

  python3 gpu_reference.py measure [--device N]
  python3 gpu_reference.py hold SECONDS [--device N] [--gib G] [--load]   # someone else's job
"""
import argparse
import json
import statistics
import sys
import time


def timed_batches(torch, fn, warmup, iters, batches, min_warmup_s):
    """Median seconds of one call of fn, over `batches` CUDA-event-timed batches of `iters`."""
    start = time.monotonic()
    done = 0
    while done < warmup or time.monotonic() - start < min_warmup_s:
        fn()
        done += 1
        if done % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(batches):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        per_call.append(a.elapsed_time(b) / 1e3 / iters)
    return statistics.median(per_call), per_call


def measure(args):
    import torch

    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    out = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device_name": props.name,
        "sm_count": props.multi_processor_count,
        "total_memory_bytes": props.total_memory,
    }
    # The plans of checks/src/cuda/probe_math.h: {warmup, iters, batches, min_warmup_s}.
    gemm_plans = {"quick": (10, 20, 3, 0.5), "full": (50, 100, 10, 2.0)}
    n = 8192
    a = torch.rand((n, n), device=dev, dtype=torch.bfloat16) - 0.5
    b = torch.rand((n, n), device=dev, dtype=torch.bfloat16) - 0.5
    c = torch.empty((n, n), device=dev, dtype=torch.bfloat16)
    flops = 2.0 * n * n * n
    for suite, plan in gemm_plans.items():
        t, batches = timed_batches(torch, lambda: torch.matmul(a, b, out=c), *plan)
        out[f"gemm_bf16_tflops_{suite}"] = flops / t / 1e12
        out[f"gemm_bf16_tflops_{suite}_batches"] = [flops / x / 1e12 for x in batches]
    za = torch.zeros_like(a)
    zb = torch.zeros_like(b)
    t, _ = timed_batches(torch, lambda: torch.matmul(za, zb, out=c), *gemm_plans["quick"])
    out["gemm_bf16_tflops_zeros_quick"] = flops / t / 1e12
    del a, b, c, za, zb
    torch.cuda.empty_cache()

    gib = 1 << 30
    for suite, size, plan in (("quick", 1 * gib, (3, 10, 3, 0.2)), ("full", 4 * gib, (5, 20, 5, 0.5))):
        src = torch.empty(size, dtype=torch.uint8, device=dev).fill_(1)
        dst = torch.empty_like(src)
        t, _ = timed_batches(torch, lambda: dst.copy_(src), *plan)
        out[f"hbm_copy_gbps_{suite}"] = 2.0 * size / t / 1e9
        del src, dst
        torch.cuda.empty_cache()

    mib = 1 << 20
    for suite, size, plan in (("quick", 256 * mib, (2, 5, 3, 0.1)), ("full", 1 * gib, (3, 10, 5, 0.2))):
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True).fill_(1)
        devbuf = torch.empty(size, dtype=torch.uint8, device=dev)
        t, _ = timed_batches(torch, lambda: devbuf.copy_(host, non_blocking=True), *plan)
        out[f"h2d_gbps_{suite}"] = size / t / 1e9
        t, _ = timed_batches(torch, lambda: host.copy_(devbuf, non_blocking=True), *plan)
        out[f"d2h_gbps_{suite}"] = size / t / 1e9
        del host, devbuf
    json.dump(out, sys.stdout, indent=1)
    print()


def hold(args):
    """Holds the GPU like someone else's job would: a context and args.gib GiB, then sleeps, or
    with --load runs bf16 matmuls back to back (a training job's power draw) until the time is up."""
    import torch

    dev = torch.device("cuda", args.device)
    buf = torch.empty(int(args.gib * (1 << 30)), dtype=torch.uint8, device=dev)
    buf.fill_(7)
    torch.cuda.synchronize()
    print(f"holding cuda:{args.device} with {args.gib} GiB{' under load' if args.load else ''}",
          flush=True)
    if not args.load:
        time.sleep(args.seconds)
        return
    n = 8192
    a = torch.rand((n, n), device=dev, dtype=torch.bfloat16) - 0.5
    b = torch.rand((n, n), device=dev, dtype=torch.bfloat16) - 0.5
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for _ in range(20):
            torch.matmul(a, b)
        torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--device", type=int, default=0)
    h = sub.add_parser("hold")
    h.add_argument("seconds", type=float)
    h.add_argument("--device", type=int, default=0)
    h.add_argument("--gib", type=float, default=4.0)
    h.add_argument("--load", action="store_true", help="run matmuls instead of sleeping")
    args = p.parse_args()
    measure(args) if args.cmd == "measure" else hold(args)


if __name__ == "__main__":
    main()
