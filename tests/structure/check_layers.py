"""The library's layers depend only downward: no file includes a header of a layer above its own.

Usage: check_layers.py SOURCE_DIR

The layers, bottom-up, as the design lays them out, with where the code put a few files:
  - the tables (table/: the dtype list and the op lists, preprocessor text that includes nothing)
    sit at the bottom: tensor.h, the dtype header and the CUDA kernels all expand them;
  - the POSIX file primitives of io (atomic writes, regular-file checks, retries) sit just above
    errors: the machine layer writes its cache with them and data reads token files with them;
  - machine (what this computer is and promises: CPU features, the device table, the cache folder)
    sits right above core: the CPU kernels choose their instruction set from its CPU features;
  - kernels/cuda sit in kernels, and tally/cuda (the device runtime) right above them.
Tensor's methods are declared in core and defined in ops, and the graph data lives in core: both
are includes downward (ops and autograd include core), so they need no exception.

Each upward include is printed with the two layers; the exit status is 1 if there is any.
"""

import os
import re
import sys

LAYERS = [
    ("error", ["error/"]),
    ("table", ["table/"]),
    ("files", ["io/atomic_file.", "io/regular_file.", "io/retry.", "io/write_all."]),
    ("dtype", ["dtype/"]),
    ("core", ["core/"]),
    ("machine", ["machine/"]),
    ("kernels", ["kernels/"]),
    ("cuda", ["cuda/"]),
    ("ops", ["ops/"]),
    ("autograd", ["autograd/"]),
    ("accounting", ["accounting/"]),
    ("einops", ["einops/"]),
    ("nn", ["nn/"]),
    ("optim", ["optim/"]),
    ("data", ["data/"]),
    ("io", ["io/"]),
    ("dist", ["dist/"]),
    ("amp", ["amp/"]),
    ("train", ["train/"]),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s*"tally/([^"]+)"')


def layer_of(path):
    """The layer of a path relative to tally/: the first (most specific) prefix that matches."""
    best = None
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if path.startswith(prefix) and (best is None or len(prefix) > best[1]):
                best = (name, len(prefix))
    return best[0] if best else None


def main():
    root = os.path.join(sys.argv[1], "tally")
    problems, checked = [], 0
    for folder, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".h", ".cpp", ".cu", ".cuh")):
                continue
            rel = os.path.relpath(os.path.join(folder, f), root)
            if rel == "tally.h":
                continue  # the umbrella header includes everything by design
            mine = layer_of(rel)
            if mine is None:
                problems.append(f"tally/{rel}: in no layer; add its folder to LAYERS in {__file__}")
                continue
            with open(os.path.join(folder, f), encoding="utf-8") as src:
                for n, line in enumerate(src, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    checked += 1
                    theirs = layer_of(m.group(1))
                    if theirs is None:
                        problems.append(f"tally/{rel}:{n}: includes tally/{m.group(1)}, in no layer")
                    elif RANK[theirs] > RANK[mine]:
                        problems.append(f"tally/{rel}:{n}: {mine} includes tally/{m.group(1)} of {theirs}, a layer above it")
    for p in problems:
        print(p)
    print(f"{checked} includes checked, {len(problems)} upward")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
