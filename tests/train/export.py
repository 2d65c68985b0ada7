"""`tally export` and `--init-from` from the outside: a run's weights exported in tally's names and in
Hugging Face GPT-2's start a new run at exactly the loss they ended at; the GPT-2 export, read with
numpy alone (docs/python.md's loader) into a PyTorch GPT-2 in HF's layout written here, gives the
loss tally gave within 1e-5, and every logit `tally sample --logits-out` gives within 1e-5;
weights PyTorch wrote in that layout start a tally run at the loss PyTorch computes and give its
logits; mismatched shapes and non-GPT-2 models are refused by name.

usage: export.py TALLY WORK_DIR"""

import json
import os
import re
import struct

import numpy as np
import torch
import torch.nn.functional as F

from train_cli import TINY, Checks, run, script_args

tally, work = script_args()
check = Checks()
here = os.path.dirname(os.path.abspath(__file__))
doc = open(os.path.join(here, "..", "..", "docs", "python.md")).read()
exec(re.search(r"```python\n(import json.*?)```", doc, re.S).group(1))  # defines load_safetensors



def train(out, *args):
    r = run(tally, ["train", "--out", out, "--eval-interval", "3", "--eval-batches", "2", "--log-interval", "100"] + TINY + list(args))
    check(r.returncode == 0, "train %s: %s" % (" ".join(args), r.stderr.strip()[-300:]))
    return json.load(open(os.path.join(out, "summary.json")))["validation"]


a = os.path.join(work, "a")
va = train(a, "--steps", "6")
tally_file, gpt2_file = os.path.join(work, "tally.safetensors"), os.path.join(work, "gpt2.safetensors")
for names, path in (("tally", tally_file), ("hf-gpt2", gpt2_file)):
    r = run(tally, ["export", a, "--out", path, "--names", names])
    check(r.returncode == 0 and "from step 6" in r.stdout, "export --names %s: %s%s" % (names, r.stdout.strip(), r.stderr.strip()))
r = run(tally, ["export", a, "--out", tally_file])
check(r.returncode == 1 and "exists" in r.stderr, "export writes over no file: %s" % r.stderr.strip())

# Each export starts a new run at exactly the validation loss the first run ended at.
for name, path in (("tally", tally_file), ("hf-gpt2", gpt2_file)):
    v = train(os.path.join(work, "from_" + name), "--steps", "3", "--init-from", path)
    check(v.get("initial_loss") == va["last_loss"], "--init-from the %s export: %r, the run ended at %r" % (name, v.get("initial_loss"), va["last_loss"]))

weights, meta = load_safetensors(gpt2_file)
check(meta["format"] == "pt" and meta["tally.step"] == "6" and weights["transformer.h.0.attn.c_attn.weight"].shape == (64, 192)
      and "lm_head.weight" not in weights, "GPT-2's names and Conv1D layout ([in, out]); the head tied to wte")
check(len(load_safetensors(tally_file)[0]) == 4 + 2 * 12 - 0 and "optimizer.step" not in load_safetensors(tally_file)[0],
      "the tally export holds the weights alone")


