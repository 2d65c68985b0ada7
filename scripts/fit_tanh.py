"""Fit the rational tanh of tally's vector kernels (kernels::tanh in tally/kernels/cpu/vec_math.h):
tanh(x) ~ x * P(x^2) / Q(x^2) on [0, 9] (odd, so the same on [-9, 0]; beyond 9 tanh rounds to 1 in
float32), P of degree 6 and Q of degree 3 in x^2 with P(0) = Q(0) = 1 (tanh x ~ x near 0), by least
squares on the relative error with Sanathanan-Koerner reweighting, in u = x^2 / 81 so that the
columns stay comparable. Prints the coefficients as float32 literals and the largest error of the
float32 evaluation (Horner, clamped input and output, as the kernel does) over a dense grid, against
numpy's tanh in float64, relative and in float32 ulp.
Run with the system interpreter: /usr/bin/python3 scripts/fit_tanh.py"""
import numpy as np

from rational_fit import horner32

LIMIT = 9.0
SCALE = LIMIT * LIMIT
xs = np.concatenate([np.linspace(1e-4, LIMIT, 40000), np.geomspace(1e-6, 1e-4, 200)])
f = np.tanh(xs)
u = xs * xs / SCALE
n_p, n_q = 7, 4
weight = np.ones_like(xs)
for _ in range(30):
    # x·P(u) − f·Q(u) = 0 with P(0) = Q(0) = 1: unknowns p1..p6, q1..q3.
    a = np.hstack([np.stack([xs * u**k for k in range(1, n_p)], 1), np.stack([-f * u**k for k in range(1, n_q)], 1)])
    w = (weight / f)[:, None]
    sol, *_ = np.linalg.lstsq(a * w, (f - xs) * w[:, 0], rcond=None)
    p, q = np.concatenate([[1.0], sol[: n_p - 1]]), np.concatenate([[1.0], sol[n_p - 1 :]])
    weight = 1 / np.abs(sum(q[k] * u**k for k in range(n_q)))

p32 = [np.float32(p[k] / SCALE**k) for k in range(n_p)]  # back to powers of x²
q32 = [np.float32(q[k] / SCALE**k) for k in range(n_q)]


def tanh32(x):
    x = np.clip(np.float32(x), np.float32(-LIMIT), np.float32(LIMIT))
    tt = x * x
    return np.clip(x * horner32(p32, tt) / horner32(q32, tt), np.float32(-1), np.float32(1))


grid = np.concatenate([np.linspace(-12, 12, 600001, dtype=np.float32), np.geomspace(1e-30, 1e-3, 2000).astype(np.float32)])
ref = np.tanh(grid.astype(np.float64))
got = tanh32(grid).astype(np.float64)
rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)
ulp = np.abs(got - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
print("P (x^0 .. x^12, even powers):", ", ".join(f"{c!r}f" for c in map(float, p32)))
print("Q (x^0 .. x^6, even powers):", ", ".join(f"{c!r}f" for c in map(float, q32)))
print(f"largest error in float32: {rel.max():.3g} relative, {ulp.max():.2f} ulp (at x = {grid[ulp.argmax()]})")
