"""PyTorch reference for tally's differential tests.

Usage: reference.py CASES_JSON OUT_DIR

For every case in CASES_JSON (written by the C++ harness, see case.h) this script draws the base
tensor of each input from a generator seeded by the case's name, saves it as OUT_DIR/<id>_in<k>.npy,
builds the same strided view tally will build (transposed, sliced with step 2, expanded), runs the
operator in torch and saves each output as OUT_DIR/<id>_out<k>.npy. OUT_DIR/results.json maps each
case id to {"status": "ok" | "upcast" | "error" | "harness_error", "error": text,
"outputs": [{"dtype": name}]}; "harness_error" means this script called torch wrongly.

bfloat16 has no NumPy dtype: its arrays are stored as uint16 bit patterns; the dtype name in the
case (inputs) or in results.json (outputs) says how to read them.

Gradient cases ("gradient": true) make each input base with "requires_grad" a leaf before taking
its view, run backward from output 0 with a random upstream gradient saved as <id>_gout0.npy, and
save each base's .grad as <id>_grad<k>.npy; results.json lists them under "grads" ({"dtype"} or
null where torch left .grad as None).

"upcast": torch 1.13 has no CPU kernel for this op in float16 (or bfloat16), or the case asks for
"float32_reference" because torch's half kernel rounds intermediates; the reference is then the op
computed on float32 copies of the inputs with the result rounded back to the half dtype, which is
how tally defines arithmetic on half types.
"""

import json
import math
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "bool": torch.bool,
}
HALF_TYPES = (torch.float16, torch.bfloat16)

# Integer ranges [lo, hi) per domain for signed types; uint8 clips lo at 0.
INT_RANGES = {
    "normal": (-5, 6), "positive": (1, 6), "nonzero": (1, 6), "small_int": (-3, 4),
    "exponent": (0, 4), "near_one": (-1, 3), "wide": (-100, 101), "special": (-5, 6),
    "unsigned_wide": (0, 256), "unit": (0, 2),
}


def base_shape(spec):
    shape = list(spec["shape"])
    layout = spec["layout"]
    if layout == "transposed":
        shape[-2], shape[-1] = shape[-1], shape[-2]
    elif layout == "sliced":
        shape[-1] = 2 * shape[-1] + 1
    elif layout == "expanded":
        shape[0] = 1
    return shape


def make_view(base, spec):
    layout = spec["layout"]
    if layout == "transposed":
        return base.transpose(-2, -1)
    if layout == "sliced":
        return base[..., 1::2]
    if layout == "expanded":
        return base.expand(spec["shape"])
    return base


def draw_float(domain, shape, gen):
    if domain in ("normal", "special"):
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
        if domain == "special" and t.numel() > 0:
            flat = t.view(-1)
            values = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=torch.float64)
            picks = torch.randint(0, 5 * len(values), (flat.numel(),), generator=gen)
            hit = picks < len(values)
            flat[hit] = values[picks[hit]]
        return t
    if domain == "positive":
        return torch.rand(shape, generator=gen, dtype=torch.float64) * 2 + 0.5
    if domain == "unit":  # inside (0, 1), away from its ends (logit)
        return torch.rand(shape, generator=gen, dtype=torch.float64) * 0.8 + 0.1
    if domain == "nonzero":
        sign = torch.randint(0, 2, shape, generator=gen).double() * 2 - 1
        return sign * (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 + 0.5)
    if domain == "small_int":
        return torch.randint(-3, 4, shape, generator=gen).double()
    if domain == "exponent":
        return torch.rand(shape, generator=gen, dtype=torch.float64) * 4 - 2
    if domain == "near_one":
        return torch.rand(shape, generator=gen, dtype=torch.float64) + 0.5
    if domain == "wide":
        return torch.randn(shape, generator=gen, dtype=torch.float64) * 50
    if domain == "unsigned_wide":
        return torch.rand(shape, generator=gen, dtype=torch.float64) * 255
    raise ValueError("unknown domain " + domain)


