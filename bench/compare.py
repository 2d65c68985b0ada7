#!/usr/bin/python3
"""tally against PyTorch on the foundation issue's targets, measured in one invocation.

A shared 2-core machine drifts by ±10% from minute to minute, so a ratio is only meaningful when both
sides are measured under the same conditions: each round runs a group of tally measurements (the
bench/tally_ops and bench/views binaries, as subprocesses) right next to the same group in PyTorch
(in this process), alternating which side goes first, and the table reports medians over rounds.

Run with Debian's interpreter, which has torch 1.13:
    /usr/bin/python3 bench/compare.py --build-dir build-bench [--rounds 5] [--markdown table.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

GROUPS = ["peak", "matmul_f32", "matmul_bf16", "memory", "views", "tiny_matmul"]
TINY_SHAPES = [(2, 2, 2), (8, 8, 8), (4, 8, 16), (16, 16, 16), (32, 32, 32)]
TINY_CALLS = 1000  # per timed iteration, on both sides
MEMORY_ROWS, MEMORY_COLS = 16384, 4096  # 64M float32 elements = 256 MiB per tensor
VIEW_CALLS = 100000

# Which STREAM kernel moves memory the way each op does (reads : writes).
STREAM_PEER = {"add": "stream_add", "mul_scalar": "stream_scale", "sum": "stream_read", "softmax": "stream_copy"}
MEMORY_LABEL = {"add": "x + y", "mul_scalar": "x * 2", "sum": "x.sum()", "softmax": "softmax(x, -1)"}
# (wanted tally/torch ratio, wanted fraction of the ceiling)
MEMORY_TARGET = {"add": (1.5, 0.8), "mul_scalar": (1.5, 0.8), "sum": (0.95, 0.8), "softmax": (1.5, 0.8)}
# Views of 16 and 16M elements count as equal when their medians differ by less than this.
VIEW_NOISE = 0.15


# ---------------------------------------------------------------- measuring


def tally_group(build_dir, group, iters):
    """Runs one tally binary and returns its JSON lines keyed by name."""
    if group == "views":
        cmd = [os.path.join(build_dir, "bench", "views"), "--batches", "5"]
    else:
        cmd = [os.path.join(build_dir, "bench", "tally_ops"), group, "--iters", str(iters)]
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count() or 2))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return {rec["name"] + ("/%d" % rec["numel"] if "numel" in rec else ""): rec
            for rec in map(json.loads, out.splitlines())}


def time_torch(name, iters, flops, nbytes, fn):
    """Per-call times of fn after one warm-up call, in the shape tally_ops prints."""
    fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"name": name, "seconds": times, "flops": flops, "bytes": nbytes}


def blas_is_reference():
    """Whether torch's float32 matmul goes to a generic (reference, unblocked) BLAS."""
    return "BLAS_INFO=generic" in torch.__config__.show()


