"""Bad configs, bad data files and a full disk: each gives a one-line error naming the problem and
a non-zero exit, and a failed save leaves the previous checkpoint intact and loadable. A resume
with nothing to do or nothing to resume from leaves the run directory untouched. Then the other
commands' robustness: `report` and `inspect` on hostile input, `bench matmul` with an unwritable
peaks file.

usage: cli_errors.py TALLY WORK_DIR"""

import json
import os
import resource
import shutil
import signal
import struct
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
expect_error("inf-past-the-end", ["--precision", "fp16", "--steps", "3", "--warmup-steps", "1", "--inject-inf-step", "100"],
             "inject_inf_step (100) is past the last step (3)")

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

# Bit rot (issue 34): one flipped bit in a weight of the newest checkpoint. `inspect` names the
# tensor and exits non-zero (it said nothing before checksums), and `--resume` skips the file with a
# note naming it and the tensor, keeps it, and resumes from the checkpoint before.
run_dir = os.path.join(work, "bit-rot")
args = ["train", "--out", run_dir, "--checkpoint-interval", "2"] + TINY
r = run(tally, args + ["--steps", "4"])
assert r.returncode == 0, r.stderr
step4 = os.path.join(run_dir, "checkpoints", "step-000000004.safetensors")
r = run(tally, ["inspect", step4])
print("%-22s exit %d: %s" % ("inspect-verifies", r.returncode, r.stdout.strip().splitlines()[-1]))
if r.returncode != 0 or not r.stdout.strip().splitlines()[-1].startswith("checksums: all "):
    failures.append("inspect-verifies: expected 'checksums: all N verify', got %r %r" % (r.stdout[-300:], r.stderr))
blob = bytearray(open(step4, "rb").read())
(n,) = struct.unpack("<Q", blob[:8])
begin = json.loads(blob[8:8 + n])["model.token_embedding.weight"]["data_offsets"][0]
blob[8 + n + begin + 5] ^= 0x04
open(step4, "wb").write(blob)
r = run(tally, ["inspect", step4])
print("%-22s exit %d: %s" % ("inspect-bit-rot", r.returncode, r.stderr.strip()))
if r.returncode == 0 or "tensor 'model.token_embedding.weight' does not match its checksum" not in r.stderr:
    failures.append("inspect-bit-rot: expected an error naming the tensor, got %d %r" % (r.returncode, r.stderr))
r = run(tally, args + ["--steps", "4", "--resume"])
out = r.stdout + r.stderr
print("%-22s exit %d: %s" % ("resume-bit-rot", r.returncode, [l for l in out.splitlines() if "corrupt" in l or "resumed" in l]))
if r.returncode != 0 or "step-000000004.safetensors is corrupt: tensor 'model.token_embedding.weight'" not in out or "step 2" not in r.stdout:
    failures.append("resume-bit-rot: expected a note naming the file and the tensor and a resume from step 2, got %r" % out[-800:])

# A full disk under metrics.jsonl: the run stops at the first line it cannot append, with an error
# naming the file, and leaves whole lines of the steps before it (the run went on without a word,
# and left half a line).
tokens = write("metrics-full.u16", struct.pack("<4096H", *(i * 7 % 251 for i in range(4096))))
run_dir = os.path.join(work, "metrics-full")
limit = 6000


def limit_metrics_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


r = run(tally, ["train", "--out", run_dir, "--data", tokens, "--data-dtype", "uint16", "--steps", "200",
                "--checkpoint-interval", "1000"] + TINY, preexec_fn=limit_metrics_size)
print("%-22s exit %d: %s" % ("metrics-full", r.returncode, r.stderr.strip()))
kept = open(os.path.join(run_dir, "metrics.jsonl")).read()
steps = [json.loads(line)["step"] for line in kept.splitlines()]
if r.returncode == 0 or "cannot append to %s" % os.path.join(run_dir, "metrics.jsonl") not in r.stderr or "File too large" not in r.stderr:
    failures.append("metrics-full: expected an error naming metrics.jsonl, got %d %r" % (r.returncode, r.stderr))
if not kept.endswith("\n") or steps != list(range(1, len(steps) + 1)) or not 10 < len(steps) < 200:
    failures.append("metrics-full: expected whole lines of steps 1..k, got %r" % kept[-300:])

