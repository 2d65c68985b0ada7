"""PyTorch 1.13's side of bench/decode.sh: the model of bench/decode.cpp (GPT-2's layout: learned
positions, pre-norm blocks, a 4·d GELU MLP, tied head) decoding greedily with a KV cache of its own:
per layer, past keys and values concatenated with each step's, as Hugging Face's GPT-2 keeps
past_key_values. float32, 2 threads, a prompt of 16 random tokens. Prints one JSON line like decode.
Usage: decode.py small|gpt2 BATCH NEW_TOKENS"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

import train_step  # its Block; it sets 2 threads, which the line below may change

torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
torch.manual_seed(0)
SHAPES = {"small": (256, 256, 256, 4, 4), "gpt2": (50257, 1024, 768, 12, 12)}


class Block(train_step.Block):
    """The training benchmark's block, its forward with past keys and values."""

    def forward(self, x, past):
        b, T, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, T, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        scores = q @ k.transpose(-2, -1) / (d // self.h) ** 0.5
        if T > 1:  # the prompt: causal; one new token sees every key
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, T, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.norm2(x)))), (k, v)


class GPT(nn.Module):
    def __init__(self, vocab, context, d, layers, heads):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, ids, past, start):
        x = self.tok(ids) + self.pos.weight[start:start + ids.shape[1]]
        new = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, past[i] if past else None)
            new.append(kv)
        return F.linear(self.norm(x), self.tok.weight), new  # the tied head, as nn.Linear would compute it


def generate(model, prompt, new_tokens, on_first):
    logits, past = model(prompt, None, 0)
    ids = prompt
    for i in range(new_tokens):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], 1)
        if i == 0:
            on_first()
        if i + 1 == new_tokens:
            break
        logits, past = model(nxt, past, ids.shape[1] - 1)
    return ids


def main():
    shape, batch, new_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    vocab, context, d, layers, heads = SHAPES[shape]
    model = GPT(vocab, context, d, layers, heads).eval()
    prompt = torch.randint(0, vocab, (batch, 16))
    start = [0.0]
    with torch.no_grad():
        generate(model, prompt, new_tokens, lambda: None)  # warm-up
        generate(model, prompt, new_tokens, lambda: start.__setitem__(0, time.perf_counter()))
        seconds = time.perf_counter() - start[0]
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(json.dumps({"framework": "torch", "shape": shape, "batch": batch, "threads": torch.get_num_threads(),
                      "decode_tokens_per_sec": batch * (new_tokens - 1) / seconds, "weight_bytes": weight_bytes}))


if __name__ == "__main__":
    main()
