"""PyTorch reference for tests/einops: reads <dir>/cases.txt written by common.cpp.

Each line is: id <TAB> kind <TAB> text <TAB> shapes, where kind is "einsum" (text is a torch
equation) or "expr" (text is a Python expression over x0, x1, ...) and shapes is "2x3;4" with one
entry per input ("-" for a 0-d input). Input k of a case is <id>_<k>.bin, raw little-endian
float32; the result is written to <id>.out (float64) and <id>.shape (sizes separated by spaces).
"""
import os
import sys

import numpy as np
import torch

torch.set_num_threads(1)


def main(directory):
    with open(os.path.join(directory, "cases.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            case_id, kind, text, shapes = line.split("\t")
            inputs = []
            for k, shape in enumerate(shapes.split(";") if shapes else []):
                dims = [] if shape == "-" else [int(s) for s in shape.split("x")]
                data = np.fromfile(os.path.join(directory, f"{case_id}_{k}.bin"), dtype="<f4")
                inputs.append(torch.from_numpy(data.reshape(dims)).double())
            if kind == "einsum":
                out = torch.einsum(text, *inputs)
            else:
                env = {f"x{k}": t for k, t in enumerate(inputs)}
                env["torch"] = torch
                out = eval(text, env)
            out = out.double().contiguous()
            out.numpy().astype("<f8").tofile(os.path.join(directory, f"{case_id}.out"))
            with open(os.path.join(directory, f"{case_id}.shape"), "w") as s:
                s.write(" ".join(str(d) for d in out.shape))


if __name__ == "__main__":
    main(sys.argv[1])
