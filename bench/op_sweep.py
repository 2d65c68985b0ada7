#!/usr/bin/python3
"""Everyday ops on [2048, 2048] tensors, tally (bench/op_sweep.cpp) beside PyTorch 1.13, to find the
ones where tally is far off: prints each op's best-of-five time on both sides and PyTorch's time over
tally's (above 1: tally is faster), slowest ratio first. One run each, back to back: on this shared
machine a ratio within ±20% of 1 is noise; the sweep is for the ops a long way off.

Run with Debian's interpreter, which has torch 1.13:
    /usr/bin/python3 bench/op_sweep.py [--build-dir build]"""

import argparse
import json
import subprocess
import time

import torch
import torch.nn.functional as F


def best_ms(op):
    op()
    op()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(5):
            op()
        best = min(best, (time.perf_counter() - start) / 5 * 1e3)
    return best


def torch_ops():
    torch.manual_seed(1)
    n = 2048
    x, y, row, col = torch.randn(n, n), torch.randn(n, n), torch.randn(n), torch.randn(n, 1)
    xb, yb, x3 = x.bfloat16(), y.bfloat16(), torch.randn(64, 256, 256)
    index, mask, w, b = torch.randint(0, n, (n,)), x > 0, torch.ones(n), torch.zeros(n)
    # The names are bench/op_sweep.cpp's: keep the two lists in step.
    return {
        "x + y": lambda: x + y, "x + row": lambda: x + row, "x + col": lambda: x + col, "x.t() + y": lambda: x.t() + y,
        "x.t() + y.t()": lambda: x.t() + y.t(), "x * 2": lambda: x * 2, "x / y": lambda: x / y, "exp": lambda: torch.exp(x),
        "log(abs)": lambda: torch.log(torch.abs(x)), "tanh": lambda: torch.tanh(x), "sigmoid": lambda: torch.sigmoid(x),
        "relu": lambda: torch.relu(x), "gelu": lambda: F.gelu(x), "gelu tanh": lambda: F.gelu(x, approximate="tanh"),
        "silu": lambda: F.silu(x), "x ** 2": lambda: torch.pow(x, 2), "x ** 3.0": lambda: torch.pow(x, 3.0),
        "clamp": lambda: torch.clamp(x, -0.5, 0.5), "where": lambda: torch.where(mask, x, y),
        "masked_fill": lambda: x.masked_fill(mask, 0.0), "x > y": lambda: x > y, "x == 0.5": lambda: x.eq(0.5),
        "maximum": lambda: torch.maximum(x, y), "addcmul": lambda: torch.addcmul(x, y, y, value=0.5),
        "lerp": lambda: torch.lerp(x, y, 0.3), "sum()": lambda: x.sum(), "sum(0)": lambda: x.sum(0), "sum(1)": lambda: x.sum(1),
        "mean(1)": lambda: x.mean(1), "var(0)": lambda: x.var(0), "var(1)": lambda: x.var(1), "amax(0)": lambda: x.amax(0),
        "amax(1)": lambda: x.amax(1), "max()": lambda: x.max(), "argmax(1)": lambda: x.argmax(1), "prod(1)": lambda: x.prod(1),
        "any()": lambda: mask.any(), "softmax(-1)": lambda: torch.softmax(x, -1), "softmax(0)": lambda: torch.softmax(x, 0),
        "log_softmax(-1)": lambda: torch.log_softmax(x, -1), "layer_norm": lambda: F.layer_norm(x, (n,), w, b),
        "cross_entropy": lambda: F.cross_entropy(x, index), "cat dim 0": lambda: torch.cat([x, y], 0),
        "cat dim 1": lambda: torch.cat([x, y], 1), "stack": lambda: torch.stack([x, y], 0),
        "x.t().contiguous()": lambda: x.t().contiguous(),
        "[64,256,256] permute(0,2,1) copy": lambda: x3.permute(0, 2, 1).contiguous(),
        "[64,256,256] permute(1,0,2) copy": lambda: x3.permute(1, 0, 2).contiguous(),
        "x[:, ::2] copy": lambda: x[:, ::2].contiguous(), "index_select rows": lambda: x.index_select(0, index),
        "tril": lambda: torch.tril(x), "to bf16": lambda: x.bfloat16(), "bf16 to float32": lambda: xb.float(),
        "bf16 x + y": lambda: xb + yb, "bf16 x * float32 y": lambda: xb * y, "bf16 gelu": lambda: F.gelu(xb),
        "bf16 softmax(-1)": lambda: torch.softmax(xb, -1), "bf16 sum(1)": lambda: xb.sum(1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build", help="CMake build directory holding bench/op_sweep")
    args = ap.parse_args()
    torch.set_num_threads(2)
    out = subprocess.run([args.build_dir + "/bench/op_sweep"], check=True, capture_output=True, text=True,
                         env={"OMP_NUM_THREADS": "2"}).stdout
    tally = {r["op"]: r["ms"] for r in map(json.loads, out.splitlines())}
    ops = torch_ops()
    missing = set(tally) ^ set(ops)
    if missing:
        raise SystemExit("bench/op_sweep.cpp and bench/op_sweep.py list different ops: %s" % sorted(missing))
    rows = sorted(((name, tally[name], best_ms(op)) for name, op in ops.items()), key=lambda r: r[2] / r[1])
    print("%-34s %10s %10s %8s" % ("op ([2048, 2048] float32 unless named)", "tally ms", "torch ms", "torch/tally"))
    for name, t, p in rows:
        print("%-34s %10.3f %10.3f %8.2f" % (name, t, p, p / t))


if __name__ == "__main__":
    main()
