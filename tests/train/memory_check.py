"""The memory pre-check (Note [Memory pre-check] in tally/train/memory_check.h): a run that would
not fit is refused in one line, with the predicted and available bytes, the bound and what would
fit, before a file is written: inside a memory cgroup where this machine lets the test make one,
and under RLIMIT_AS. A run that fits is not refused. With --no-memory-check an out-of-memory
error in the first step leaves no file behind (Note [A failed start leaves nothing]).

usage: memory_check.py TALLY WORK_DIR"""

import os
import re
import resource
import shutil
import sys

from train_cli import TINY, run

tally, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []
GiB = 1 << 30

# Every allocation of this model is small enough, its total (parameters, gradients and AdamW's
# state: about 6.4 GB) is not.
BIG = ["--d-model", "2048", "--num-layers", "8", "--num-heads", "16", "--steps", "3", "--warmup-steps", "1", "--threads", "2"]
REFUSAL = re.compile(r"^tally: error: not enough memory for this run: it needs about ([\d.]+) GiB \((\d+) bytes\).* but "
                     r"([\d.]+) GiB \((\d+) bytes\) is available under (.*?); (.*); --no-memory-check runs it anyway$")


def check(name, ok, what):
    print("%-28s %s" % (name, "ok" if ok else "FAILED: " + what))
    if not ok:
        failures.append("%s: %s" % (name, what))


def expect_refusal(name, args, bound_word, **kwargs):
    """Runs tally train with args; checks the one-line refusal and that the run directory was not made.
    Returns (needed, available) in bytes."""
    out = os.path.join(work, name)
    r = run(tally, ["train", "--out", out] + args, **kwargs)
    lines = r.stderr.strip().splitlines()
    m = REFUSAL.match(lines[0]) if len(lines) == 1 else None
    print("%-28s exit %d: %s" % (name, r.returncode, r.stderr.strip()))
    check(name, r.returncode == 1 and m is not None, "expected exit 1 and one refusal line, got exit %d: %r" % (r.returncode, r.stderr))
    if not m:
        return None
    needed, available = int(m.group(2)), int(m.group(4))
    check(name + " figures", needed > available, "needed %d is not above available %d" % (needed, available))
    check(name + " bound", bound_word in m.group(5), "the bound %r does not name %r" % (m.group(5), bound_word))
    check(name + " suggestion", "would fit" in m.group(6) or "smaller model" in m.group(6), "no suggestion in %r" % m.group(6))
    check(name + " wrote nothing", not os.path.exists(out), "%s exists after a refusal: %s" % (out, os.listdir(out) if os.path.isdir(out) else ""))
    return needed, available


def limit_address_space(limit):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# RLIMIT_AS: the bound every machine has. The refusal gives the address space left, so the
# space the process had mapped when it checked is the limit less that.
limit = 8 * GiB
figures = expect_refusal("rlimit-as", BIG, "RLIMIT_AS", preexec_fn=limit_address_space(limit))
if figures:
    mapped_at_check = limit - figures[1]
    # A model that fits once, but not with its gradients and optimizer state: d 1024, 8 layers
    # (about 0.4 GB of parameters, 1.6 GB with the rest). With the check skipped, the first step
    # runs out of memory: a clear error, and the run directory it had started is gone again.
    mid = ["--d-model", "1024", "--num-layers", "8", "--num-heads", "8", "--steps", "3", "--warmup-steps", "1", "--threads", "2"]
    out = os.path.join(work, "no-check-oom")
    r = run(tally, ["train", "--out", out, "--no-memory-check"] + mid, preexec_fn=limit_address_space(mapped_at_check + GiB))
    print("%-28s exit %d: %s" % ("no-check-oom", r.returncode, r.stderr.strip()[-300:]))
    check("no-check-oom error", r.returncode == 1 and "out of memory" in r.stderr, "expected an out-of-memory error, got exit %d: %r"
          % (r.returncode, r.stderr[-500:]))
    check("no-check-oom wrote nothing", not os.path.exists(out), "left %s" % (os.listdir(out) if os.path.isdir(out) else out))
    # The same limit refuses that run up front, and a small run fits under it.
    expect_refusal("rlimit-as-mid", mid, "RLIMIT_AS", preexec_fn=limit_address_space(mapped_at_check + GiB))
    small = os.path.join(work, "rlimit-as-small")
    r = run(tally, ["train", "--out", small, "--steps", "2"] + TINY, preexec_fn=limit_address_space(mapped_at_check + GiB))
    check("rlimit-as-small", r.returncode == 0, "a small run was refused: exit %d %r" % (r.returncode, r.stderr[-500:]))


def own_memory_cgroup():
    """(version, folder) of a memory cgroup this process may make children in, or None."""
    with open("/proc/self/cgroup") as f:
        lines = [l.strip().split(":", 2) for l in f]
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            folder = "/sys/fs/cgroup/memory" + path
            if os.access(folder, os.W_OK):
                return 1, folder
    for _, controllers, path in lines:
        if controllers == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                folder = root + path
                if os.path.exists(os.path.join(folder, "cgroup.controllers")) and os.access(folder, os.W_OK):
                    with open(os.path.join(folder, "cgroup.subtree_control")) as f:
                        if "memory" in f.read().split():
                            return 2, folder
    return None


# A memory cgroup of 1.5 GiB, where the machine lets the test make one (root, a writable hierarchy).
cgroup = own_memory_cgroup()
if cgroup is None:
    print("memory cgroup: none can be made here; the RLIMIT_AS cases above stand for it")
else:
    version, parent = cgroup
    group = os.path.join(parent, "tally_memory_check_%d" % os.getpid())
    os.mkdir(group)
    try:
        with open(os.path.join(group, "memory.limit_in_bytes" if version == 1 else "memory.max"), "w") as f:
            f.write(str(3 * GiB // 2))

        def enter():
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        expect_refusal("cgroup", BIG, "memory cgroup", preexec_fn=enter)
        small = os.path.join(work, "cgroup-small")
        r = run(tally, ["train", "--out", small, "--steps", "2"] + TINY, preexec_fn=enter)
        check("cgroup-small", r.returncode == 0, "a small run was refused: exit %d %r" % (r.returncode, r.stderr[-500:]))
    finally:
        os.rmdir(group)

if failures:
    print("\n".join(["FAILED:"] + failures))
    sys.exit(1)
print("all memory-check cases passed")
