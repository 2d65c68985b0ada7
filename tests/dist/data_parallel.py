#!/usr/bin/env python3
"""Data-parallel `tally train` under mpirun, against one process.

usage: data_parallel.py TALLY WORK_DIR

- ordered mode on 2 ranks (shared memory and TCP loopback) and 4 ranks (oversubscribed): every
  step's loss equal under == and the parameters' hash equal to one process with
  --grad-accum-steps p, and equal on every rank (--verify-replicas);
- fast mode on 2 ranks: every step's loss within 1e-5 relative of one process's;
- the bytes each rank sends per step equal the formula, 2·(p−1)·⌈N/p⌉·4 for an all-reduce of N
  float32 gradients (one bucket), and an ordered step's reduce-scatters and all-gather;
- ZeRO-1 (--zero 1) at 2 and 4 ranks: the same results, and ⌈N/p⌉·8 bytes of AdamW state per rank;
- resume at the same and at another world size, 2 → 4 and 4 → 1, sharded or not, bit-exact against
  the uninterrupted run;
- SIGUSR1 to mpirun stops every rank after the same step, saved;
- a rank killed mid-run ends the whole job non-zero within 60 s, and the last checkpoint resumes.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

TALLY, WORK = sys.argv[1], sys.argv[2]
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
SM = ["--mca", "btl", "self,vader"]
TCP = ["--mca", "btl", "self,tcp"]
MODEL = ["--d-model", "32", "--num-layers", "2", "--num-heads", "2", "--context-length", "32", "--batch-size", "4",
         "--corpus-bytes", "65536", "--warmup-steps", "4", "--threads", "1", "--no-memory-check", "--verify-replicas", "true",
         "--decay-all", "true"]  # ZeRO-1 needs it (Note [Weight decay groups]); every run has it, to compare with ZeRO's
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def train(out, steps, ranks=1, accum=1, extra=(), mpi=SM, resume=False, timeout=600):
    cmd = [TALLY, "train", *MODEL, "--steps", str(steps), "--grad-accum-steps", str(accum), "--out", out, *extra]
    if resume:
        cmd.append("--resume")
    if ranks > 1:
        cmd = [*MPIRUN, *mpi, "-np", str(ranks), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
    return r


def metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def fresh(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


os.makedirs(WORK, exist_ok=True)
STEPS = 20

# One process with grad-accum p, the reference.
reference = {}
for p in (2, 4):
    out = fresh(f"one_accum{p}")
    check(train(out, STEPS, accum=p, extra=["--checkpoint-interval", "10"]).returncode == 0, f"one process, --grad-accum-steps {p}")
    reference[p] = metrics(out)


def same_as_reference(out, p, label):
    got, want = metrics(out), reference[p]
    check(len(got) == len(want) == STEPS, f"{label}: {STEPS} steps recorded")
    check(all(a["loss"] == b["loss"] for a, b in zip(got, want)), f"{label}: every step's loss == one process's")
    check(all(a["param_hash"] == b["param_hash"] for a, b in zip(got, want)), f"{label}: the parameters' hash after every step == one process's")
    return got


# Ordered mode, bit-identical.
for p, transport, mpi in ((2, "shared memory", SM), (2, "TCP", TCP), (4, "shared memory", SM), (4, "TCP", TCP)):
    out = fresh(f"ordered_np{p}_{transport.replace(' ', '_')}")
    r = train(out, STEPS, ranks=p, mpi=mpi, extra=["--reduce", "ordered", "--checkpoint-interval", "10"])
    check(r.returncode == 0, f"mpirun -np {p} over {transport}, ordered: runs (every rank's parameters equal after every step)")
    if r.returncode == 0:
        got = same_as_reference(out, p, f"-np {p} over {transport}, ordered")
        summary = json.load(open(os.path.join(out, "summary.json")))
        n = summary["parameters"]
        slice_ = -(-n // p)
        # One bucket (the model is far below 25 MiB): a reduce-scatter of p slices, then an all-gather.
        want = 2 * (p - 1) * slice_ * 4
        check(all(m["comm_bytes"] == want for m in got), f"-np {p} ordered: bytes sent per rank per step = 2·(p−1)·⌈N/p⌉·4 = {want}")
        dp = summary["data_parallel"]
        check(dp["world_size"] == p and dp["bytes_per_step"] == want and "exposed_comm_s" in dp,
              f"-np {p} ordered: summary.json's data_parallel names the ranks, the bytes and the exposed time")

# ZeRO-1: the optimizer's state sharded, the results those of one process all the same.
for p in (2, 4):
    out = fresh(f"zero_np{p}")
    r = train(out, STEPS, ranks=p, extra=["--reduce", "ordered", "--zero", "1", "--checkpoint-interval", "10"])
    check(r.returncode == 0, f"mpirun -np {p} --zero 1, ordered: runs")
    if r.returncode == 0:
        same_as_reference(out, p, f"-np {p} --zero 1, ordered")
        summary = json.load(open(os.path.join(out, "summary.json")))
        n = summary["parameters"]
        want = -(-n // p) * 8  # exp_avg and exp_avg_sq, float32, of ⌈N/p⌉ elements (one bucket, padded to p slices)
        got_state = summary["memory"]["tracked_peak"]["optimizer_state"]
        check(got_state == want, f"-np {p} --zero 1: optimizer state per rank {got_state} B = ⌈N/p⌉·8 = {want} B (N = {n})")

# Fast mode: MPI's all-reduce, close to one process.
out = fresh("fast_np2")
r = train(out, STEPS, ranks=2, extra=["--reduce", "fast"])
check(r.returncode == 0, "mpirun -np 2, fast: runs (every rank's parameters equal after every step)")
if r.returncode == 0:
    got = metrics(out)
    worst = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(got, reference[2]))
    check(worst <= 1e-5, f"-np 2 fast: every step's loss within 1e-5 relative of one process's (worst {worst:.2e})")
    n = json.load(open(os.path.join(out, "summary.json")))["parameters"]
    want = 2 * (2 - 1) * -(-n // 2) * 4
    check(all(m["comm_bytes"] == want for m in got), f"-np 2 fast: bytes sent per rank per step = 2·(p−1)/p·S = {want}")

# Two ranks with grad-accum 2 are four micro-batches a step, as four ranks are: the same run.
out = fresh("ordered_np2_accum2")
check(train(out, STEPS, ranks=2, accum=2, extra=["--reduce", "ordered", "--checkpoint-interval", "10"]).returncode == 0,
      "mpirun -np 2 --grad-accum-steps 2, ordered: runs")
same_as_reference(out, 4, "-np 2 × accum 2, ordered")


def resumed_from_step_10(source, ranks, accum, label, extra=()):
    """A copy of `source` cut back to its step-10 checkpoint, resumed to the end at another world size."""
    out = fresh(label.replace(" ", "_").replace("→", "to"))
    shutil.copytree(source, out)
    os.remove(os.path.join(out, "checkpoints", "step-000000020.safetensors"))
    os.remove(os.path.join(out, "summary.json"))
    r = train(out, STEPS, ranks=ranks, accum=accum, extra=["--reduce", "ordered", *extra], resume=True)
    check(r.returncode == 0 and "resumed from" in r.stdout and "at step 10" in r.stdout, f"{label}: resumes from step 10")
    if r.returncode == 0:
        got = metrics(out)
        want = reference[4]
        check(got[-1]["step"] == STEPS and got[-1]["param_hash"] == want[-1]["param_hash"] and got[-1]["loss"] == want[-1]["loss"],
              f"{label}: step {STEPS}'s parameters and loss bit-equal to the uninterrupted run's")


resumed_from_step_10(os.path.join(WORK, "ordered_np2_accum2"), 4, 1, "resume 2 → 4 ranks")
resumed_from_step_10(os.path.join(WORK, "ordered_np4_shared_memory"), 1, 4, "resume 4 → 1 rank")
resumed_from_step_10(os.path.join(WORK, "ordered_np2_accum2"), 2, 2, "resume at 2 ranks, the same")
# Sharded state is saved whole (every rank's shards gathered) and taken apart again on resume.
resumed_from_step_10(os.path.join(WORK, "zero_np4"), 2, 2, "resume 4 ranks --zero 1 → 2 ranks", ["--zero", "1"])
resumed_from_step_10(os.path.join(WORK, "ordered_np2_accum2"), 4, 1, "resume 2 ranks → 4 ranks --zero 1", ["--zero", "1"])

# SIGUSR1 to mpirun, which forwards it to every rank: all stop after one step and save it.
out = fresh("usr1")
job = subprocess.Popen([*MPIRUN, *SM, "-np", "2", TALLY, "train", *MODEL, "--steps", "100000", "--checkpoint-interval", "100000",
                        "--out", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
metrics_path = os.path.join(out, "metrics.jsonl")
deadline = time.time() + 120
while time.time() < deadline and job.poll() is None and not (os.path.exists(metrics_path) and os.path.getsize(metrics_path) > 0):
    time.sleep(0.2)
job.send_signal(signal.SIGUSR1)
try:
    output, _ = job.communicate(timeout=60)
    saved = sorted(os.listdir(os.path.join(out, "checkpoints")))
    last = metrics(out)[-1]["step"]
    check(job.returncode == 0 and "stopped at step" in output and saved == [f"step-{last:09d}.safetensors"],
          f"SIGUSR1 to mpirun: every rank stops after the same step and it is saved (exit {job.returncode}, step {last}, {saved})")
except subprocess.TimeoutExpired:
    job.kill()
    check(False, "SIGUSR1 to mpirun: the job stops within 60 s")

# A rank killed mid-run ends the job, and the last checkpoint resumes.
out = fresh("killed")
cmd = [*MPIRUN, *SM, "-np", "2", TALLY, "train", *MODEL, "--steps", "100000", "--checkpoint-interval", "5", "--out", out]
job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
deadline = time.time() + 120
ckpt_dir = os.path.join(out, "checkpoints")
while time.time() < deadline and job.poll() is None and not (os.path.isdir(ckpt_dir) and any(f.endswith(".safetensors") for f in os.listdir(ckpt_dir))):
    time.sleep(0.2)
ranks = subprocess.run(["pgrep", "-f", f"train .*--out {out}$"], capture_output=True, text=True).stdout.split()
victim = [int(x) for x in ranks if int(x) != job.pid]
check(len(victim) >= 1, "found the ranks' processes")
if victim:
    killed_at = time.time()
    os.kill(victim[-1], signal.SIGKILL)
    try:
        job.wait(timeout=60)
        ended = time.time() - killed_at
        check(job.returncode != 0, f"killing one rank ends the job non-zero (exit {job.returncode}) in {ended:.1f} s (< 60 s)")
    except subprocess.TimeoutExpired:
        job.kill()
        check(False, "killing one rank ends the job within 60 s")
    last = max(int(f[5:14]) for f in os.listdir(ckpt_dir) if f.startswith("step-") and f.endswith(".safetensors"))
    r = train(out, last + 2, ranks=2, resume=True)
    check(r.returncode == 0 and f"at step {last}" in r.stdout, f"the job resumes from its last checkpoint (step {last})")
    job.stdout.close()

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
