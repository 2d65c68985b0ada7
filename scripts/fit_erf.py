"""Fit the rational erf of tally's vector kernels (kernels::erf in tally/kernels/cpu/vec_math.h):
erf(x) ~ x * P(x^2) / Q(x^2) on [0, 4] (odd, so the same on [-4, 0]; erf(4) rounds to 1 in float32),
P of degree 6 and Q of degree 4 in x^2 with Q(0) = 1, by least squares on the relative error with
Sanathanan-Koerner reweighting. Prints the coefficients as float32 literals and the largest relative
error of the float32 evaluation (Horner, as the kernel does) over a dense grid, against math.erf.
Run with the system interpreter: /usr/bin/python3 scripts/fit_erf.py"""
import math

import numpy as np

from rational_fit import horner32

xs = np.concatenate([np.linspace(1e-4, 4.0, 20000), np.geomspace(1e-6, 1e-4, 200)])
f = np.array([math.erf(x) for x in xs])
t = xs * xs
n_p, n_q = 7, 5
weight = np.ones_like(xs)
for _ in range(12):
    # x·P(t) − f·Q(t) = 0, Q's constant term 1: unknowns p0..p6, q1..q4.
    a = np.hstack([np.stack([xs * t**k for k in range(n_p)], 1), np.stack([-f * t**k for k in range(1, n_q)], 1)])
    w = (weight / f)[:, None]
    sol, *_ = np.linalg.lstsq(a * w, f * w[:, 0], rcond=None)
    p, q = sol[:n_p], np.concatenate([[1.0], sol[n_p:]])
    weight = 1 / np.abs(sum(q[k] * t**k for k in range(n_q)))

p32, q32 = [np.float32(c) for c in p], [np.float32(c) for c in q]


def erf32(x):
    x = np.clip(np.float32(x), np.float32(-4), np.float32(4))
    tt = x * x
    return x * horner32(p32, tt) / horner32(q32, tt)


grid = np.concatenate([np.linspace(-6, 6, 400001, dtype=np.float32), np.geomspace(1e-30, 1e-3, 2000).astype(np.float32)])
ref = np.array([math.erf(float(v)) for v in grid])
rel = np.abs(erf32(grid).astype(np.float64) - ref) / np.maximum(np.abs(ref), 1e-30)
print("P (t^0 .. t^6):", ", ".join(f"{c!r}f" for c in map(float, p32)))
print("Q (t^0 .. t^4):", ", ".join(f"{c!r}f" for c in map(float, q32)))
print(f"largest relative error in float32: {rel.max():.3g} at x = {grid[rel.argmax()]}")
