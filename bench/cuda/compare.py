"""Run tally's and PyTorch's GPU measurements in one invocation and print the table that
bench/RESULTS.md records: each figure, the ratio, and the issue's target next to it.
Usage (on the GPU machine, after scripts/gpu_build.sh):
    python3 bench/cuda/compare.py build-cuda [--quick]"""
import json
import subprocess
import sys
from pathlib import Path


def measure(cmd):
    rows, head = {}, {}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if not line.startswith("{"):
            print(line)
            continue
        obj = json.loads(line)
        if "name" in obj:
            rows[obj["name"]] = obj
        else:
            head.update(obj)
    return head, rows


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build-cuda")
    extra = [a for a in sys.argv[2:] if a == "--quick"]
    here = Path(__file__).resolve().parent
    # Interleave: tally, torch, tally, torch; keep each side's better run (the machine is shared).
    runs = []
    for _ in range(2):
        runs.append(("tally", measure([str(build / "bench" / "cuda_ops"), *extra])))
        runs.append(("torch", measure([sys.executable, str(here / "torch_ops.py"), *extra])))
    best = {"tally": {}, "torch": {}}
    heads = {}
    for who, (head, rows) in runs:
        heads.setdefault(who, head)
        for name, row in rows.items():
            v = row["value"]
            lower_is_better = row["unit"] == "us"
            old = best[who].get(name)
            if old is None or (v < old if lower_is_better else v > old):
                best[who][name] = v
    print(f"device: {heads['tally'].get('device')}; torch {heads['torch'].get('torch')}")
    copy = best["tally"].get("copy_GBps", 0)
    targets = {
        "matmul_bfloat16_TFLOPs": ">= 0.95x torch", "matmul_fp8_e4m3_TFLOPs": ">= 0.95x torch",
        "add_GBps": ">= 90% copy and >= torch", "mul_scalar_GBps": ">= 90% copy and >= torch",
        "softmax_GBps": ">= 90% copy and >= torch", "launch_autograd_us_per_op": "<= torch",
    }
    print("| measurement | tally | torch | tally/torch | tally vs copy | target | met |")
    print("|---|---|---|---|---|---|---|")
    for name in best["tally"]:
        t, p = best["tally"][name], best["torch"].get(name)
        ratio = t / p if p else float("nan")
        vs_copy = f"{100 * t / copy:.0f}%" if name.endswith("GBps") and copy else ""
        target = targets.get(name, "")
        met = ""
        if target:
            if name.startswith("matmul"):
                ok = ratio >= 0.95
            elif name.startswith("launch"):
                ok = t <= p
            else:
                ok = t >= 0.9 * copy and ratio >= 1.0
            met = "met" if ok else "**missed**"
        print(f"| {name} | {t:.4g} | {p:.4g} | {ratio:.2f}x | {vs_copy} | {target} | {met} |")


if __name__ == "__main__":
    main()