class Gpt2:
    """GPT-2 as Hugging Face lays it out (Conv1D: x @ W + b), with erf GELU, as tally's MLP."""

    def __init__(self, w, heads):
        self.w, self.h = {k: torch.tensor(np.array(v)) for k, v in w.items()}, heads
        self.layers = sum(1 for k in w if k.endswith(".ln_1.weight"))

    def conv(self, x, name):
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def ln(self, x, name):
        return F.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], 1e-5)

    def logits(self, ids):
        b, T = ids.shape
        x = self.w["transformer.wte.weight"][ids] + self.w["transformer.wpe.weight"][:T]
        for i in range(self.layers):
            p = "transformer.h.%d." % i
            q, k, v = self.conv(self.ln(x, p + "ln_1"), p + "attn.c_attn").split(x.shape[-1], -1)
            q, k, v = (t.view(b, T, self.h, -1).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            x = x + self.conv((att.softmax(-1) @ v).transpose(1, 2).reshape(b, T, -1), p + "attn.c_proj")
            x = x + self.conv(F.gelu(self.conv(self.ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
        return self.ln(x, "transformer.ln_f") @ self.w["transformer.wte.weight"].t()


def validation_loss(model, run_dir):
    """The loss tally's validation reads: the built-in corpus's last 10%, its first 2 batches of 8
    sequential windows of 32."""
    tokens = np.fromfile(os.path.join(run_dir, "corpus.u16"), np.uint16).astype(np.int64)
    val = torch.tensor(tokens[len(tokens) - int(len(tokens) * 0.1):])
    x = torch.stack([val[k * 32:k * 32 + 32] for k in range(16)])
    y = torch.stack([val[k * 32 + 1:k * 32 + 33] for k in range(16)])
    return F.cross_entropy(model.logits(x).reshape(-1, 256), y.reshape(-1)).item()


with torch.no_grad():
    torch_loss = validation_loss(Gpt2(weights, 2), a)
check(abs(torch_loss - va["last_loss"]) <= 1e-5 * abs(va["last_loss"]),
      "the GPT-2 export in PyTorch: loss %.7f, tally's %.7f" % (torch_loss, va["last_loss"]))

PROMPT = "The little robot paints a red house by the river."


def compare_logits(run_dir, checkpoint, torch_weights, what):
    """tally sample --logits-out with `checkpoint` against the PyTorch GPT-2 on the same weights:
    every logit of every prompt position within 1e-5."""
    out = os.path.join(work, what + ".logits.safetensors")
    r = run(tally, ["sample", run_dir, "--checkpoint", checkpoint, "--prompt", PROMPT, "--max-new-tokens", "1", "--logits-out", out])
    ok = r.returncode == 0 and os.path.isfile(out)
    check(ok, "%s: sample --logits-out: %s" % (what, r.stderr.strip()[-300:]))
    if not ok:
        return
    got, _ = load_safetensors(out)
    ids = torch.tensor(np.array(got["ids"]))
    # The prompt is longer than the context (32): the logits are of its last 32 positions.
    check(ids.tolist() == list(PROMPT.encode())[-32:], "%s: the logits are of the prompt's last 32 bytes: %s" % (what, bytes(ids.tolist())))
    with torch.no_grad():
        want = Gpt2(torch_weights, 2).logits(ids[None])[0].numpy()
    diff = np.abs(np.array(got["logits"]) - want)
    check(got["logits"].shape == (32, 256) and diff.max() <= 1e-5 * max(1.0, np.abs(want).max()),
          "%s: %d logits, largest difference %.2e (largest logit %.2f)" % (what, want.size, diff.max(), np.abs(want).max()))
    r = run(tally, ["sample", run_dir, "--checkpoint", checkpoint, "--prompt", PROMPT, "--max-new-tokens", "1", "--logits-out", out])
    check(r.returncode == 1 and "writes over no file" in r.stderr, "%s: --logits-out writes over no file: %s" % (what, r.stderr.strip()))


# Logit by logit: tally's GPT-2 export in the PyTorch GPT-2 gives tally's logits.
compare_logits(a, gpt2_file, weights, "tally-in-torch")

# Weights PyTorch wrote in GPT-2's layout start a tally run at the loss PyTorch computes for them.
gen = torch.Generator().manual_seed(4)
theirs = {k: (torch.randn(v.shape, generator=gen) * 0.05).numpy().astype(np.float32) for k, v in weights.items()}
for k in theirs:
    if k.endswith("ln_1.weight") or k.endswith("ln_2.weight") or k.endswith("ln_f.weight"):
        theirs[k] = (1 + theirs[k]).astype(np.float32)


def save_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        blob = np.ascontiguousarray(t).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


torch_file = os.path.join(work, "torch.safetensors")
save_safetensors(torch_file, theirs)
v = train(os.path.join(work, "from_torch"), "--steps", "3", "--init-from", torch_file)
with torch.no_grad():
    expected = validation_loss(Gpt2(theirs, 2), os.path.join(work, "from_torch"))
check(abs(v["initial_loss"] - expected) <= 1e-5 * expected, "PyTorch's weights in tally: loss %.7f, PyTorch's %.7f" % (v["initial_loss"], expected))
compare_logits(os.path.join(work, "from_torch"), torch_file, theirs, "torch-in-tally")

# Refused: a shape that does not fit (named, with both shapes); a model GPT-2's names cannot hold.
wide = [("128" if TINY[i - 1] == "--d-model" else a) for i, a in enumerate(TINY)]
r = run(tally, ["train", "--out", os.path.join(work, "wide"), "--steps", "3", "--init-from", tally_file] + wide)
check(r.returncode == 1 and "size mismatch for token_embedding.weight: copying a param with shape [256, 64] from checkpoint, the shape in current model is [256, 128]" in r.stderr
      and not os.path.exists(os.path.join(work, "wide")), "a mismatched shape, refused before writing: %s" % r.stderr.strip()[:300])
rot = os.path.join(work, "rotary")
train(rot, "--steps", "3", "--positions", "rotary")
r = run(tally, ["export", rot, "--out", os.path.join(work, "rot.safetensors"), "--names", "hf-gpt2"])
check(r.returncode == 1 and "not GPT-2-shaped: its positions are rotary" in r.stderr, "a rotary model has no GPT-2 names: %s" % r.stderr.strip())

check.finish()