def draw(spec, gen):
    shape = base_shape(spec)
    dtype = DTYPES[spec["dtype"]]
    domain = spec["domain"]
    numel = math.prod(shape)
    if domain.startswith("index:"):
        return torch.randint(0, int(domain[6:]), shape, generator=gen).to(dtype)
    if domain.startswith("signed_index:"):  # [-n, n): from the end as well
        n = int(domain[13:])
        return torch.randint(-n, n, shape, generator=gen).to(dtype)
    if domain.startswith("distinct_index:"):  # no position twice (numel <= n)
        return torch.randperm(int(domain[15:]), generator=gen)[:numel].view(shape).to(dtype)
    if domain == "distinct":
        # No ties, so argmax/argmin/max indices are unambiguous; |values| <= 128 are exact in bfloat16.
        perm = torch.randperm(numel, generator=gen).view(shape)
        return (perm % 256 if dtype == torch.uint8 else perm - numel // 2).to(dtype)
    if domain in ("sparse", "holes"):
        # One element in 400 differs from the rest: zeros with rare nonzeros ("sparse") or the
        # reverse ("holes"), so that any() and all() of a long row hang on elements far into it.
        # A float's zeros are +0 or -0 and its nonzeros 1.5 or NaN.
        rare = torch.randint(0, 400, shape, generator=gen) == 0
        nonzero = rare if domain == "sparse" else ~rare
        if dtype == torch.bool:
            return nonzero
        if not dtype.is_floating_point:
            return (nonzero * 3).to(dtype)
        coin = torch.randint(0, 2, shape, generator=gen).bool()
        zero = torch.where(coin, torch.tensor(-0.0, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64))
        value = torch.where(coin, torch.tensor(math.nan, dtype=torch.float64), torch.tensor(1.5, dtype=torch.float64))
        return torch.where(nonzero, value, zero).to(dtype)
    if dtype == torch.bool:
        if domain == "nonzero":
            return torch.ones(shape, dtype=torch.bool)
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return draw_float(domain, shape, gen).to(dtype)
    lo, hi = INT_RANGES[domain]
    if dtype == torch.uint8:
        lo = max(lo, 0)
    t = torch.randint(lo, hi, shape, generator=gen)
    if domain == "nonzero" and dtype != torch.uint8:
        t = t * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
    return t.to(dtype)


def dims_arg(args):
    d = args.get("dims")
    return tuple(d) if isinstance(d, list) else d


def reduction(fn_all, fn_dims):
    def run(v, b, a):
        if a.get("dims") is None:
            return [fn_all(v[0], a)]
        return [fn_dims(v[0], dims_arg(a), a)]
    return run


def pair(name):
    return lambda v, b, a: list(getattr(torch, name)(v[0], a["dim"], keepdim=a.get("keepdim", False)))


def index_item(item, v):
    """One entry of an "index" op's list: an int, null (new axis), "..." (Ellipsis),
    [start, stop, step] (a slice) or {"t": k}, the case's input k."""
    if isinstance(item, list):
        return slice(*item)
    if isinstance(item, dict):
        return v[item["t"]]
    return Ellipsis if item == "..." else item


def index_tuple(a, v):
    return tuple(index_item(i, v) for i in a["indices"])


def setitem(v, b, a):
    y = v[0].clone()
    y[index_tuple(a, v)] = v[-1]
    return [y]


def in_place(method, scalar):
    def run(v, b, a):
        getattr(v[0], method)(a["scalar"] if scalar else v[1])
        return [v[0], b[0]]
    return run


def in_place_with(method, *keys):
    """v[0].method(*v[1:], *args[keys]): an in-place op with tensor operands and named numbers."""
    def run(v, b, a):
        getattr(v[0], method)(*v[1:], *[a[k] for k in keys])
        return [v[0], b[0]]
    return run


def out_form(fn, *keys):
    """fn(*v[1:], *args[keys], out=v[0]): the out= form, returning the result and out's base."""
    def run(v, b, a):
        return [fn(*v[1:], *[a[k] for k in keys], out=v[0]), b[0]]
    return run


def gelu(x, approximate):
    """F.gelu, except at +inf: PyTorch 2's CPU kernel returns NaN there (seen with 2.11), where
    1.13, the function's limit and tally give +inf."""
    y = F.gelu(x, approximate=approximate)
    return torch.where(x == math.inf, x, y) if x.is_floating_point() else y


OPS = {
    # elementwise, tensor ∘ tensor
    "add": lambda v, b, a: [torch.add(v[0], v[1], alpha=a.get("alpha", 1))],
    "sub": lambda v, b, a: [torch.sub(v[0], v[1], alpha=a.get("alpha", 1))],
    "mul": lambda v, b, a: [v[0] * v[1]],
    "div": lambda v, b, a: [v[0] / v[1]],
    "pow": lambda v, b, a: [torch.pow(v[0], v[1])],
    "maximum": lambda v, b, a: [torch.maximum(v[0], v[1])],
    "minimum": lambda v, b, a: [torch.minimum(v[0], v[1])],
    "eq": lambda v, b, a: [v[0] == v[1]],
    "ne": lambda v, b, a: [v[0] != v[1]],
    "lt": lambda v, b, a: [v[0] < v[1]],
    "le": lambda v, b, a: [v[0] <= v[1]],
    "gt": lambda v, b, a: [v[0] > v[1]],
    "ge": lambda v, b, a: [v[0] >= v[1]],
    # elementwise, tensor ∘ number and number ∘ tensor
    "add_scalar": lambda v, b, a: [v[0] + a["scalar"]],
    "sub_scalar": lambda v, b, a: [v[0] - a["scalar"]],
    "mul_scalar": lambda v, b, a: [v[0] * a["scalar"]],
    "div_scalar": lambda v, b, a: [v[0] / a["scalar"]],
    "scalar_add": lambda v, b, a: [a["scalar"] + v[0]],
    "scalar_sub": lambda v, b, a: [a["scalar"] - v[0]],
    "scalar_mul": lambda v, b, a: [a["scalar"] * v[0]],
    "scalar_div": lambda v, b, a: [a["scalar"] / v[0]],
    "pow_scalar": lambda v, b, a: [v[0].pow(a["scalar"])],
    "eq_scalar": lambda v, b, a: [v[0] == a["scalar"]],
    "ne_scalar": lambda v, b, a: [v[0] != a["scalar"]],
    "lt_scalar": lambda v, b, a: [v[0] < a["scalar"]],
    "le_scalar": lambda v, b, a: [v[0] <= a["scalar"]],
    "gt_scalar": lambda v, b, a: [v[0] > a["scalar"]],
    "ge_scalar": lambda v, b, a: [v[0] >= a["scalar"]],
    # in place: outputs are the written view and the whole base it belongs to
    "sqrt_": in_place_with("sqrt_"), "exp_": in_place_with("exp_"), "neg_": in_place_with("neg_"),
    "abs_": in_place_with("abs_"), "sigmoid_": in_place_with("sigmoid_"), "relu_": in_place_with("relu_"),
    "zero_": in_place_with("zero_"), "pow_scalar_": in_place_with("pow_", "scalar"),
    "clamp_": lambda v, b, a: [v[0].clamp_(a.get("min"), a.get("max")), b[0]],
    "addcmul_": lambda v, b, a: [v[0].addcmul_(v[1], v[2], value=a["value"]), b[0]],
    "addcdiv_": lambda v, b, a: [v[0].addcdiv_(v[1], v[2], value=a["value"]), b[0]],
    "lerp_": in_place_with("lerp_", "weight"),
    "addcmul": lambda v, b, a: [torch.addcmul(v[0], v[1], v[2], value=a["value"])],
    "addcdiv": lambda v, b, a: [torch.addcdiv(v[0], v[1], v[2], value=a["value"])],
    "lerp": lambda v, b, a: [torch.lerp(v[0], v[1], a["weight"])],
    "add_out": out_form(torch.add), "mul_out": out_form(torch.mul), "div_out": out_form(torch.div),
    "sqrt_out": out_form(torch.sqrt), "exp_out": out_form(torch.exp), "matmul_out": out_form(torch.matmul),
    "addcmul_out": lambda v, b, a: [torch.addcmul(v[1], v[2], v[3], value=a["value"], out=v[0]), b[0]],
    "clamp_out": lambda v, b, a: [torch.clamp(v[1], a.get("min"), a.get("max"), out=v[0]), b[0]],
    "where_out": out_form(torch.where),
    "add_": in_place("add_", False), "sub_": in_place("sub_", False),
    "mul_": in_place("mul_", False), "div_": in_place("div_", False),
    "add_scalar_": in_place("add_", True), "sub_scalar_": in_place("sub_", True),
    "mul_scalar_": in_place("mul_", True), "div_scalar_": in_place("div_", True),
    # unary
    "sqrt": lambda v, b, a: [torch.sqrt(v[0])],
    "rsqrt": lambda v, b, a: [torch.rsqrt(v[0])],
    "exp": lambda v, b, a: [torch.exp(v[0])],
    "log": lambda v, b, a: [torch.log(v[0])],
    "neg": lambda v, b, a: [torch.neg(v[0])],
    "abs": lambda v, b, a: [torch.abs(v[0])],
    "tanh": lambda v, b, a: [torch.tanh(v[0])],
    "sigmoid": lambda v, b, a: [torch.sigmoid(v[0])],
    "relu": lambda v, b, a: [torch.relu(v[0])],
    "gelu": lambda v, b, a: [gelu(v[0], a["approximate"])],
    "silu": lambda v, b, a: [F.silu(v[0])],
    "square": lambda v, b, a: [torch.square(v[0])],
    "erf": lambda v, b, a: [torch.erf(v[0])],
    # selection
    "clamp": lambda v, b, a: [torch.clamp(v[0], a.get("min"), a.get("max"))],
    "where": lambda v, b, a: [torch.where(v[0], v[1], v[2])],
    "masked_fill": lambda v, b, a: [v[0].masked_fill(v[1], a["value"])],
    # reductions
    "sum": reduction(lambda x, a: x.sum(), lambda x, d, a: x.sum(d, keepdim=a["keepdim"])),
    "mean": reduction(lambda x, a: x.mean(), lambda x, d, a: x.mean(d, keepdim=a["keepdim"])),
    "prod": reduction(lambda x, a: x.prod(), lambda x, d, a: x.prod(d, keepdim=a["keepdim"])),
    "amax": reduction(lambda x, a: x.amax(), lambda x, d, a: x.amax(d, keepdim=a["keepdim"])),
    "amin": reduction(lambda x, a: x.amin(), lambda x, d, a: x.amin(d, keepdim=a["keepdim"])),
    "any": reduction(lambda x, a: x.any(), lambda x, d, a: x.any(d, keepdim=a["keepdim"])),
    "all": reduction(lambda x, a: x.all(), lambda x, d, a: x.all(d, keepdim=a["keepdim"])),
    "var": reduction(lambda x, a: torch.var(x, None, correction=a["correction"]),
                     lambda x, d, a: torch.var(x, d, correction=a["correction"], keepdim=a["keepdim"])),
    "vector_norm": reduction(lambda x, a: torch.linalg.vector_norm(x, float(a["ord"])),
                             lambda x, d, a: torch.linalg.vector_norm(x, float(a["ord"]), d, keepdim=a["keepdim"])),
    "argmax": reduction(lambda x, a: x.argmax(), lambda x, d, a: x.argmax(d, keepdim=a["keepdim"])),
    "argmin": reduction(lambda x, a: x.argmin(), lambda x, d, a: x.argmin(d, keepdim=a["keepdim"])),
    "max": lambda v, b, a: [v[0].max()],
    "min": lambda v, b, a: [v[0].min()],
    "max_dim": pair("max"),
    "min_dim": pair("min"),
    "softmax": lambda v, b, a: [torch.softmax(v[0], a["dim"])],
    "log_softmax": lambda v, b, a: [torch.log_softmax(v[0], a["dim"])],
    "attention_softmax": lambda v, b, a: [attention_softmax(v[0], a["scale"], a["causal"])],
    "scaled_dot_product_attention_packed": lambda v, b, a: [scaled_dot_product_attention(
        *(v[0].select(-3, i).transpose(-3, -2) for i in range(3)), a["causal"], None).transpose(-3, -2)],
    "scaled_dot_product_attention": lambda v, b, a: [scaled_dot_product_attention(v[0], v[1], v[2], a["causal"], a.get("scale"))],
    "scaled_dot_product_attention_masked": lambda v, b, a: [scaled_dot_product_attention_masked(v[0], v[1], v[2], v[3], a.get("scale"))],
    "layer_norm": lambda v, b, a: [F.layer_norm(v[0], v[0].shape[-a["dims"]:], *v[1:], eps=a["eps"])],
    "rms_norm": lambda v, b, a: [rms_norm(v[0], a["dims"], v[1] if len(v) > 1 else None, a["eps"])],
    # structure
    "cat": lambda v, b, a: [torch.cat(v, a["dim"])],
    "stack": lambda v, b, a: [torch.stack(v, a["dim"])],
    "index_select": lambda v, b, a: [torch.index_select(v[0], a["dim"], v[1])],
    "index_add": lambda v, b, a: [torch.index_add(v[0], a["dim"], v[1], v[2])],
    "flip": lambda v, b, a: [torch.flip(v[0], a["dims"])],
    "roll": lambda v, b, a: [torch.roll(v[0], a["shifts"], a["dims"])],
    "repeat": lambda v, b, a: [v[0].repeat(*a["repeats"])],
    "repeat_interleave": lambda v, b, a: [torch.repeat_interleave(v[0], a["repeats"], a.get("dim"))],
    "sort": lambda v, b, a: list(torch.sort(v[0], stable=True, dim=a["dim"], descending=a["descending"])),
    "argsort": lambda v, b, a: [torch.sort(v[0], stable=True, dim=a["dim"], descending=a["descending"]).indices],
    "topk": lambda v, b, a: list(torch.topk(v[0], a["k"], a["dim"], largest=a["largest"])),
    "gather": lambda v, b, a: [torch.gather(v[0], a["dim"], v[1])],
    "scatter_add": lambda v, b, a: [torch.scatter_add(v[0], a["dim"], v[1], v[2])],
    "scatter_value": lambda v, b, a: [torch.scatter(v[0], a["dim"], v[1], a["value"])],
    "matmul": lambda v, b, a: [torch.matmul(v[0], v[1])],
    "addmm": lambda v, b, a: [torch.addmm(v[0], v[1], v[2], beta=a.get("beta", 1), alpha=a.get("alpha", 1))],
    "triu": lambda v, b, a: [torch.triu(v[0], a["diagonal"])],
    "tril": lambda v, b, a: [torch.tril(v[0], a["diagonal"])],
    "reshape": lambda v, b, a: [v[0].reshape(a["shape"])],
    "flatten": lambda v, b, a: [v[0].flatten(a["start"], a["end"])],
    "permute": lambda v, b, a: [v[0].permute(a["dims"])],
    "contiguous": lambda v, b, a: [v[0].contiguous()],
    "clone": lambda v, b, a: [v[0].clone()],
    "zeros_like": lambda v, b, a: [torch.zeros_like(v[0])],
    "ones_like": lambda v, b, a: [torch.ones_like(v[0])],
    "full_like": lambda v, b, a: [torch.full_like(v[0], a["value"])],
    "view": lambda v, b, a: [v[0].view(a["shape"])],
    "transpose": lambda v, b, a: [v[0].transpose(a["dim0"], a["dim1"])],
    "expand": lambda v, b, a: [v[0].expand(a["shape"])],
    "slice": lambda v, b, a: [v[0][(slice(None),) * (a["dim"] % v[0].dim()) + (slice(a["start"], a["end"], a["step"]),)]],
    "select": lambda v, b, a: [v[0].select(a["dim"], a["index"])],
    "index": lambda v, b, a: [v[0][index_tuple(a, v)]],
    "setitem": setitem,
    # torch.index_put takes no None in Python; ATen's op does (a dim left whole).
    "index_put": lambda v, b, a: [torch.ops.aten.index_put(v[0], [None if i is None else v[i["t"]] for i in a["indices"]],
                                                           v[-1], a["accumulate"])],
    "nonzero": lambda v, b, a: [torch.nonzero(v[0])],
    # torch 1.13's masked_select backward fills a strided input's gradient in memory order (its
    # masked_scatter_ on a non-contiguous tensor), so the reference takes the input contiguous:
    # the same values, and the gradient in the elements' row-major order.
    "masked_select": lambda v, b, a: [torch.masked_select(v[0].contiguous(), v[1])],
    "masked_scatter": lambda v, b, a: [v[0].masked_scatter(v[1], v[2])],
    "take": lambda v, b, a: [torch.take(v[0], v[1])],
    "unsqueeze": lambda v, b, a: [v[0].unsqueeze(a["dim"])],
    "squeeze": lambda v, b, a: [v[0].squeeze() if a.get("dim") is None else v[0].squeeze(a["dim"])],
    "to": lambda v, b, a: [v[0].to(DTYPES[a["dtype"]])],
}


def save(path, t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy().view(np.uint16)
    else:
        arr = t.numpy()
    np.save(path, arr)


def attention_softmax(x, scale, causal):
    """softmax(scale·x) over the last dim, with PyTorch's is_causal mask (upper-left triangle)."""
    s = x * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1)


def scaled_dot_product_attention(q, k, v, causal, scale):
    """torch.nn.functional.scaled_dot_product_attention (no mask, no dropout), which torch 1.13 lacks."""
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    return attention_softmax(q @ k.transpose(-2, -1), scale, causal) @ v


def scaled_dot_product_attention_masked(q, k, v, mask, scale):
    """scaled_dot_product_attention with attn_mask, as PyTorch >= 2.5's math path computes it: a bool
    mask fills -inf where false, any other is added; rows with every key masked give zeros."""
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    p = torch.softmax(s, -1).masked_fill(torch.isneginf(s).all(-1, keepdim=True), 0)
    return p @ v


def rms_norm(x, dims, weight, eps):
    """torch.nn.functional.rms_norm, which torch 1.13 lacks."""
    y = x * torch.rsqrt(x.pow(2).mean(tuple(range(-dims, 0)), keepdim=True) + eps)
    return y * weight if weight is not None else y


def upcast_dtype(views, error):
    """The half dtype to compute in float32 for, if `error` is torch lacking a half CPU kernel."""
    halves = {t.dtype for t in views if t.dtype in HALF_TYPES}
    lacks = "not implemented for 'Half'" in error or "not implemented for 'BFloat16'" in error
    return halves.pop() if lacks and len(halves) == 1 else None


def upstream_gradient(case, out):
    """The random gradient backward starts from: normal values of output 0's shape and dtype."""
    gen = torch.Generator()
    gen.manual_seed(zlib.crc32(f"{case['name']}#grad".encode()))
    return torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.dtype)


