"""`tally sample` from the outside: a trained run continues a prompt; the same seed prints the same
text and another seed other text; --checkpoint picks a file; the books of decoding add up (prefill
and decode FLOPs and bytes from the ledger, the KV cache's bytes from the layer sizes); bad input
is refused with one line naming it. `tally train` itself ends with a short sample.

usage: sample.py TALLY WORK_DIR"""

import json
import os

from train_cli import TINY, Checks, run, script_args

tally, work = script_args()
check = Checks()



out = os.path.join(work, "run")
r = run(tally, ["train", "--out", out, "--steps", "6", "--checkpoint-interval", "3"] + TINY)
assert r.returncode == 0, r.stderr
check("\nsample          " in r.stdout and "`tally sample %s` for more" % out in r.stdout, "tally train ends with a short sample")


def sample(*args):
    return run(tally, ["sample", out, "--threads", "2"] + list(args))


a, b, c = (sample("--prompt", "The ", "--max-new-tokens", "20", "--seed", s, "--json") for s in ("3", "3", "4"))
check(a.returncode == 0, "sample --json exits 0: %s" % a.stderr)
ja, jb, jc = (json.loads(x.stdout) for x in (a, b, c))
check(ja["samples"] == jb["samples"], "the same seed gives the same text")
check(ja["samples"] != jc["samples"], "another seed gives other text")
check(ja["samples"][0].startswith("The ") and len(ja["sample_ids"][0]) == 24 and ja["sample_ids"][0][:4] == list(b"The "),
      "the prompt's 4 bytes and 20 new tokens: %r" % ja["samples"][0])
check(ja["step"] == 6 and ja["checkpoint"].endswith("step-000000006.safetensors"), "the newest checkpoint by default")

books = ja["books"]
# The tiny model: keys and values of 2 layers, d_model 64, for 4 + 19 positions (the last token is
# never run), float32.
check(books["kv_cache_bytes"] == 2 * 2 * 1 * 23 * 64 * 4, "the KV cache's bytes: %d" % books["kv_cache_bytes"])
check(books["prefill"]["tokens"] == 4 and books["decode"]["tokens"] == 19 and books["decode"]["steps"] == 19, "tokens per phase")
check(books["decode"]["flops"] > 0 and books["prefill"]["flops"] > 0 and books["decode"]["bytes"] > 19 * books["weights_bytes"] * 0.9,
      "each decode step reads the weights: %d bytes over 19 steps, weights %d" % (books["decode"]["bytes"], books["weights_bytes"]))
check(books["decode"]["bound"] == "memory" and 0 < books["decode"]["of_weights_bound"], "decode at batch 1 is memory-bound")
check(not books["decode"]["window_rerun"], "23 positions fit the context of 32: no window rerun")

# Past the context (32), the window slides and is run again each step: said in the books.
d = sample("--max-new-tokens", "50", "--json")
check(d.returncode == 0 and json.loads(d.stdout)["books"]["decode"]["window_rerun"], "past the context the window is rerun")

# Several samples decode as one batch; the text output names its books.
e = sample("--num-samples", "3", "--max-new-tokens", "20", "--top-k", "5", "--top-p", "0.9")
check(e.returncode == 0 and e.stdout.count("--- sample ") == 3 and "books of decoding (batch 3" in e.stdout, "3 samples in one batch")
f = sample("--checkpoint", os.path.join(out, "checkpoints", "step-000000003.safetensors"), "--max-new-tokens", "5")
check(f.returncode == 0 and "(step 3 of " in f.stdout, "--checkpoint picks the file: %s" % f.stdout[-300:])

for args, words in [(["--prompt-ids", "300"], "prompt token 0 is 300, outside the model's vocabulary of 256"),
                    (["--prompt-ids", "1 x"], "'x' is not a token id"),
                    (["--prompt", ""], "the prompt is empty"),
                    (["--checkpoint", os.path.join(work, "nope.safetensors")], "nope.safetensors")]:
    g = sample(*args)
    check(g.returncode == 1 and words in g.stderr and g.stderr.count("\n") == 1, "%s: %s" % (args, g.stderr.strip()))
g = run(tally, ["sample", os.path.join(work, "no_run")])
check(g.returncode == 1 and "has no config.json" in g.stderr, "not a run directory: %s" % g.stderr.strip())
g = sample("--temperature", "-1")
check(g.returncode == 2, "a negative temperature is a usage error")

check.finish()
