"""PyTorch 1.13's side of bench/training.sh: the same two training steps as bench/train_step.cpp
(Cruncher D 1024 / 4 layers / B 1024 / MSE / AdamW; small GPT vocab 256 / d 256 / 4 layers /
4 heads / T 256 / B 16 / AdamW), float32 or with the forward under
torch.autocast("cpu", dtype=torch.bfloat16), 2 threads. Prints one JSON line like train_step.
Usage: train_step.py cruncher|gpt [steps] [fp32|bf16]"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(2)
torch.manual_seed(0)


class Linear(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(i, o) / math.sqrt(i))

    def forward(self, x):
        return x @ self.weight


class Cruncher(nn.Module):
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
        self.final = Linear(dim, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, T, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, -1)
        q, k, v = (t.reshape(b, T, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.h)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        x = x + self.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(b, T, d))
        return x + self.fc2(F.gelu(self.fc(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, V, T, d, L, h):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList([Block(d, h) for _ in range(L)])
        self.norm = nn.LayerNorm(d)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.norm(x) @ self.tok.weight.t()


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "cruncher"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    precision = sys.argv[3] if len(sys.argv) > 3 else "fp32"
    if which == "cruncher":
        model = Cruncher(1024, 4)
        x, y = torch.randn(1024, 1024), torch.randn(1024)
        loss_fn, tokens = (lambda: F.mse_loss(model(x), y)), 1024
    else:
        model = GPT(256, 256, 256, 4, 4)
        ids = torch.randint(256, (16, 257))
        x, y = ids[:, :256], ids[:, 1:]
        loss_fn, tokens = (lambda: F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))), 16 * 256
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    s = (time.perf_counter() - t0) / steps
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"framework": "torch", "workload": which, "precision": precision, "threads": torch.get_num_threads(),
                      "steps_per_sec": 1 / s, "tokens_per_sec": tokens / s, "peak_rss_mib": rss}))


if __name__ == "__main__":
    main()
