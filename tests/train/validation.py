"""Validation and text data from the outside: the validation loss every eval_interval steps and at
the last (metrics.jsonl, the progress line, summary.json, the report), the best checkpoint kept
beside the newest and carried through a resume, bit-exact across a resume; --val-data and
--val-fraction 0; a .txt file trained on as bytes, resumed from another working directory; a text
file read as uint16 refused with the fix named.

usage: validation.py TALLY WORK_DIR"""

import json
import os
import shutil

from train_cli import TINY, Checks, run, script_args

tally, work = script_args()
check = Checks()



def metrics(out):
    return [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl"))]


def train(out, *args, cwd=None):
    r = run(tally, ["train", "--out", out, "--checkpoint-interval", "3", "--eval-interval", "3", "--eval-batches", "2",
                    "--log-interval", "100"] + TINY + list(args), cwd=cwd)
    check(r.returncode == 0, "train %s exits 0: %s" % (" ".join(args), r.stderr.strip()[-300:]))
    return r


a = os.path.join(work, "a")
r = train(a, "--steps", "7")
m = metrics(a)
check([x["step"] for x in m if "val_loss" in x] == [3, 6, 7], "validation at steps 3, 6 and the last, 7")
check(r.stdout.count("  val ") == 3, "the progress line shows each validation loss")
s = json.load(open(os.path.join(a, "summary.json")))["validation"]
vals = {x["step"]: x["val_loss"] for x in m if "val_loss" in x}
best = min(vals, key=vals.get)
check(s["last_loss"] == vals[7] and s["best_loss"] == vals[best] and s["best_step"] == best,
      "summary.json: last %s, best %s at %s" % (s.get("last_loss"), s.get("best_loss"), s.get("best_step")))
check(s["data"] == "the last 10% of the built-in corpus" and s["tokens_per_evaluation"] == 2 * 8 * 32, "what was evaluated: %s" % s)
best_file = os.path.join(a, "checkpoints", "best.safetensors")
check(os.path.exists(best_file) and s["best_checkpoint"] == best_file, "the best checkpoint is kept beside the newest")
g = run(tally, ["sample", a, "--checkpoint", best_file, "--max-new-tokens", "4"])
check(g.returncode == 0, "tally sample reads the best checkpoint: %s" % g.stderr.strip())
page = open(os.path.join(a, "report.html")).read()
check("validation loss" in page and '"val_loss"' in page, "the report shows the validation loss")

# The run cut back to its step-3 checkpoint and resumed to 7: the same validation losses, and the
# best kept (the schedule depends on --steps, so the run is cut back rather than run to 3).
b = os.path.join(work, "b")
shutil.copytree(a, b)
for step in (6, 7):
    os.remove(os.path.join(b, "checkpoints", "step-%09d.safetensors" % step))
train(b, "--steps", "7", "--resume")
mb = metrics(b)
check({x["step"]: x["val_loss"] for x in mb if "val_loss" in x} == vals, "a resumed run's validation losses are bit-equal")
check(json.load(open(os.path.join(b, "summary.json")))["validation"]["best_step"] == best, "the best survives the resume")

# --val-fraction 0: no validation; --val-data FILE: that file.
c = os.path.join(work, "c")
train(c, "--steps", "3", "--val-fraction", "0")
check(all("val_loss" not in x for x in metrics(c)) and json.load(open(os.path.join(c, "summary.json")))["validation"] == {},
      "--val-fraction 0 evaluates nothing")
val_file = os.path.join(work, "val.bin")
with open(val_file, "wb") as f:
    f.write(bytes(b for ch in b"the clever robot paints the garden. " * 40 for b in (ch, 0)))
d = os.path.join(work, "d")
train(d, "--steps", "3", "--val-data", val_file)
check(json.load(open(os.path.join(d, "summary.json")))["validation"]["data"] == val_file, "--val-data names the file evaluated")

# Text in: notes.txt trains on its bytes, named relative to the working directory; the resume
# runs from another directory.
text_dir = os.path.join(work, "text")
os.makedirs(text_dir)
with open(os.path.join(text_dir, "notes.txt"), "w") as f:
    f.write("A notebook of plain English sentences, written by hand, kept as text. " * 300)
e = os.path.join(work, "e")
train(e, "--steps", "3", "--data", "notes.txt", cwd=text_dir)
cfg = json.load(open(os.path.join(e, "config.json")))
check(cfg["data"] == os.path.join(text_dir, "notes.txt") and cfg["data_dtype"] == "auto", "config.json records the data's absolute path")
train(e, "--steps", "6", "--resume", cwd="/")
check([x["step"] for x in metrics(e)] == [1, 2, 3, 4, 5, 6], "resumed from another working directory")

# A text file not named .txt is read as uint16 pairs: refused, with both fixes named.
bad = os.path.join(work, "notes.data")
shutil.copy(os.path.join(text_dir, "notes.txt"), bad)
r = run(tally, ["train", "--out", os.path.join(work, "f"), "--steps", "3", "--data", bad] + TINY)
check(r.returncode == 1 and "read as uint16" in r.stderr and "--data-dtype uint8" in r.stderr and "--vocab-size" in r.stderr,
      "a text file read as uint16: %s" % r.stderr.strip())
r = run(tally, ["train", "--out", os.path.join(work, "g"), "--steps", "3", "--data", bad, "--data-dtype", "uint8"] + TINY)
check(r.returncode == 0, "--data-dtype uint8 reads it as bytes")

check.finish()
