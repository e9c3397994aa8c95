"""Refits the odd polynomial of f64 tanh below 0.625 (src/ir/float_math.h, tanh_f64):
tanh(x) = x + x z P(z), z = x^2, P of degree 11, by least squares on Chebyshev nodes weighted
by each point's share of the result, at 60 digits; prints the worst relative error of P with
its coefficients rounded to f64, then the coefficients (highest degree last). Run once by hand
(needs mpmath: pip install mpmath); not part of the build.

    python3 scripts/fit_tanh_poly.py [--edge 0.625] [--terms 12]"""
import argparse

import mpmath as mp


def fit(edge, terms, nodes=400):
    top = edge * edge

    def p_exact(z):  # (tanh(x) / x - 1) / z, -1/3 at 0
        if z == 0:
            return mp.mpf(-1) / 3
        x = mp.sqrt(z)
        return (mp.tanh(x) / x - 1) / z

    zs = [top / 2 * (1 - mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes)) for k in range(nodes)]
    a, b = mp.matrix(nodes, terms), mp.matrix(nodes, 1)
    for i, z in enumerate(zs):
        # P's error reaches the result scaled by z / (tanh(x) / x); a floor keeps z near 0 in.
        w = max(z / (mp.tanh(mp.sqrt(z)) / mp.sqrt(z)) if z > 0 else 0, top * 1e-3)
        for j in range(terms):
            a[i, j] = w * z ** j
        b[i] = w * p_exact(z)
    return [float(c) for c in mp.lu_solve(a.T * a, a.T * b)]


def worst_relative_error(coefs, edge, points=2000):
    worst = mp.mpf(0)
    for k in range(1, points + 1):
        x = edge * mp.mpf(k) / points
        z, p = x * x, mp.mpf(0)
        for c in reversed(coefs):
            p = p * z + mp.mpf(c)
        worst = max(worst, abs((x + x * z * p) / mp.tanh(x) - 1))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edge", type=float, default=0.625)
    ap.add_argument("--terms", type=int, default=12)
    args = ap.parse_args()
    mp.mp.dps = 60
    coefs = fit(mp.mpf(args.edge), args.terms)
    err = worst_relative_error(coefs, mp.mpf(args.edge))
    print(f"worst relative error {mp.nstr(err, 5)} (2^{mp.nstr(mp.log(err, 2), 4)})")
    for c in coefs:
        print(repr(c))


if __name__ == "__main__":
    main()
