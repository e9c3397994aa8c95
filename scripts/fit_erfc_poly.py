"""Refits the polynomials of erfc between 0.5 and 1/0.35 (src/ir/float_math_erf_atan.h,
erfc_exponent): on each interval [a, b] around m, log(erfc(x)) + x^2 = c0 + c1 w + P(w) for
w = x - m, c0 to 2^-106 as two doubles, c1 the derivative at m rounded to a double (c1 w is
taken exactly as a pair of doubles), and P = p1 w + ... + pn w^n fitted by least squares on
Chebyshev nodes at 60 digits (p1 absorbs c1's rounding). Prints each interval's worst absolute
error with the coefficients rounded to f64 (below 2^-59: a sixteenth of an ulp of erfc), then
c0, its low part, c1 and p1 .. pn. Run once by hand (needs mpmath); not part of the build.

    python3 scripts/fit_erfc_poly.py"""
import mpmath as mp

# (a, b, m, terms of P): erfc_exponent's three intervals.
INTERVALS = [(0.5, 1.25, 0.875, 14), (1.25, 2.0, 1.625, 12), (2.0, 1 / 0.35, 2.375, 13)]


def log_erfc_plus_square(x):
    return mp.log(mp.erfc(x)) + x * x


def fit(a, b, m, terms, nodes=300):
    c0 = log_erfc_plus_square(m)
    c0_hi = float(c0)
    c0_lo = float(c0 - c0_hi)
    c1 = float(mp.diff(log_erfc_plus_square, m))
    ws = [(b - a) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes) + (a + b) / 2 - m for k in range(nodes)]
    lhs, rhs = mp.matrix(nodes, terms), mp.matrix(nodes, 1)
    for i, w in enumerate(ws):
        for j in range(terms):
            lhs[i, j] = w ** (j + 1)
        rhs[i] = log_erfc_plus_square(m + w) - c0_hi - c0_lo - c1 * w
    p = [float(v) for v in mp.lu_solve(lhs.T * lhs, lhs.T * rhs)]
    return c0_hi, c0_lo, c1, p


def worst_error(a, b, m, c0_hi, c0_lo, c1, p, points=4000):
    worst = mp.mpf(0)
    for k in range(points + 1):
        w = a - m + (b - a) * mp.mpf(k) / points
        v = mp.mpf(0)
        for c in reversed(p):
            v = (v + c) * w
        worst = max(worst, abs(c0_hi + mp.mpf(c0_lo) + c1 * w + v - log_erfc_plus_square(m + w)))
    return worst


def main():
    mp.mp.dps = 60
    for a, b, m, terms in INTERVALS:
        a, b, m = mp.mpf(a), mp.mpf(b), mp.mpf(m)
        c0_hi, c0_lo, c1, p = fit(a, b, m, terms)
        err = worst_error(a, b, m, c0_hi, c0_lo, c1, p)
        print(f"[{mp.nstr(a, 8)}, {mp.nstr(b, 8)}] around {mp.nstr(m, 8)}: worst absolute error "
              f"{mp.nstr(err, 5)} (2^{mp.nstr(mp.log(err, 2), 4)})")
        for c in [c0_hi, c0_lo, c1] + p:
            print(f"  {c.hex()}  # {c!r}")


if __name__ == "__main__":
    main()
