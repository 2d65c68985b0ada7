#!/usr/bin/env python3
"""Write synthetic training-run directories in the format of docs/run_dir.md, for the report tests.

    make_run_dir.py OUT_DIR [CASE ...]

Cases: full (a finished 300-step run: 20 ops, 7 modules, a 100-point memory timeline), killed (no
summary.json, last metrics line cut short), empty (empty metrics.jsonl, no summary.json), hostile
(names and config values with <script>, quotes and </script>), resumed (resumed from step 150),
summary-only (summary.json alone: no config.json, no metrics.jsonl), other (like full, with
another learning rate and width: a second run to compare with).
The numbers are made up but consistent with each other: a ~0.8 M-parameter transformer on a CPU
with a 98 GFLOP/s measured peak and 21 GB/s of bandwidth.
"""
import json
import math
import os
import random
import sys

STEPS = 300
TOKENS_PER_STEP = 2048  # batch 8 x context 256
PARAMS = 826880
FWD, BWD = 1.7e6, 3.4e6  # FLOPs per token
PEAK_PROMISED, PEAK, BW = 1.1e11, 9.8e10, 2.1e10
ENTROPY = 2.95
VAL_EVERY = 50  # steps between validation losses
STEP_S = (FWD + BWD) * TOKENS_PER_STEP / (0.31 * PEAK_PROMISED)  # MFU 31% of the promised peak

CONFIG = {
    "model": {"vocab_size": 256, "context_length": 256, "d_model": 128, "num_layers": 2, "num_heads": 4, "d_ff": 512},
    "optimizer": {"name": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "weight_decay": 0.1, "warmup_steps": 20},
    "batch_size": 8, "steps": STEPS, "dtype": "float32", "seed": 1234,
    "data": {"train": "data/tinystories.u16", "dtype": "uint16"},
    "checkpoint_interval": 100, "keep": 3,
}


def metrics_lines(first_step=1, last_step=STEPS, elapsed0=0.0, seed=0):
    rng = random.Random(seed)
    out, elapsed = [], elapsed0
    for step in range(first_step, last_step + 1):
        loss = 1.42 + (5.55 - 1.42) * math.exp(-step / 55.0) + rng.gauss(0, 0.04)
        lr = 3e-3 * min(1.0, step / 20) * (0.5 * (1 + math.cos(math.pi * step / STEPS)) * 0.9 + 0.1)
        step_s = STEP_S * (1.6 if step == first_step else 1.0) * (1 + rng.gauss(0, 0.03))
        elapsed += step_s
        out.append({"step": step, "loss": round(loss, 5), "lr": lr, "grad_norm": round(2.5 * math.exp(-step / 120) + 0.3 + rng.random() * 0.1, 4),
                    "tokens": step * TOKENS_PER_STEP, "step_s": round(step_s, 5),
                    "tokens_per_s": round(TOKENS_PER_STEP / step_s, 1), "mfu": round((FWD + BWD) * TOKENS_PER_STEP / step_s / PEAK_PROMISED, 4),
                    "elapsed_s": round(elapsed, 4)})
        if step % VAL_EVERY == 0:
            out[-1]["val_loss"] = round(1.52 + (5.55 - 1.52) * math.exp(-step / 55.0), 5)
    return out


def op(name, phase, calls, flops, bytes_, efficiency):
    """An op whose time is its roofline bound divided by `efficiency` (0 for free ops: views)."""
    flops, bytes_ = int(flops), int(bytes_)
    seconds = max(flops / PEAK, bytes_ / BW) / efficiency if efficiency else 0.0
    intensity = flops / bytes_ if bytes_ else 0.0
    bound = "compute" if intensity >= PEAK / BW else "memory"
    return {"name": name, "phase": phase, "calls": calls, "flops": flops, "bytes": bytes_, "seconds": seconds,
            "intensity": intensity, "bound": bound}


