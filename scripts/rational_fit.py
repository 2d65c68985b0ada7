"""Shared by scripts/fit_erf.py and scripts/fit_tanh.py: a polynomial evaluated as tally's vector
kernels do (Horner, every step rounded to float32 when the coefficients are numpy float32)."""


def horner32(coefficients, t):
    """coefficients[0] + coefficients[1]·t + ... (lowest power first), evaluated from the highest."""
    r = coefficients[-1]
    for c in coefficients[-2::-1]:
        r = r * t + c
    return r