def torch_matmul(dtype, tag, sizes, iters):
    """torch.matmul as a user calls it, plus, for float32, torch's own oneDNN path (mkldnn_linear):
    Debian's torch sends float32 matmul to whatever libblas.so.3 is installed, which may be the
    reference BLAS at ~1 GFLOP/s; oneDNN is the peer an optimised BLAS would roughly match."""
    shapes = [(s, s, s) for s in sizes] + ([(1024, 256, 64)] if dtype == torch.float32 else [])
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
        flops = 2.0 * m * n * k
        nbytes = (m * k + k * n + m * n) * a.element_size()
        calls = max(2, iters // 2) if flops > 1e11 else iters
        name = "matmul_%s_%dx%dx%d" % (tag, m, k, n)
        # The reference BLAS needs ~15 s for 2048³ and ~2 min for 4096³: left out there.
        if not (dtype == torch.float32 and blas_is_reference() and flops > 1e10):
            out[name] = time_torch(name, calls, flops, nbytes, lambda: torch.matmul(a, b))
        if dtype == torch.float32:
            am, wm = a.to_mkldnn(), b.t().contiguous().to_mkldnn()  # linear computes a @ w.T
            out[name + "_onednn"] = time_torch(name, calls, flops, nbytes,
                                               lambda: torch._C._nn.mkldnn_linear(am, wm, None))
    return out


def torch_memory(iters):
    x, y = torch.randn(MEMORY_ROWS, MEMORY_COLS), torch.randn(MEMORY_ROWS, MEMORY_COLS)
    nb, n = x.numel() * 4, x.numel()
    holder = {}

    # As a user writes it: `z = x + y` in a loop, the previous z freed when the name is rebound.
    def keep(value):
        holder["z"] = value

    out = {}
    out["add"] = time_torch("add", iters, n, 3 * nb, lambda: keep(x + y))
    out["mul_scalar"] = time_torch("mul_scalar", iters, n, 2 * nb, lambda: keep(x * 2))
    out["sum"] = time_torch("sum", iters, n, nb + 4, lambda: keep(x.sum()))
    out["softmax"] = time_torch("softmax", iters, 5 * n, 2 * nb, lambda: keep(torch.softmax(x, -1)))
    out["randn"] = time_torch("randn", iters, 0, nb, lambda: keep(torch.randn(MEMORY_ROWS, MEMORY_COLS)))
    out["t_contiguous"] = time_torch("t_contiguous", iters, 0, 2 * nb, lambda: keep(x.t().contiguous()))
    return out


def torch_tiny_matmul(iters):
    out = {}
    for m, k, n in TINY_SHAPES:
        a, b = torch.randn(m, k), torch.randn(k, n)
        name = "tiny_matmul_%dx%dx%d" % (m, k, n)

        def calls():
            for _ in range(TINY_CALLS):
                torch.matmul(a, b)
        out[name] = time_torch(name, iters, TINY_CALLS * 2.0 * m * n * k, 0, calls)
    return out


def torch_views():
    out = {}
    for shape in [(4, 4), (4096, 4096)]:
        x = torch.randn(*shape)
        cases = {"view": lambda: x.view(-1), "transpose": lambda: x.transpose(0, 1), "slice": lambda: x[1:3],
                 "index": lambda: x[1, 0:2], "reshape": lambda: x.reshape(-1)}
        for name, fn in cases.items():
            batches = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(VIEW_CALLS):
                    fn()
                batches.append((time.perf_counter() - t0) / VIEW_CALLS * 1e9)
            out["%s/%d" % (name, x.numel())] = {"ns_per_call": batches}
    return out


def torch_group(group, iters):
    if group == "matmul_f32":
        return torch_matmul(torch.float32, "f32", [256, 512, 1024, 2048, 4096], iters)
    if group == "matmul_bf16":
        return torch_matmul(torch.bfloat16, "bf16", [512, 1024, 2048], iters)
    if group == "memory":
        return torch_memory(iters)
    if group == "views":
        return torch_views()
    if group == "tiny_matmul":
        return torch_tiny_matmul(iters)
    return {}


def measure(build_dir, groups, rounds, iters):
    """{side: {name: [record per round]}}, the two sides interleaved group by group."""
    data = {"tally": {}, "torch": {}}
    for r in range(rounds):
        for group in groups:
            sides = ["tally", "torch"] if r % 2 == 0 else ["torch", "tally"]
            for side in sides:
                t0 = time.perf_counter()
                recs = tally_group(build_dir, group, iters) if side == "tally" else torch_group(group, iters)
                for name, rec in recs.items():
                    data[side].setdefault(name, []).append(rec)
                print("round %d/%d %-11s %-5s %5.1f s" % (r + 1, rounds, group, side, time.perf_counter() - t0),
                      file=sys.stderr, flush=True)
    return data


# ---------------------------------------------------------------- summarising


def median_seconds(recs):
    """Median over rounds of each round's median call time."""
    return statistics.median(statistics.median(r["seconds"]) for r in recs)


def spread(values):
    """(max - min) / median of per-round values: how noisy the rounds were."""
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def rate(recs, key):
    return recs[0][key] / median_seconds(recs)


def ceiling(data, name):
    return statistics.median(r["value"] for r in data["tally"][name]) if name in data["tally"] else None


def verdict(ok):
    return "met" if ok else "**missed**"


def build_rows(data):
    """Table rows: (measurement, tally, torch, ratio, ratio wanted, tally/ceiling, ceiling wanted, met)."""
    rows = []
    T, P = data["tally"], data["torch"]
    peak = ceiling(data, "peak_fma_f32")
    for tag, want in [("f32", 1.0), ("bf16", 1.2)]:
        for name in sorted((n for n in T if n.startswith("matmul_%s_" % tag) and not n.endswith("_onednn")),
                           key=lambda n: [int(v) for v in n.split("_")[-1].split("x")]):
            tg = rate(T[name], "flops") / 1e9
            m, k, n = (int(v) for v in name.split("_")[-1].split("x"))
            shape = "%d³" % m if m == k == n else "%d×%d @ %d×%d" % (m, k, k, n)
            # float32 is judged against torch's oneDNN path; torch.matmul is shown when measured.
            peer = name + "_onednn" if tag == "f32" else name
            pg = rate(P[peer], "flops") / 1e9 if peer in P else float("nan")
            ok = tg / pg >= want
            frac, frac_want = "", ""
            if tag == "f32" and peak:
                frac = "%.0f%% (torch %.0f%%)" % (100 * tg * 1e9 / peak, 100 * pg * 1e9 / peak)
                if m == k == n and m >= 1024:
                    frac_want = "≥ 80%"
                    ok = ok and tg * 1e9 / peak >= 0.8
            torch_cell = "%.1f" % pg
            if tag == "f32":
                plain_mm = "%.1f" % (rate(P[name], "flops") / 1e9) if name in P else "not run"
                torch_cell = "%.1f oneDNN (matmul: %s)" % (pg, plain_mm)
            rows.append(("matmul %s %s GFLOP/s" % (tag, shape), "%.1f" % tg, torch_cell, "%.2f×" % (tg / pg),
                         "≥ %.1f×" % want, frac, frac_want, verdict(ok)))
    for name in ["add", "mul_scalar", "sum", "softmax"]:
        if name not in T or name not in P:
            continue
        tg, pg = rate(T[name], "bytes") / 1e9, rate(P[name], "bytes") / 1e9
        want_ratio, want_frac = MEMORY_TARGET[name]
        stream = ceiling(data, STREAM_PEER[name])
        frac = tg * 1e9 / stream if stream else float("nan")
        ok = tg / pg >= want_ratio and frac >= want_frac
        rows.append(("%s GB/s (256 MiB)" % MEMORY_LABEL[name], "%.1f" % tg, "%.1f" % pg, "%.2f×" % (tg / pg),
                     "≥ %.2f×" % want_ratio, "%.0f%% of %s" % (100 * frac, STREAM_PEER[name]),
                     "≥ %.0f%%" % (100 * want_frac), verdict(ok)))
    if "randn" in T and "randn" in P:
        # No target in the issues: initialising weights should simply not be slower than torch.
        tg, pg = rate(T["randn"], "bytes") / 1e9, rate(P["randn"], "bytes") / 1e9
        rows.append(("randn(16384, 4096) GB/s written", "%.2f" % tg, "%.2f" % pg, "%.2f×" % (tg / pg), "≥ 1.0×", "", "",
                     verdict(tg / pg >= 1.0)))
    if "t_contiguous" in T and "t_contiguous" in P:
        # No target in the issues: a transpose made dense should not be slower than torch's.
        tg, pg = rate(T["t_contiguous"], "bytes") / 1e9, rate(P["t_contiguous"], "bytes") / 1e9
        stream = ceiling(data, "stream_copy")
        rows.append(("x.t().contiguous() GB/s (256 MiB)", "%.1f" % tg, "%.1f" % pg, "%.2f×" % (tg / pg), "≥ 1.0×",
                     "%.0f%% of stream_copy" % (100 * tg * 1e9 / stream) if stream else "", "", verdict(tg / pg >= 1.0)))
    for m, k, n in TINY_SHAPES:
        name = "tiny_matmul_%dx%dx%d" % (m, k, n)
        if name not in T or name not in P:
            continue
        tn, pn = (median_seconds(side[name]) / TINY_CALLS * 1e9 for side in (T, P))
        rows.append(("matmul f32 %d×%d @ %d×%d ns/call" % (m, k, k, n), "%.0f" % tn, "%.0f" % pn,
                     "%.2f× faster" % (pn / tn), "≥ 1.0×", "", "", verdict(pn / tn >= 1.0)))
    for op in ["view", "transpose", "slice", "index", "reshape"]:
        small, large = T.get("%s/16" % op), T.get("%s/16777216" % op)
        if not small or not large:
            continue
        ns = [statistics.median(statistics.median(r["ns_per_call"]) for r in recs) for recs in (small, large)]
        torch_ns = [statistics.median(statistics.median(r["ns_per_call"]) for r in P.get("%s/%d" % (op, n), []))
                    if P.get("%s/%d" % (op, n)) else float("nan") for n in (16, 16777216)]
        alloc = max(abs(r["allocated_delta_bytes"]) + abs(r["peak_delta_bytes"]) for r in small + large)
        allocs = max(r["num_allocs_delta"] for r in small + large)
        shares = all(r["shares_storage"] for r in small + large)
        equal = abs(ns[1] / ns[0] - 1) <= VIEW_NOISE
        rows.append(("%s ns/call, 16 / 16M elems" % op, "%.0f / %.0f" % tuple(ns), "%.0f / %.0f" % tuple(torch_ns),
                     "%.1f× / %.1f×" % (torch_ns[0] / ns[0], torch_ns[1] / ns[1]),
                     "16M ≈ 16 (±%.0f%%)" % (100 * VIEW_NOISE),
                     "Δallocated %d B, %d allocs" % (alloc, allocs), "0 B, 0 allocs",
                     verdict(equal and alloc == 0 and allocs == 0 and shares)))
    return rows


HEADER = ("measurement", "tally", "torch", "tally/torch", "wanted", "tally vs ceiling", "wanted", "target")


def ceilings_line(data):
    parts = []
    peak = ceiling(data, "peak_fma_f32")
    if peak:
        parts.append("float32 FMA peak %.1f GFLOP/s" % (peak / 1e9))
    for k in ["stream_read", "stream_copy", "stream_scale", "stream_add", "stream_triad"]:
        v = ceiling(data, k)
        if v:
            parts.append("%s %.1f GB/s" % (k, v / 1e9))
    return "Ceilings measured in this run (median of rounds): " + ", ".join(parts) if parts else ""


def noise_line(data):
    worst = []
    for side in ("tally", "torch"):
        for name, recs in data[side].items():
            if "seconds" in recs[0] and len(recs) > 1:
                worst.append((spread([statistics.median(r["seconds"]) for r in recs]), side, name))
    if not worst:
        return ""
    worst.sort(reverse=True)
    return "Largest round-to-round spread (max-min)/median: " + ", ".join(
        "%s %s %.0f%%" % (s, n, 100 * v) for v, s, n in worst[:3])


def markdown(rows):
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def plain(rows):
    widths = [max(len(str(r[i])) for r in [HEADER] + rows) for i in range(len(HEADER))]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return "\n".join(fmt % tuple(r) for r in [HEADER] + rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build-bench", help="CMake build directory holding bench/")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians are over rounds)")
    ap.add_argument("--iters", type=int, default=5, help="timed calls per measurement per round")
    ap.add_argument("--groups", default=",".join(GROUPS), help="comma-separated subset of " + ",".join(GROUPS))
    ap.add_argument("--markdown", help="also write the table as markdown to this file")
    ap.add_argument("--raw", help="also write every raw measurement as JSON to this file")
    args = ap.parse_args()

    torch.set_num_threads(os.cpu_count() or 2)  # torch 1.13 here defaults to 1 thread
    groups = args.groups.split(",")
    info = tally_group(args.build_dir, "info", 0)["info"]
    machine = "Machine: %s, %d usable cores, %.2f GHz measured; %s" % (
        info["model"], info["usable_cores"], info["clock_ghz"], info["features"])
    data = measure(args.build_dir, groups, args.rounds, args.iters)
    rows = build_rows(data)
    notes = [s for s in (machine, ceilings_line(data), noise_line(data)) if s]
    head = "torch %s, %d threads, BLAS %s; %d rounds, %d calls each; medians" % (
        torch.__version__, torch.get_num_threads(), "reference (generic)" if blas_is_reference() else "optimised",
        args.rounds, args.iters)
    print("\n".join([head] + notes + ["", plain(rows)]))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join([head] + notes + [markdown(rows)]) + "\n")
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(data, f, indent=1)


if __name__ == "__main__":
    main()
