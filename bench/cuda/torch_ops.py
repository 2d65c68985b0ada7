"""PyTorch's side of bench/cuda_ops.cpp: the same measurements, the same way (CUDA events,
median of rounds), printed as the same JSON lines. Run with the GPU machine's python3."""
import json
import statistics
import sys
import time

import torch


def time_gpu(fn, iters, rounds=5):
    for _ in range(iters):
        fn()
    per_call = []
    for _ in range(rounds):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        per_call.append(start.elapsed_time(stop) / 1e3 / iters)
    return statistics.median(per_call)


def report(name, value, unit):
    print(json.dumps({"name": name, "value": value, "unit": unit}), flush=True)


def main():
    quick = "--quick" in sys.argv
    dev = torch.device("cuda:0")
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
    with torch.no_grad():
        n = 1 << 26 if quick else 1 << 28
        gib = n * 4.0
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty(n, device=dev)
        report("copy_GBps", 2 * gib / time_gpu(lambda: out.copy_(x), 10) / 1e9, "GB/s")
        report("add_GBps", 3 * gib / time_gpu(lambda: x + y, 10) / 1e9, "GB/s")
        report("mul_scalar_GBps", 2 * gib / time_gpu(lambda: x * 2, 10) / 1e9, "GB/s")
        rows = x.view(-1, 4096)
        report("softmax_GBps", 2 * gib / time_gpu(lambda: rows.softmax(-1), 10) / 1e9, "GB/s")
        xb, yb = x.bfloat16(), y.bfloat16()
        report("add_bf16_GBps", 3 * gib / 2 / time_gpu(lambda: xb + yb, 10) / 1e9, "GB/s")
        del x, y, out, rows, xb, yb
        torch.cuda.empty_cache()

        s = 4096 if quick else 8192
        flops = 2.0 * s ** 3
        a32, b32 = torch.randn(s, s, device=dev), torch.randn(s, s, device=dev)
        for d, label in ((torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
            a, b = a32.to(d), b32.to(d)
            report(f"matmul_{label}_TFLOPs", flops / time_gpu(lambda: a @ b, 10) / 1e12, "TFLOP/s")
        torch.backends.cuda.matmul.allow_tf32 = True
        report("matmul_tf32_TFLOPs", flops / time_gpu(lambda: a32 @ b32, 5) / 1e12, "TFLOP/s")
        torch.backends.cuda.matmul.allow_tf32 = False
        report("matmul_float32_TFLOPs", flops / time_gpu(lambda: a32 @ b32, 2, 3) / 1e12, "TFLOP/s")
        a8, w8 = a32.to(torch.float8_e4m3fn), b32.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev)
        report("matmul_fp8_e4m3_TFLOPs",
               flops / time_gpu(lambda: torch._scaled_mm(a8, w8.t(), one, one, out_dtype=torch.bfloat16), 10) / 1e12,
               "TFLOP/s")
        del a32, b32, a8, w8
        torch.cuda.empty_cache()

    w = torch.ones(1024, device=dev, requires_grad=True)
    ops = 2000

    def chain():
        y = w
        for _ in range(ops // 2):
            y = y * 1.0001 + 0.5
        return y

    chain()
    torch.cuda.synchronize()
    per_op = []
    for _ in range(5):
        t0 = time.perf_counter()
        chain()
        torch.cuda.synchronize()
        per_op.append((time.perf_counter() - t0) / ops)
    report("launch_autograd_us_per_op", statistics.median(per_op) * 1e6, "us")


if __name__ == "__main__":
    main()
