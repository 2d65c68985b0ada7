"""PyTorch reference for tests/optim: reads <dir>/cases.txt written by reference.cpp.

The first line is "params <shape>;<shape>;..." (shapes like 4x5), the second "steps <n>". Each
further line is: id <TAB> kind <TAB> text. For kind "optim", text is a Python expression over
`params` (a list of leaf tensors) that builds a torch.optim optimizer; it takes <n> steps where
step t gives parameter k the gradient g<t>_<k>.bin (no file: no gradient). For kind "clip", text
is "max_norm norm_type": clip_grad_norm_ of the step-0 gradients.
Inputs p<k>.bin and gradients are raw little-endian float32. Outputs, float64: <id>_p<k>.bin the
final parameters, <id>_s<k>_<name>.bin each state tensor, <id>_g<k>.bin clipped gradients,
<id>_norm.bin the total norm; torch_version.txt names the PyTorch that computed them.
"""
import math
import os
import sys

import numpy as np
import torch

torch.set_num_threads(1)


def main(directory):
    with open(os.path.join(directory, "cases.txt")) as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    shapes = [[int(s) for s in shape.split("x")] for shape in lines[0].split(" ", 1)[1].split(";")]
    steps = int(lines[1].split(" ")[1])

    def load(name, shape):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            return None
        return torch.from_numpy(np.fromfile(path, dtype="<f4").reshape(shape).copy())

    def save(name, t):
        t.detach().double().contiguous().numpy().astype("<f8").tofile(os.path.join(directory, name))

    with open(os.path.join(directory, "torch_version.txt"), "w") as f:
        f.write(torch.__version__)
    for line in lines[2:]:
        case_id, kind, text = line.split("\t")
        params = [load(f"p{k}.bin", s).requires_grad_() for k, s in enumerate(shapes)]
        if kind == "optim":
            opt = eval(text, {"torch": torch, "params": params})
            for t in range(steps):
                for k, p in enumerate(params):
                    p.grad = load(f"g{t}_{k}.bin", shapes[k])
                opt.step()
            for k, p in enumerate(params):
                save(f"{case_id}_p{k}.bin", p)
                for name, value in opt.state[p].items():
                    if torch.is_tensor(value):
                        save(f"{case_id}_s{k}_{name}.bin", value)
        else:
            max_norm, norm_type = (float(v) for v in text.split(" "))
            for k, p in enumerate(params):
                p.grad = load(f"g0_{k}.bin", shapes[k])
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
            save(f"{case_id}_norm.bin", norm.reshape(1))
            for k, p in enumerate(params):
                if p.grad is not None:
                    save(f"{case_id}_g{k}.bin", p.grad)


if __name__ == "__main__":
    main(sys.argv[1])