# Resuming that run in another precision is refused, naming the field.
r = run(tally, args + ["--steps", "10", "--resume", "--precision", "bf16"])
if r.returncode == 0 or 'precision: checkpoint "fp32", config "bf16"' not in r.stderr:
    failures.append("precision-resume: expected the checkpoint's precision named, got %d %r" % (r.returncode, r.stderr))

# Clear messages for values a range check alone would let through or misname, and a refused
# config creates no run directory.
expect_error("lr-nan", ["--lr", "nan"], '--lr: expected a finite number, got "nan"')
huge = write("huge.json", '{"steps": 1e400}')
expect_error("config-overflow", ["--config", huge], huge + ": a value out of range")
expect_error("config-is-a-dir", ["--config", work], "cannot read config file %s: it is a directory" % work)
expect_error("beta1-one", ["--beta1", "1"], "beta1 must be >= 0 and < 1, got 1")
expect_error("dropout-one", ["--dropout", "1"], "dropout must be >= 0 and < 1, got 1")
expect_error("vocab-huge", ["--vocab-size", "1000000000"], "vocab_size must be >= 2 and <= 100000000, got 1000000000")
for name in ("lr-nan", "beta1-one", "dropout-one", "vocab-huge"):
    if os.path.exists(os.path.join(work, name)):
        failures.append("%s: a refused config created its run directory" % name)

# The config file's values and the flags are merged, then validated once: a flag may make a
# file's steps valid.
SMALL = ["--corpus-bytes", "4096", "--d-model", "16", "--num-layers", "1", "--num-heads", "2", "--context-length", "16",
         "--batch-size", "2", "--warmup-steps", "1", "--threads", "1", "--checkpoint-interval", "2"]
r = run(tally, ["train", "--config", write("steps5.json", '{"steps": 5}'), "--out", os.path.join(work, "merged")] + SMALL)
print("%-22s exit %d: %s" % ("config-then-flags", r.returncode, r.stderr.strip()))
if r.returncode != 0:
    failures.append("config-then-flags: --config {steps: 5} with --warmup-steps 1 was refused: %r" % r.stderr)


def snapshot(d):
    """relative path -> bytes of every file under d."""
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                out[os.path.relpath(os.path.join(root, n), d)] = f.read()
    return out


def expect_untouched(name, run_dir, before):
    after = snapshot(run_dir)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        failures.append("%s: the run directory changed: %s" % (name, changed))


# --resume on a finished run (or with --steps below its step) does nothing, says so and exits 0;
# with nothing to resume from it is an error. Neither writes anything: summary.json, the report,
# metrics.jsonl and config.json are the finished run's record.
done = os.path.join(work, "finished")
r = run(tally, ["train", "--out", done, "--steps", "4"] + SMALL)
assert r.returncode == 0, r.stderr
before = snapshot(done)
for extra, says in (([], "is already at step 4 of 4: nothing to do; raise --steps to train further"),
                    (["--steps", "2"], "is already at step 4, past --steps 2: nothing to do")):
    r = run(tally, ["train", "--resume", "--out", done] + extra)
    print("%-22s exit %d: %s" % ("resume-finished", r.returncode, r.stdout.strip().splitlines()[-1]))
    if r.returncode != 0 or says not in r.stdout:
        failures.append("resume-finished %s: expected exit 0 and %r, got %d %r %r" % (extra, says, r.returncode, r.stdout, r.stderr))
    expect_untouched("resume-finished %s" % extra, done, before)

# A run killed after its last checkpoint but before its books: the resume says what is missing.
summary_bytes = open(os.path.join(done, "summary.json"), "rb").read()
os.remove(os.path.join(done, "summary.json"))
r = run(tally, ["train", "--resume", "--out", done])
print("%-22s exit %d: %s" % ("resume-no-summary", r.returncode, r.stdout.strip().splitlines()[-1]))
if r.returncode != 0 or "its summary.json is missing" not in r.stdout:
    failures.append("resume-no-summary: expected exit 0 and the missing summary named, got %d %r" % (r.returncode, r.stdout))
with open(os.path.join(done, "summary.json"), "wb") as f:
    f.write(summary_bytes)

