#!/usr/bin/env python3
"""Fits the rational erf approximation of compiler/codegen/math_llvm.cpp.

erf(x) ~= x * P(x^2) / Q(x^2), Q(0) = 1, degrees 5 and 5 in t = x^2, on
[0, 4]: linearized least squares (P - f Q = 0 with f = erf(x)/x), weighted by
1 / (f Q) so that the residual is erf's relative error, and reweighted
(Lawson) towards the largest errors for 40 rounds. Prints the coefficients
(highest degree first, as math_llvm.cpp's poly() takes them) and the error
of a float32 evaluation over [-6, 6]. Needs numpy (Debian's /usr/bin/python3).
"""
from math import erf

import numpy as np

DEG_P, DEG_Q, X_MAX = 5, 5, 4.0


def fit():
    x = np.linspace(1e-6, X_MAX, 4000)
    f = np.vectorize(erf)(x) / x
    t = x * x
    w = np.ones_like(t)
    q = np.array([1.0])
    for _ in range(40):
        a = np.hstack([np.vstack([t**i for i in range(DEG_P + 1)]).T,
                       -f[:, None] * np.vstack([t**i for i in range(1, DEG_Q + 1)]).T])
        weight = w / (f * np.abs(np.polyval(q[::-1], t)))
        sol, *_ = np.linalg.lstsq(a * weight[:, None], f * weight, rcond=None)
        p, q = sol[:DEG_P + 1], np.concatenate([[1.0], sol[DEG_P + 1:]])
        err = np.abs(np.polyval(p[::-1], t) / np.polyval(q[::-1], t) - f) / f
        w = w * (1 + 10 * err / err.max())
    return p.astype(np.float32), q.astype(np.float32)


def evaluate(p, q, x):
    """The float32 evaluation math_llvm.cpp emits."""
    x = x.astype(np.float32)
    t = np.minimum(x * x, np.float32(16))
    def horner(c):
        y = c[-1]
        for k in c[-2::-1]:
            y = y * t + k
        return y
    r = x * horner(p) / horner(q)
    return np.where(np.abs(x) > np.float32(3.93), np.copysign(np.float32(1), x), r)


def main():
    p, q = fit()
    x = np.linspace(-6, 6, 2000001).astype(np.float32)
    ref = np.vectorize(erf)(x.astype(np.float64))
    err = np.abs(evaluate(p, q, x) - ref)
    print('P (highest degree first):', ', '.join(repr(float(c)) for c in p[::-1]))
    print('Q (highest degree first):', ', '.join(repr(float(c)) for c in q[::-1]))
    print('float32 max abs error %.3g, max relative error %.3g' %
          (err.max(), (err / np.maximum(np.abs(ref), 1e-30)).max()))


if __name__ == '__main__':
    main()
