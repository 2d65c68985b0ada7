"""`tally train` with the defaults, 300 steps, in each precision. The float32 run is the main job's
check: the loss falls well below the built-in corpus's unigram entropy, summary.json has every
part docs/run_dir.md lists, the report is written. Then issue 11's acceptance: the loss of bf16 and
fp16 within 2% of float32's, fp8 within 5%, bf16 parameters without master weights (stochastic
rounding) within 2%; fp16 with an inf injected at step 150, which the loss
scaler skips (and the skip is in metrics.jsonl and the summary); each mixed run's summary sets its
memory and time against float32. "The loss after 300 steps" is the mean of the last 10 steps'
losses: one step's loss moves by a few percent from batch to batch.

usage: precisions.py TALLY WORK_DIR"""

import json
import os
import shutil
import sys

from train_cli import run

tally, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
STEPS, INF_AT = 300, 150


def train(precision, *extra):
    out = os.path.join(work, precision)
    r = run(tally, ["train", "--steps", str(STEPS), "--precision", precision, "--out", out, *extra])
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    with open(os.path.join(out, "metrics.jsonl")) as f:
        metrics = [json.loads(line) for line in f]
    assert len(metrics) == STEPS, len(metrics)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return metrics, summary, r.stdout


def final_loss(metrics):
    return sum(m["loss"] for m in metrics[-10:]) / 10


base, summary, stdout = train("fp32")
assert "unigram entropy" in stdout and "report.html" in stdout, stdout[-2000:]
keys = ["tally_version", "config", "machine", "run", "parameters", "precision", "flops_per_token", "mfu", "step_time",
        "memory", "time_split", "top_ops", "ops", "modules", "memory_timeline"]
missing = [k for k in keys if k not in summary]
assert not missing, "summary.json lacks %s" % missing
r = summary["run"]
print("fp32: loss %.4f -> %.4f after %d steps; unigram entropy %.4f" % (r["first_loss"], r["final_loss"], r["steps"],
                                                                         r["unigram_entropy"]))
assert r["final_loss"] < 0.6 * r["unigram_entropy"], "the loss did not fall well below the unigram entropy"
assert summary["flops_per_token"]["measured"]["forward"] == summary["flops_per_token"]["predicted"]["forward"]
assert os.path.getsize(os.path.join(work, "fp32", "report.html")) > 10000
reference = final_loss(base)
print("fp32: loss %.4f (mean of the last 10 steps)" % reference)
for precision, tolerance, extra in [("bf16", 0.02, []), ("fp16", 0.02, ["--inject-inf-step", str(INF_AT)]),
                                    ("fp8", 0.05, []), ("bf16-params", 0.02, [])]:
    metrics, summary, stdout = train(precision, *extra)
    loss = final_loss(metrics)
    vs = summary["precision"]["vs_float32"]
    print("%s: loss %.4f (%+.2f%% against fp32); peak memory %d against %d bytes; step %.1f ms against %.1f ms" %
          (precision, loss, 100 * (loss / reference - 1), vs["memory"]["peak_total"], vs["memory"]["float32_peak_total"],
           1e3 * vs["step_time"]["wall_s"], 1e3 * vs["step_time"]["float32_wall_s"]))
    assert abs(loss / reference - 1) <= tolerance, "%s loss %.4f is not within %g%% of fp32's %.4f" % (
        precision, loss, 100 * tolerance, reference)
    if precision == "bf16-params":  # no master weights: the parameters themselves are half the bytes
        assert 2 * vs["memory"]["peak"]["parameters"] == vs["memory"]["float32_peak"]["parameters"], vs["memory"]
    else:
        assert vs["memory"]["peak"]["working_copies"] > 0 and vs["memory"]["float32_peak"]["working_copies"] == 0
    assert vs["memory"]["peak_total"] < vs["memory"]["float32_peak_total"]
    assert "vs float32" in stdout, stdout[-2000:]
    if precision == "fp16":
        skipped = [m["step"] for m in metrics if m.get("skipped")]
        print("fp16: skipped steps %s, final loss scale %g" % (skipped, summary["precision"]["final_loss_scale"]))
        assert INF_AT in skipped, skipped
        assert summary["precision"]["skipped_steps"] == len(skipped)
        at = metrics[INF_AT - 1]
        after = metrics[INF_AT]
        assert after["loss_scale"] == at["loss_scale"] / 2 and after["lr"] == at["lr"], (at, after)