shutil.rmtree(os.path.join(done, "checkpoints"))
before = snapshot(done)
for args, needle in ((["--resume", "--steps", "8"], "cannot resume %s: it has no checkpoints folder" % done),
                     (SMALL + ["--steps", "8"], "already holds a run (metrics.jsonl, summary.json) but no checkpoint")):
    r = run(tally, ["train", "--out", done] + args)
    lines = r.stderr.strip().splitlines()
    print("%-22s exit %d: %s" % ("no-checkpoints", r.returncode, r.stderr.strip()))
    if r.returncode == 0 or len(lines) != 1 or needle not in lines[0]:
        failures.append("no-checkpoints %s: expected one error line with %r, got %d %r" % (args[0], needle, r.returncode, r.stderr))
    expect_untouched("no-checkpoints %s" % args[0], done, before)

os.remove(os.path.join(done, "config.json"))
r = run(tally, ["train", "--resume", "--out", done])
print("%-22s exit %d: %s" % ("resume-no-config", r.returncode, r.stderr.strip()))
if r.returncode == 0 or "config.json is missing" not in r.stderr:
    failures.append("resume-no-config: expected an error saying config.json is missing, got %r" % r.stderr)

# `tally report` names what is wrong with its argument.
for arg, needle in (("", "no run directory given"), (huge, huge + ": not a directory")):
    r = run(tally, ["report", arg])
    print("%-22s exit %d: %s" % ("report %r" % os.path.basename(arg), r.returncode, r.stderr.strip()))
    if r.returncode == 0 or needle not in r.stderr:
        failures.append("report %r: expected %r, got %r" % (arg, needle, r.stderr))

