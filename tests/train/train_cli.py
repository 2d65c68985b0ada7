"""Shared pieces of the `tally train` command-line tests: running the binary, reading checkpoints
with json alone, and a tiny configuration that trains in a few seconds."""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

# Small enough for a test, big enough that a checkpoint takes a moment to write.
TINY = ["--d-model", "64", "--num-layers", "2", "--num-heads", "2", "--context-length", "32",
        "--batch-size", "8", "--corpus-bytes", "131072", "--warmup-steps", "2", "--threads", "2"]

CHECKPOINT = re.compile(r"^(step-\d{9}|best)\.safetensors$")  # committed files (the best beside the steps')
STEP_CHECKPOINT = re.compile(r"^step-\d{9}\.safetensors$")     # what --resume continues from


def script_args():
    """(TALLY, WORK_DIR) from the command line, TALLY absolute (tests run it from other directories),
    WORK_DIR emptied."""
    tally, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return tally, work


class Checks:
    """Each check printed as it is made ("ok" or "FAILED"); finish() exits non-zero if any failed."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print("%-6s %s" % ("ok" if ok else "FAILED", what))
        if not ok:
            self.failures.append(what)

    def finish(self, success=""):
        if self.failures:
            print("FAILED:\n" + "\n".join(self.failures))
            sys.exit(1)
        if success:
            print(success)


def run(tally, args, **kwargs):
    """Runs `tally args...`; returns the CompletedProcess with text output."""
    return subprocess.run([tally] + args, capture_output=True, text=True, timeout=600, **kwargs)


def read_tensors(path):
    """name -> (dtype, shape, raw bytes) of a safetensors file, with json and struct alone."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = (entry["dtype"], tuple(entry["shape"]), body[begin:end])
    return out


def losses(run_dir):
    """step -> loss from metrics.jsonl."""
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return {m["step"]: m["loss"] for m in map(json.loads, f)}


def temporaries(checkpoint_dir):
    """Files in the checkpoint folder that are not committed checkpoints (a save in progress)."""
    try:
        return [n for n in os.listdir(checkpoint_dir) if not CHECKPOINT.match(n)]
    except FileNotFoundError:
        return []