def registered(reference):
    """A unary op tally's registry names by its torch function ("torch.nn.functional.softplus")."""
    fn = torch
    for part in reference.split(".")[1:]:
        fn = getattr(fn, part)
    return lambda v, b, a: [fn(v[0])]


def in_form(case, views, outs):
    """Output 0 as the form in args["form"] gives it (tally runs every unary and binary op of its
    tables as the function, the method, out= and in place): the function's value, except that out=
    and in place write into a tensor of input 0's dtype, which must take the result as torch's
    out= and in-place forms require (torch.can_cast)."""
    if (case["args"] or {}).get("form") not in ("out", "inplace"):
        return outs
    y, self = outs[0], views[0]
    if not torch.can_cast(y.dtype, self.dtype):
        raise RuntimeError(f"result type {y.dtype} can't be cast to the desired output type {self.dtype}")
    return [y.to(self.dtype)] + outs[1:]


def compute(case, bases, views, half, out_dir):
    """Outputs (and for gradient cases the bases' gradients); with `half`, in float32 copies."""
    args = case["args"]
    fn = OPS[case["op"]] if case["op"] in OPS else registered(args["reference"])
    if half is None:
        outs = fn(views, bases, args)
    else:
        # .float() is differentiable: gradients flow back to the half leaves, rounded once.
        up = [t.float() if t.dtype == half else t for t in views]
        outs = [o.to(half) if o.dtype == torch.float32 else o for o in fn(up, up, args)]
    outs = in_form(case, views, outs)
    if case["gradient"]:
        for b in bases:
            b.grad = None
        grad = upstream_gradient(case, outs[0])
        save(os.path.join(out_dir, f"{case['id']}_gout0.npy"), grad)
        outs[0].backward(grad)
    return outs