# `tally inspect` escapes tensor names as it escapes metadata: a name may hold terminal escapes.
hostile = "evil\x1b[31m\nname\x07"
header = json.dumps({hostile: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
path = write("hostile.safetensors", struct.pack("<Q", len(header)) + header + b"\0\0\0\0")
r = run(tally, ["inspect", path])
print("%-22s exit %d: %s" % ("inspect-escapes", r.returncode, [l for l in r.stdout.splitlines() if "evil" in l]))
if r.returncode != 0 or "\x1b" in r.stdout or "\x07" in r.stdout or "evil\\x1b[31m\\nname\\x07" not in r.stdout:
    failures.append("inspect-escapes: expected the name escaped on one line, got %r" % r.stdout)

# `tally bench matmul` still prints its measurement when it cannot store the peaks it measured.
r = run(tally, ["bench", "matmul", "--m", "64", "--n", "64", "--k", "64", "--reps", "1"], env=dict(os.environ, TALLY_PEAKS_FILE=work))
print("%-22s exit %d: %s" % ("bench-unwritable", r.returncode, r.stderr.strip()))
if r.returncode != 0 or "MFU" not in r.stdout or "warning: could not store the measured peaks" not in r.stderr:
    failures.append("bench-unwritable: expected exit 0, the MFU and a warning, got %d %r %r" % (r.returncode, r.stdout, r.stderr))

# A new run's --config that is its own run directory's config.json, which the run would write over.
own = os.path.join(work, "own-config")
os.makedirs(own)
own_config = write("own-config/config.json", json.dumps({"steps": 2, "warmup_steps": 1}))
r = run(tally, ["train", "--out", own, "--config", own_config])
print("%-22s exit %d: %s" % ("own-config", r.returncode, r.stderr.strip()))
if r.returncode == 0 or "is the run directory's own config.json" not in r.stderr or open(own_config).read() != json.dumps({"steps": 2, "warmup_steps": 1}):
    failures.append("own-config: expected a refusal and the file untouched, got %d %r" % (r.returncode, r.stderr))

# A user's own report.html or corpus.u16 in the run directory is never written over: the run is
# refused before it writes anything, and `tally report` refuses the default path.
for name, content in (("report.html", "<html><body>my notes</body></html>"), ("corpus.u16", "my tokens")):
    folder = os.path.join(work, "users-" + name)
    os.makedirs(folder)
    mine = write("users-%s/%s" % (name, name), content)
    r = run(tally, ["train", "--out", folder, "--steps", "2"] + TINY)
    print("%-22s exit %d: %s" % ("users-" + name, r.returncode, r.stderr.strip()))
    if r.returncode == 0 or "tally does not write over it" not in r.stderr or open(mine).read() != content or os.listdir(folder) != [name]:
        failures.append("users-%s: expected a refusal with the folder untouched, got %d %r %r" % (name, r.returncode, r.stderr, os.listdir(folder)))
finished = os.path.join(work, "users-report-after")
r = run(tally, ["train", "--out", finished, "--steps", "2"] + TINY)
assert r.returncode == 0, r.stderr
mine = write("users-report-after/report.html", "my page")
r = run(tally, ["report", finished])
print("%-22s exit %d: %s" % ("users-report-redraw", r.returncode, r.stderr.strip()))
if r.returncode == 0 or "is not a report tally wrote" not in r.stderr or open(mine).read() != "my page":
    failures.append("users-report-redraw: expected a refusal with the page untouched, got %d %r" % (r.returncode, r.stderr))

# A misspelt command is named; a device with nothing to time is refused.
for args, needle in ((["trian"], "unknown command 'trian' (commands: info, bench, estimate, inspect, report, train"),
                     (["bench", "matmul", "--device", "meta", "--m", "8", "--n", "8", "--k", "8", "--reps", "1"],
                      "--device must be cpu or cuda[:N], got 'meta'")):
    r = run(tally, args)
    print("%-22s exit %d: %s" % (args[0] + "-" + args[-1], r.returncode, r.stderr.strip()))
    if r.returncode == 0 or needle not in r.stderr:
        failures.append("%s: expected %r, got %d %r" % (args, needle, r.returncode, r.stderr))

# Usage errors exit 2 (argparse's and getopt's convention), and a misspelt flag is answered with
# the nearest one; --version and --help exit 0; the help lists each choice, gives --out one
# default and keeps testing switches out.
for args, needle in ((["trian"], "unknown command 'trian'"),
                     (["train", "--stpes", "5"], "did you mean --steps?"),
                     (["train", "--precison", "bf16"], "did you mean --precision?"),
                     (["estimate", "--no-such-flag"], "tally: error:")):
    r = run(tally, args)
    print("%-22s exit %d: %s" % ("usage-" + args[-1], r.returncode, r.stderr.strip()))
    if r.returncode != 2 or needle not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
        failures.append("usage %s: expected exit 2 and one line with %r, got %d %r" % (args, needle, r.returncode, r.stderr))
r = run(tally, ["--version"])
if r.returncode != 0 or not r.stdout.startswith("tally "):
    failures.append("--version: expected exit 0 and 'tally VERSION', got %d %r" % (r.returncode, r.stdout + r.stderr))
r = run(tally, ["train", "--help"])
out_help = [line for line in r.stdout.splitlines() if line.strip().startswith("--out ")]
for ok, what in ((r.returncode == 0, "exit 0"),
                 ("one of learned, rotary" in r.stdout and "one of gelu, swiglu" in r.stdout and "one of layernorm, rmsnorm" in r.stdout
                  and "one of fp32, bf16, bf16-params, fp16, fp8" in r.stdout, "each choice listed"),
                 ("inject-inf-step" not in r.stdout, "no testing switch"),
                 (len(out_help) == 1 and " ".join(r.stdout.split("--out ", 1)[1].split("\n  --", 1)[0].split()).count("(default:") == 1,
                  "one default for --out"),
                 ("--no-memory-check" in r.stdout, "--no-memory-check listed")):
    if not ok:
        failures.append("train --help: expected %s, got:\n%s" % (what, r.stdout))

# tally info says whether CUDA is built in, and a GPU message says which of the two is missing.
r = run(tally, ["info"])
cuda_line = next((l for l in r.stdout.splitlines() if l.strip().startswith("CUDA ")), "")
gpu_none = next((l for l in r.stdout.splitlines() if l.strip().startswith("none:")), "")
built = "built in" in cuda_line and "not built in" not in cuda_line
if r.returncode != 0 or not cuda_line or (gpu_none and ("built with CUDA, but no CUDA device" in gpu_none) != built) or \
        "or this tally was built without CUDA" in r.stdout:
    failures.append("info: expected a CUDA line and a GPU message that agree, got %r / %r" % (cuda_line, gpu_none))

# Output that cannot be written (a full disk behind a redirection) is a failure, not exit 0.
with open("/dev/full", "w") as full:
    p = subprocess.run([tally, "estimate", "tensor", "--shape", "3,4"], stdout=full, stderr=subprocess.PIPE, text=True)
print("%-22s exit %d: %s" % ("stdout-full", p.returncode, p.stderr.strip()))
if p.returncode == 0 or "cannot write to standard output" not in p.stderr:
    failures.append("stdout-full: expected a non-zero exit naming the failed write, got %d %r" % (p.returncode, p.stderr))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("every error case gave one clear line and a non-zero exit; the failed save lost nothing; "
      "refused resumes and finished runs were left untouched")
