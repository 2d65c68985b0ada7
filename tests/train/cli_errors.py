"""Bad configs, bad data files and a full disk: each gives a one-line error naming the problem and
a non-zero exit, and a failed save leaves the previous checkpoint intact and loadable.

usage: cli_errors.py TALLY WORK_DIR"""

import json
import os
import resource
import shutil
import signal
import subprocess
import sys

from train_cli import TINY, read_tensors, run, temporaries

tally, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def expect_error(name, args, needle):
    r = run(tally, ["train", "--out", os.path.join(work, name)] + args)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode != 0 and len(lines) == 1 and lines[0].startswith("tally: error: ") and needle in lines[0]
    print("%-22s exit %d: %s" % (name, r.returncode, r.stderr.strip()))
    if not ok:
        failures.append("%s: expected one error line containing %r, got exit %d and %r" % (name, needle, r.returncode, r.stderr))


def write(name, data):
    path = os.path.join(work, name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


expect_error("unknown-key", ["--config", write("unknown.json", json.dumps({"lrr": 0.1}))], 'unknown key "lrr"')
expect_error("negative-lr", ["--lr", "-0.1"], "lr must be > 0")
expect_error("negative-lr-json", ["--config", write("neg.json", json.dumps({"lr": -1}))], "lr must be > 0")
expect_error("not-json", ["--config", write("bad.json", "{lr: 1")], "not valid JSON")
expect_error("token-too-big", ["--data", write("big.bin", bytes([7, 0] * 500 + [44, 1] + [7, 0] * 500))],
             "token 300 at position 500 is outside the vocabulary [0, 256)")
expect_error("odd-size", ["--data", write("odd.bin", b"abc")], "multiple")
expect_error("missing-file", ["--data", os.path.join(work, "nowhere.bin")], "does not exist")
expect_error("missing-config", ["--config", os.path.join(work, "nowhere.json")], "cannot read config file")
expect_error("bad-precision", ["--precision", "fp64"], 'precision must be one of fp32, bf16, bf16-params, fp16, fp8, got "fp64"')
expect_error("inf-without-scaler", ["--inject-inf-step", "3"], "inject_inf_step (3) needs precision fp16")

# A full disk during a save: train to step 4 (checkpoints 2 and 4), then resume with a file-size
# limit below a checkpoint's size: the save at step 6 fails with a clear error, the checkpoint of
# step 4 is untouched and a later resume without the limit loads it.
run_dir = os.path.join(work, "disk-full")
args = ["train", "--out", run_dir, "--checkpoint-interval", "2"] + TINY
r = run(tally, args + ["--steps", "4"])
assert r.returncode == 0, r.stderr
step4 = os.path.join(run_dir, "checkpoints", "step-000000004.safetensors")
before = open(step4, "rb").read()
limit = len(before) // 2


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


r = run(tally, args + ["--steps", "8", "--resume"], preexec_fn=limit_file_size)
lines = r.stderr.strip().splitlines()
print("%-22s exit %d: %s" % ("disk-full", r.returncode, r.stderr.strip()))
if not (r.returncode != 0 and len(lines) == 1 and "step-000000006.safetensors" in lines[0]):
    failures.append("disk-full: expected one error naming the checkpoint being written, got %r" % r.stderr)
if open(step4, "rb").read() != before:
    failures.append("disk-full: the checkpoint of step 4 changed")
if temporaries(os.path.join(run_dir, "checkpoints")):
    failures.append("disk-full: a temporary was left behind: %s" % temporaries(os.path.join(run_dir, "checkpoints")))
r = run(tally, args + ["--steps", "8", "--resume"])
if r.returncode != 0 or "resumed from" not in r.stdout or "step 4" not in r.stdout:
    failures.append("disk-full: resuming without the limit failed: %s %s" % (r.stdout[-500:], r.stderr))
elif len(read_tensors(os.path.join(run_dir, "checkpoints", "step-000000008.safetensors"))) == 0:
    failures.append("disk-full: the final checkpoint is empty")

# Resuming that run in another precision is refused, naming the field.
r = run(tally, args + ["--steps", "10", "--resume", "--precision", "bf16"])
if r.returncode == 0 or 'precision: checkpoint "fp32", config "bf16"' not in r.stderr:
    failures.append("precision-resume: expected the checkpoint's precision named, got %d %r" % (r.returncode, r.stderr))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("all %d error cases gave one clear line and a non-zero exit; the failed save lost nothing" % 12)
