"""Kill test: SIGKILL `tally train` at random moments (some while a checkpoint is being written),
resume each time, and check the final parameters and every step's loss equal an uninterrupted
run's, bit for bit.

usage: kill_resume.py TALLY WORK_DIR [KILLS [STEPS]]"""

import os
import random
import signal
import subprocess
import sys
import time

from train_cli import STEP_CHECKPOINT, TINY, losses, read_tensors, temporaries

tally, work = sys.argv[1], sys.argv[2]
kills_wanted = int(sys.argv[3]) if len(sys.argv) > 3 else 20
# The steps of the default run (lengthened below where the CPU is fast).
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 1500
ref, killed = os.path.join(work, "reference"), os.path.join(work, "killed")


def options(steps):
    return TINY + ["--steps", str(steps), "--checkpoint-interval", "3", "--keep", "2"]


def reference_run(steps):
    """The uninterrupted run; returns its wall time."""
    subprocess.run(["rm", "-rf", ref], check=True)
    start = time.time()
    r = subprocess.run([tally, "train", "--out", ref] + options(steps), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return time.time() - start


# Every other kill lands at a random moment (the rest wait for a save in progress): the delays
# are fixed by the seed. The run progresses at most those delays in all between its kills, so one
# that trains for less could end before every kill has landed (a fast CPU): lengthen it to 1.4
# times their sum.
rng = random.Random(1)
delays = [rng.uniform(0.05, 1.5) for _ in range((kills_wanted + 1) // 2)]
needed = 1.4 * sum(delays)
took = reference_run(steps)
if took < needed:
    steps = int(steps * needed / took) + 1
    reference_run(steps)
common = options(steps)
subprocess.run(["rm", "-rf", killed], check=True)
final = "checkpoints/step-%09d.safetensors" % steps

kills = during_save = 0
# Kills that land during a save: a kill aimed at one misses when the save ends first (a slow,
# loaded machine, or a sanitizer build), so the run takes more aimed kills, up to a bound, until
# this many have landed.
saves_wanted = min(3, kills_wanted // 2)


def committed(run_dir):
    """Whether run_dir holds a committed checkpoint to resume from."""
    try:
        return any(STEP_CHECKPOINT.match(n) for n in os.listdir(os.path.join(run_dir, "checkpoints")))
    except FileNotFoundError:
        return False


def more_kills():
    return kills < kills_wanted or (during_save < saves_wanted and kills < 3 * kills_wanted)


attempts = 0
while True:
    attempts += 1
    assert attempts < 200, "the run never finished"
    # --resume needs a checkpoint: a run killed before its first save starts over, as a user would.
    if committed(killed):
        start = ["--resume"]
    else:
        subprocess.run(["rm", "-rf", killed], check=True)
        start = []
    p = subprocess.Popen([tally, "train", "--out", killed] + start + common,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if more_kills():
        ckpt_dir = os.path.join(killed, "checkpoints")
        if kills % 2 == 1 or kills >= kills_wanted:
            # Wait for a save in progress (a temporary beside the checkpoints), then kill at once.
            # A temporary a killed save left is removed by the new run first; wait past it.
            stale = set(temporaries(ckpt_dir))
            deadline = time.time() + 20
            while p.poll() is None and time.time() < deadline:
                now = set(temporaries(ckpt_dir))
                if stale and not now & stale:
                    stale = set()
                if now - stale:
                    break
                time.sleep(0.0005)
        else:
            time.sleep(delays[kills // 2])
        if p.poll() is None:
            tmp_before = temporaries(ckpt_dir)
            p.send_signal(signal.SIGKILL)
            p.wait()
            kills += 1
            if tmp_before and temporaries(ckpt_dir):
                during_save += 1
            continue
    _, err = p.communicate()
    assert p.returncode == 0, "resume failed: " + err
    if os.path.exists(os.path.join(killed, final)):
        break
assert kills >= kills_wanted, "the run finished after %d kills of %d: lengthen it" % (kills, kills_wanted)

a, b = read_tensors(os.path.join(ref, final)), read_tensors(os.path.join(killed, final))
assert a.keys() == b.keys(), (sorted(a.keys() ^ b.keys()))
different = [n for n in a if a[n] != b[n]]
assert not different, "tensors differ after resuming: %s" % different[:5]
la, lb = losses(ref), losses(killed)
assert la == lb, "losses differ at steps %s" % [s for s in la if la.get(s) != lb.get(s)][:5]
print("killed %d times (%d while a checkpoint was being written); %d tensors and %d losses equal "
      "the uninterrupted run's bit for bit" % (kills, during_save, len(a), len(la)))
left = temporaries(os.path.join(killed, "checkpoints"))
assert not left, "temporaries left behind after the last run: %s" % left
assert during_save >= saves_wanted, "too few kills landed during a save (%d)" % during_save