def run_case(case, out_dir):
    gen = torch.Generator()
    bases, views = [], []
    for k, spec in enumerate(case["inputs"]):
        gen.manual_seed(zlib.crc32(f"{case['name']}#{k}".encode()))
        base = draw(spec, gen)
        save(os.path.join(out_dir, f"{case['id']}_in{k}.npy"), base)
        if case["gradient"] and spec["requires_grad"]:
            base.requires_grad_(True)
        bases.append(base)
        views.append(make_view(base, spec))
    status, half = "ok", None
    try:
        if case["float32_reference"]:
            half = next(t.dtype for t in views if t.dtype in HALF_TYPES)
        else:
            outs = compute(case, bases, views, None, out_dir)
    except Exception as e:  # torch raises RuntimeError, TypeError, IndexError, ...
        error = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        if "invalid combination of arguments" in error or "unexpected keyword" in error:
            return {"status": "harness_error", "error": error}  # this script called torch wrongly
        half = upcast_dtype(views, error) if not case["op"].endswith("_") else None
        if half is None:
            return {"status": "error", "error": error}
    if half is not None:
        outs = compute(case, bases, views, half, out_dir)
        status = "upcast"
    for k, t in enumerate(outs):
        save(os.path.join(out_dir, f"{case['id']}_out{k}.npy"), t)
    result = {"status": status,
              "outputs": [{"dtype": str(t.dtype).replace("torch.", ""), "strides": list(t.stride())} for t in outs]}
    if case["gradient"]:
        result["grads"] = []
        for k, b in enumerate(bases):
            if b.grad is None:
                result["grads"].append(None)
                continue
            save(os.path.join(out_dir, f"{case['id']}_grad{k}.npy"), b.grad)
            result["grads"].append({"dtype": str(b.grad.dtype).replace("torch.", "")})
    return result


def main():
    cases_path, out_dir = sys.argv[1], sys.argv[2]
    with open(cases_path) as f:
        cases = json.load(f)
    results = {case["id"]: run_case(case, out_dir) for case in cases}
    tmp = os.path.join(out_dir, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(results, f)
    os.replace(tmp, os.path.join(out_dir, "results.json"))


if __name__ == "__main__":
    main()
