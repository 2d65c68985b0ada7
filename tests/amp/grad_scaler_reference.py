"""PyTorch 1.13's GradScaler on a scripted gradient sequence, on the CPU.

torch.cuda.amp.GradScaler is PyTorch's algorithm (the per-optimizer stages, the skip, the update),
but 1.13 runs its two kernels, _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_,
only on CUDA. This script runs the class itself with those two kernels written out in Python from
their CUDA source (ATen/native/cuda/AmpKernels.cu), float32 as there, so that tally's GradScaler
can be compared with PyTorch's on a machine without a GPU.

usage: grad_scaler_reference.py SCRIPT.json -> prints one JSON object per step
  SCRIPT: {"init_scale", "growth_factor", "backoff_factor", "growth_interval", "lr",
           "params": [[...], ...], "grads": [[[...], ...] per step]} (unscaled gradients; null = NaN,
           "inf"/"-inf" strings for infinities)"""

import json
import math
import sys

import torch
from torch.cuda.amp import grad_scaler


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    inv = inv_scale.item()
    for g in grads:
        flat = g.view(-1)
        for i in range(flat.numel()):
            v = flat[i].item()
            if not math.isfinite(v):
                found_inf.fill_(1.0)
            if inv != 1.0:
                flat[i] = torch.tensor(v, dtype=torch.float32) * torch.tensor(inv, dtype=torch.float32)


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    s = scale.item()  # a float32 value
    if found_inf.item():
        scale.fill_(s * backoff_factor)  # double product, stored as float32
        growth_tracker.fill_(0)
    else:
        successful = growth_tracker.item() + 1
        if successful == growth_interval:
            new_scale = torch.tensor(s * growth_factor, dtype=torch.float32).item()
            if math.isfinite(new_scale):
                scale.fill_(new_scale)
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)
    return scale


class CpuReplicator:
    def __init__(self, master):
        self.master = master
        self._per_device_tensors = {}

    def get(self, device):
        return self._per_device_tensors.setdefault(device, self.master.to(device=device, copy=True))


torch._amp_foreach_non_finite_check_and_unscale_ = non_finite_check_and_unscale_
torch._amp_update_scale_ = update_scale_
grad_scaler._MultiDeviceReplicator = CpuReplicator
grad_scaler.amp_definitely_not_available = lambda: False  # the constructor would turn itself off


def value(x):
    return {None: math.nan, "inf": math.inf, "-inf": -math.inf}.get(x, x) if not isinstance(x, (int, float)) else x


script = json.load(open(sys.argv[1]))
params = [torch.tensor(p, dtype=torch.float32, requires_grad=True) for p in script["params"]]
opt = torch.optim.SGD(params, lr=script["lr"])
scaler = grad_scaler.GradScaler(init_scale=script["init_scale"], growth_factor=script["growth_factor"],
                                backoff_factor=script["backoff_factor"], growth_interval=script["growth_interval"])
scaler._lazy_init_scale_growth_tracker(torch.device("cpu"))
for step_grads in script["grads"]:
    scale_before = scaler.get_scale()
    for p, g in zip(params, step_grads):
        # The backward of a scaled loss: the gradient times the scale, in float32.
        p.grad = torch.tensor([value(v) for v in g], dtype=torch.float32) * torch.tensor(scale_before, dtype=torch.float32)
    scaler.step(opt)
    found = sum(v.item() for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())
    scaler.update()
    print(json.dumps({"scale_before": scale_before, "taken": not found, "scale_after": scaler.get_scale(),
                      "growth_tracker": scaler._get_growth_tracker(),
                      "params": [p.detach().tolist() for p in params]}))