def ops_list():
    T, C, V, F = TOKENS_PER_STEP, 128, 256, 512
    mm = 0.9 * FWD * T  # the linear layers and the head: most of the forward FLOPs
    att = 2 * 2 * T * 256 * C  # q k^T and p v over a 256-token context
    return [
        op("embedding", "forward", 2, 0, T * C * 4 * 2, 0.6),
        op("matmul", "forward", 14, mm, mm / 40, 0.55),
        op("bmm", "forward", 4, att, att / 30, 0.45),
        op("add", "forward", 10, T * C * 10, T * C * 12 * 10, 0.7),
        op("layer_norm", "forward", 5, T * C * 8 * 5, T * C * 8 * 5, 0.5),
        op("softmax", "forward", 2, T * 256 * 5 * 4, T * 256 * 8 * 4, 0.4),
        op("gelu", "forward", 2, T * F * 9 * 2, T * F * 8 * 2, 0.6),
        op("cross_entropy", "forward", 1, T * V * 6, T * V * 8, 0.5),
        op("view", "forward", 24, 0, 0, 0),
        op("transpose", "forward", 8, 0, 0, 0),
        op("matmul", "backward", 28, 2 * mm, 2 * mm / 40, 0.5),
        op("bmm", "backward", 8, 2 * att, 2 * att / 30, 0.4),
        op("mul", "backward", 16, T * F * 16, T * F * 12 * 16 / 4, 0.7),
        op("sum", "backward", 12, T * C * 12, T * C * 4 * 12, 0.6),
        op("layer_norm_backward", "backward", 5, T * C * 14 * 5, T * C * 16 * 5, 0.45),
        op("softmax_backward", "backward", 2, T * 256 * 4 * 4, T * 256 * 12 * 4, 0.4),
        op("embedding_backward", "backward", 2, T * C * 2, T * C * 12 * 2, 0.3),
        op("mul_", "optimizer", 40, PARAMS * 4, PARAMS * 8 * 4, 0.8),
        op("addcdiv_", "optimizer", 20, PARAMS * 3, PARAMS * 16, 0.8),
        op("sqrt", "optimizer", 20, PARAMS, PARAMS * 8, 0.8),
    ]


def modules_list(hostile=False):
    T = TOKENS_PER_STEP
    names = ["embedding", "layers.0.attn", "layers.0.mlp", "layers.1.attn", "layers.1.mlp", "ln_f", "lm_head"]
    if hostile:
        names[3] = 'layers.1.<script>alert("x")</script>\'q\'&amp;'
    fl = {"embedding": 0, "attn": 2 * T * 128 * 512 + 4 * T * 256 * 128, "mlp": 4 * T * 128 * 512, "ln_f": T * 128 * 8,
          "lm_head": 2 * T * 128 * 256}
    out = []
    for phase, mult in (("forward", 1), ("backward", 2)):
        for n in names:
            kind = "attn" if "attn" in n or "<script>" in n else "mlp" if n.endswith("mlp") else n
            f = fl[kind] * mult
            out.append({"path": n, "phase": phase, "flops": int(f), "seconds": f / (0.4 * PEAK) + 0.0005})
    return out


def memory_timeline():
    p, g, o = PARAMS * 4, PARAMS * 4, PARAMS * 8
    act_per_op = 0.3e6
    out, act, grads = [], 0.0, 0.0
    names = ["embedding", "layer_norm", "matmul", "bmm", "softmax", "bmm", "matmul", "add", "layer_norm", "matmul", "gelu", "matmul", "add"]
    for i in range(100):
        if i < 42:
            phase, name = "forward", names[i % len(names)]
            act += act_per_op * (1.5 if "matmul" in name else 1.0)
        elif i < 86:
            phase, name = "backward", names[(85 - i) % len(names)] + "_backward"
            act = max(0.0, act - act * 0.07 - 0.04e6)
            grads = min(g, grads + g / 40)
        else:
            phase, name = "optimizer", "adamw"
            act, grads = 0.0, g
        out.append({"op": i, "name": name, "phase": phase, "parameters": p, "gradients": int(grads),
                    "optimizer_state": o, "activations": int(act), "other": 1 << 20})
    return out


