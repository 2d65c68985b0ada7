"""PyTorch 1.13 reference for tests/nn: builds the layer a case names, loads the weights tally
wrote, runs forward and backward, and writes the output and every gradient back.

Usage: reference_nn.py DIR... (one process for many cases: importing torch takes seconds).
Each DIR/manifest.txt has one line per tensor: "name dtype d0 d1 ..."
(dtype float32 or int64, raw little-endian bytes in DIR/name.bin), and a line "case NAME k=v ...".
Tensors named "param.<dotted name>" are the module's state_dict; "input" is the input, "grad"
the gradient of the output (omitted for losses, whose output is reduced: backward from 1), and
"target" a loss's target. Writes "out" and "grad.<name>" for the input and each parameter.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"float32": np.float32, "int64": np.int64}


def read(d):
    tensors, case, args = {}, None, {}
    with open(os.path.join(d, "manifest.txt")) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "case":
                case = parts[1]
                args = dict(kv.split("=", 1) for kv in parts[2:])
                continue
            name, dtype, shape = parts[0], parts[1], [int(s) for s in parts[2:]]
            a = np.fromfile(os.path.join(d, name + ".bin"), dtype=DTYPES[dtype]).reshape(shape)
            tensors[name] = torch.from_numpy(a.copy())
    return case, args, tensors


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        eps = torch.finfo(x.dtype).eps
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


class MLP(nn.Module):
    def __init__(self, d, hidden, kind, bias):
        super().__init__()
        self.kind = kind
        if kind == "gelu":
            self.fc = nn.Linear(d, hidden, bias=bias)
            self.proj = nn.Linear(hidden, d, bias=bias)
        else:
            self.w1 = nn.Linear(d, hidden, bias=bias)
            self.w2 = nn.Linear(hidden, d, bias=bias)
            self.w3 = nn.Linear(d, hidden, bias=bias)

    def forward(self, x):
        if self.kind == "gelu":
            return self.proj(F.gelu(self.fc(x)))
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rope_tables(T, dh, theta):
    i = torch.arange(dh // 2, dtype=torch.float64)
    inv = theta ** (-2.0 * i / dh)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    return ang.cos().float(), ang.sin().float()


class Attention(nn.Module):
    def __init__(self, d, h, T, bias, rotary, theta=10000.0):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=bias)
        self.proj = nn.Linear(d, d, bias=bias)
        self.rotary = rotary
        if rotary:
            self.cos, self.sin = rope_tables(T, d // h, theta)

    def rotate(self, x):
        T, half = x.shape[-2], x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * self.cos[:T] + rot * self.sin[:T]

    def forward(self, x):
        b, T, d = x.shape
        q, k, v = self.qkv(x).split(d, -1)
        q, k, v = (t.reshape(b, T, self.h, d // self.h).permute(0, 2, 1, 3) for t in (q, k, v))
        if self.rotary:
            q, k = self.rotate(q), self.rotate(k)
        s = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = s.softmax(-1) @ v
        return self.proj(y.permute(0, 2, 1, 3).reshape(b, T, d))


def make_norm(kind, d, bias):
    return RMSNorm(d) if kind == "rms" else nn.LayerNorm(d)


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        d = a["d"]
        self.norm1 = make_norm(a["norm"], d, True)
        self.attn = Attention(d, a["h"], a["T"], True, a["rotary"])
        self.norm2 = make_norm(a["norm"], d, True)
        self.mlp = MLP(d, 4 * d, a["mlp"], True)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class LM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.token_embedding = nn.Embedding(a["V"], a["d"])
        if not a["rotary"]:
            self.position_embedding = nn.Embedding(a["T"], a["d"])
        self.blocks = nn.ModuleList([Block(a) for _ in range(a["L"])])
        self.norm_f = make_norm(a["norm"], a["d"], True)
        self.tied = a["tied"]
        if not self.tied:
            self.lm_head = nn.Linear(a["d"], a["V"], bias=False)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.token_embedding(ids)
        if hasattr(self, "position_embedding"):
            x = x + self.position_embedding.weight[:T]
        for blk in self.blocks:
            x = blk(x)
        x = self.norm_f(x)
        return x @ self.token_embedding.weight.t() if self.tied else self.lm_head(x)


def build(case, a):
    i = lambda k: int(a[k])
    if case == "linear":
        return nn.Linear(i("in"), i("out"), bias=a["bias"] == "1")
    if case == "embedding":
        return nn.Embedding(i("n"), i("d"), padding_idx=i("padding_idx") if "padding_idx" in a else None)
    if case == "layer_norm":
        return nn.LayerNorm(i("d"))
    if case == "rms_norm":
        return RMSNorm(i("d"))
    if case == "gelu":
        return nn.GELU(approximate=a["approximate"])
    if case == "silu":
        return nn.SiLU()
    if case in ("relu", "tanh", "sigmoid"):
        return {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[case]()
    if case == "mlp":
        return MLP(i("d"), i("hidden"), a["kind"], a["bias"] == "1")
    if case == "attention":
        return Attention(i("d"), i("h"), i("T"), True, a["rotary"] == "1")
    if case == "lm":
        cfg = dict(V=i("V"), T=i("T"), d=i("d"), L=i("L"), h=i("h"), rotary=a["rotary"] == "1",
                   norm=a["norm"], mlp=a["mlp"], tied=a["tied"] == "1")
        return LM(cfg)
    raise SystemExit("unknown case " + case)


def run(d):
    case, a, t = read(d)
    out_grads = {}
    if case in ("cross_entropy", "mse_loss", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"):
        x = t["input"].requires_grad_()
        red = a["reduction"]
        if case == "cross_entropy":
            out = F.cross_entropy(x, t["target"], ignore_index=int(a["ignore_index"]), reduction=red,
                                  label_smoothing=float(a["label_smoothing"]))
        elif case == "nll_loss":
            out = F.nll_loss(x, t["target"], ignore_index=int(a["ignore_index"]), reduction=red)
        else:
            out = getattr(F, case)(x, t["target"], reduction=red)
        (out * t["grad"]).sum().backward()
        out_grads["input"] = x.grad
    else:
        m = build(case, a)
        state = {k[len("param."):]: v for k, v in t.items() if k.startswith("param.")}
        m.load_state_dict(state, strict=True)
        x = t["input"]
        if x.is_floating_point():
            x.requires_grad_()
        out = m(x)
        (out * t["grad"]).sum().backward()
        if x.is_floating_point():
            out_grads["input"] = x.grad
        for name, p in m.named_parameters():
            out_grads["param." + name] = p.grad if p.grad is not None else torch.zeros_like(p)
    out.detach().numpy().astype(np.float32).tofile(os.path.join(d, "out.bin"))
    for name, g in out_grads.items():
        g.detach().numpy().astype(np.float32).tofile(os.path.join(d, "grad." + name + ".bin"))


if __name__ == "__main__":
    for d in sys.argv[1:]:
        run(d)
