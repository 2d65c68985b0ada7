"""`tally train` with the defaults but fewer steps: the loss falls well below the built-in corpus's
unigram entropy, summary.json has every part docs/run_dir.md lists, and the report is written.

usage: default_run.py TALLY WORK_DIR"""

import json
import os
import shutil
import sys

from train_cli import run

tally, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
r = run(tally, ["train", "--steps", "150", "--out", work])
assert r.returncode == 0, r.stderr
assert "unigram entropy" in r.stdout and "report.html" in r.stdout, r.stdout[-2000:]
s = json.load(open(os.path.join(work, "summary.json")))
keys = ["tally_version", "config", "machine", "run", "parameters", "flops_per_token", "mfu", "step_time", "memory",
        "time_split", "top_ops", "ops", "modules", "memory_timeline"]
missing = [k for k in keys if k not in s]
assert not missing, "summary.json lacks %s" % missing
run_ = s["run"]
print("loss %.4f -> %.4f after %d steps; unigram entropy %.4f" % (run_["first_loss"], run_["final_loss"], run_["steps"],
                                                                  run_["unigram_entropy"]))
assert run_["final_loss"] < 0.6 * run_["unigram_entropy"], "the loss did not fall well below the unigram entropy"
assert s["flops_per_token"]["measured"]["forward"] == s["flops_per_token"]["predicted"]["forward"]
assert os.path.getsize(os.path.join(work, "report.html")) > 10000
with open(os.path.join(work, "metrics.jsonl")) as f:
    assert sum(1 for _ in f) == 150