def summary(config, resumed_from=0):
    ops = ops_list()
    peak_bytes = {"parameters": PARAMS * 4, "gradients": PARAMS * 4, "optimizer_state": PARAMS * 8,
                  "activations": 14_600_000, "other": 1 << 20}
    comp = sum(o["seconds"] for o in ops if o["bound"] == "compute")
    memb = sum(o["seconds"] for o in ops if o["bound"] == "memory")
    return {
        "tally_version": "0.1.0", "config": config,
        "machine": {"cpu": "AMD EPYC 9R45", "threads": 2, "kernel_set": "avx512",
                    "peak_flops_promised": PEAK_PROMISED, "peak_flops_measured": PEAK, "peak_bandwidth_measured": BW},
        "run": {"steps": STEPS, "tokens": STEPS * TOKENS_PER_STEP, "seconds": round(STEPS * STEP_S * 1.002, 2),
                "tokens_per_s": round(TOKENS_PER_STEP / STEP_S / 1.002, 1),
                "first_loss": 5.55, "final_loss": 1.42, "unigram_entropy": ENTROPY, "resumed_from_step": resumed_from},
        "parameters": PARAMS,
        "flops_per_token": {"predicted": {"forward": FWD, "backward": BWD},
                            "measured": {"forward": FWD * 1.03, "backward": BWD * 1.02, "optimizer": 29.0}},
        "mfu": {"promised": 0.31, "measured": round(0.31 * PEAK_PROMISED / PEAK, 4)},
        "hfu": {"promised": 0.36, "measured": round(0.36 * PEAK_PROMISED / PEAK, 4)},
        "step_time": {"predicted_s": round(STEP_S * 0.93, 4), "measured_s": round(STEP_S, 4), "note": "predicted from the measured matmul peak; elementwise ops at bandwidth"},
        "memory": {"predicted": {k: int(v * 0.97) for k, v in peak_bytes.items()}, "tracked_peak": peak_bytes,
                   "predicted_peak_total": 28_100_000, "tracked_peak_total": 29_000_000, "process_peak_rss": 61_000_000},
        "time_split": {"compute_bound_s": comp, "memory_bound_s": memb, "compute_bound_fraction": comp / (comp + memb)},
        "top_ops": sorted(ops, key=lambda o: -o["seconds"])[:5],
        "ops": ops, "modules": modules_list(), "memory_timeline": memory_timeline(),
        "validation": {"data": "held-out tail of the corpus", "last_loss": 1.521, "best_loss": 1.521, "best_step": STEPS},
    }


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_case(root, case):
    d = os.path.join(root, case)
    os.makedirs(d, exist_ok=True)
    for name in ("config.json", "metrics.jsonl", "summary.json", "report.html"):
        if os.path.exists(os.path.join(d, name)):
            os.remove(os.path.join(d, name))
    config = json.loads(json.dumps(CONFIG))
    lines = metrics_lines()
    s = None
    if case == "full":
        s = summary(config)
    elif case == "killed":
        lines = lines[:137]
    elif case == "empty":
        lines = []
    elif case == "hostile":
        config["model"]["name"] = '</script><img id="pwned-config" src=x onerror="document.title=1">"\'&'
        config["notes"] = "line\u2028separator \u00e9\u00e8 <!-- -->"
        s = summary(config)
        s["modules"] = modules_list(hostile=True)
        s["ops"][0]["name"] = '</script><img id="pwned-op" src=x>'
        s["ops"][0]["flops"] = 1000
        s["top_ops"] = sorted(s["ops"], key=lambda o: -o["seconds"])[:5]
        s["machine"]["cpu"] = '<b id="pwned-cpu">cpu</b>'
    elif case == "resumed":
        lines = metrics_lines(1, 150, seed=1) + metrics_lines(151, STEPS, elapsed0=0.0, seed=2)
        s = summary(config, resumed_from=150)
    elif case == "other":  # a second run to compare with "full": another lr and width, another seed
        config["optimizer"]["lr"] = 1e-3
        config["model"]["d_model"] = 256
        lines = metrics_lines(seed=7)
        for m in lines:
            m["loss"] = round(m["loss"] * 1.08, 5)
        s = summary(config)
    elif case == "summary-only":
        write(os.path.join(d, "summary.json"), json.dumps(summary(config), indent=1))
        return d
    else:
        raise SystemExit(f"unknown case {case!r}")
    write(os.path.join(d, "config.json"), json.dumps(config, indent=2))
    text = "".join(json.dumps(m) + "\n" for m in lines)
    if case == "killed":
        text += json.dumps(metrics_lines(138, 138)[0])[:40]  # the write a kill interrupted
    write(os.path.join(d, "metrics.jsonl"), text)
    if s is not None:
        write(os.path.join(d, "summary.json"), json.dumps(s, indent=1))
    return d


CASES = ("full", "killed", "empty", "hostile", "resumed", "summary-only", "other")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for c in sys.argv[2:] or CASES:
        print(write_case(sys.argv[1], c))
