"""Signals: SIGINT finishes the step, saves a checkpoint of it and exits 0; SIGTERM does the same;
a second signal exits at once and leaves the committed checkpoints as they were.

usage: signals.py TALLY WORK_DIR"""

import os
import shutil
import signal
import subprocess
import sys
import time

from train_cli import TINY, losses, read_tensors, temporaries

tally, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
args = [tally, "train", "--out", work, "--steps", "100000", "--checkpoint-interval", "1000000"] + TINY


def start(extra=()):
    return subprocess.Popen(args + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_steps(n):
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if len(losses(work)) >= n:
                return
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.01)
    raise SystemExit("the run never reached step %d" % n)


def newest_checkpoint():
    names = sorted(n for n in os.listdir(os.path.join(work, "checkpoints")) if not n.startswith("."))
    return names[-1]


for sig, resume in ((signal.SIGINT, ()), (signal.SIGTERM, ("--resume",))):
    before = len(losses(work)) if resume else 0
    p = start(resume)
    wait_for_steps(before + 5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, "exit %d after %s: %s" % (p.returncode, sig.name, err)
    last = max(losses(work))
    assert newest_checkpoint() == "step-%09d.safetensors" % last, (newest_checkpoint(), last)
    assert "stopped at step %d" % last in out, (out[-500:], err[-1500:])
    print("%s: exit 0, checkpoint of step %d saved" % (sig.name, last))

# Two signals: out at once, without a save; the committed checkpoint is untouched and loads. A
# bigger model (half a second a step) so that the second signal lands inside a step.
work = os.path.join(work, "double")
args = [tally, "train", "--out", work, "--steps", "100000", "--checkpoint-interval", "2", "--threads", "2",
        "--d-model", "256", "--context-length", "256", "--batch-size", "16", "--corpus-bytes", "131072"]
p = start()
wait_for_steps(3)
committed = os.path.join(work, "checkpoints", newest_checkpoint())
before = open(committed, "rb").read()
p.send_signal(signal.SIGINT)
while True:  # until the first signal is handled
    line = p.stderr.readline()
    assert line, "tally train ended (exit %s) before saying it would stop: %s" % (p.wait(), p.stderr.read()[-1500:])
    if "stopping after this step" in line:
        break
p.send_signal(signal.SIGINT)
out, err = p.communicate(timeout=120)
assert p.returncode == 130, "a second signal should exit at once with 130 (got %d)\nstdout: %s\nstderr: %s" % (
    p.returncode, out[-1500:], err[-1500:])
assert open(committed, "rb").read() == before, "the committed checkpoint changed"
assert read_tensors(committed), "the committed checkpoint does not read back"
print("two SIGINTs: exit 130 at once; %s untouched" % os.path.basename(committed))
