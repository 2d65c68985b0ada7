"""The portable build's kernels against a -march=native build's, on one machine in one run.

Runs `tally_ops dispatch` (bench/tally_ops.cpp) for each configuration in interleaved rounds, so
that drift on a shared machine hits every configuration alike, and prints the median time per op
with ratios to the native build (Note [CPU kernel dispatch] in tally/kernels/cpu/dispatch.h).

Usage: compare_dispatch.py --native BUILD --portable BUILD [--rounds N] [--iters N] [--markdown FILE]
"""
import argparse
import json
import os
import statistics
import subprocess


def run(build, kernels, iters):
    env = dict(os.environ)
    env.pop("TALLY_CPU_KERNELS", None)
    if kernels:
        env["TALLY_CPU_KERNELS"] = kernels
    cmd = [os.path.join(build, "bench", "tally_ops"), "dispatch", "--iters", str(iters)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return {m["name"]: statistics.median(m["seconds"]) for m in map(json.loads, out.splitlines())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--native", required=True, help="build directory configured with -DTALLY_NATIVE=ON")
    ap.add_argument("--portable", required=True, help="build directory with the default options")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    configs = [("native", args.native, None), ("portable", args.portable, None),
               ("portable avx2", args.portable, "avx2"), ("portable baseline", args.portable, "baseline")]
    rounds = {name: [] for name, _, _ in configs}
    for _ in range(args.rounds):
        for name, build, kernels in configs:
            rounds[name].append(run(build, kernels, args.iters))
    ops = list(rounds["native"][0])
    med = {name: {op: statistics.median(r[op] for r in rs) for op in ops} for name, rs in rounds.items()}
    spread = {op: max((max(r[op] for r in rs) - min(r[op] for r in rs)) / med[n][op] for n, rs in rounds.items()) for op in ops}
    lines = ["| op | native ms | portable ms | portable / native | avx2 / native | baseline / native | spread |",
             "|---|---|---|---|---|---|---|"]
    for op in ops:
        nat = med["native"][op]
        lines.append(f"| {op} | {nat * 1e3:.2f} | {med['portable'][op] * 1e3:.2f} | {med['portable'][op] / nat:.2f} | "
                     f"{med['portable avx2'][op] / nat:.2f} | {med['portable baseline'][op] / nat:.2f} | {spread[op] * 100:.0f}% |")
    table = "\n".join(lines)
    print(f"{args.rounds} interleaved rounds x {args.iters} calls; medians; ratio > 1 is slower than native; "
          "spread = largest (max - min) / median over rounds of any configuration")
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
