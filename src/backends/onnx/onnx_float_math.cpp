// scanc's own erf, erfc, atan (src/ir/float_math_erf_atan.h), sin, cos and tanh (float_math.h)
// as ONNX arithmetic, by the reference's formulas and coefficients, where ONNX or onnxruntime
// lacks them: ONNX has no Erfc (1 - Erf is 0 once erf rounds to 1, from 3.9 on, where erfc is
// 3e-8), onnxruntime has no f64 Erf or Atan, its f64 Sin and Cos are hundreds of ulps off
// (sin(pi) is -0 there) and its Tanh is far off on subnormals. Narrower floats compute in f64
// and round once, as the reference does. What differs from the reference: the exponentials are
// the runtime's Exp (erfc's of a rounded exponent s, times 1 + its exact error e), where the
// reference reduces them itself; a few f64 ulps instead of one.
#include "onnx_graph.h"

#include <cmath>
#include <numbers>

#include "../../ir/float_math_erf_atan.h"

namespace scanc::onnx_export {

namespace {

// Graph arithmetic in f64, the operations named as in C.
class F64Graph {
public:
    explicit F64Graph(GraphWriter& g) : g_(g) {}
    std::string c(double v) { return g_.scalar(DType::F64, v, 0, true); }
    std::string add(const std::string& a, const std::string& b) { return g_.op("Add", {a, b}); }
    std::string sub(const std::string& a, const std::string& b) { return g_.op("Sub", {a, b}); }
    std::string mul(const std::string& a, const std::string& b) { return g_.op("Mul", {a, b}); }
    std::string div(const std::string& a, const std::string& b) { return g_.op("Div", {a, b}); }
    std::string less(const std::string& a, const std::string& b) { return g_.op("Less", {a, b}); }
    std::string select(const std::string& cond, const std::string& a, const std::string& b) {
        return g_.op("Where", {cond, a, b});
    }
    std::string op(const char* name, const std::string& a) { return g_.op(name, {a}); }
    std::string op(const char* name, const std::string& a, const std::string& b) { return g_.op(name, {a, b}); }
    // a + b = sum + err exactly (Knuth's two-sum; onnxruntime neither fuses nor reassociates).
    void two_sum(const std::string& a, const std::string& b, std::string& sum, std::string& err) {
        sum = add(a, b);
        const std::string bb = sub(sum, a);
        err = add(sub(a, sub(sum, bb)), sub(b, bb));
    }
    // k[0] + z (k[1] + z (... + z k[N-1])), in that order.
    template <std::size_t N> std::string horner(const double (&k)[N], const std::string& z) {
        std::string r = c(k[N - 1]);
        for (int i = static_cast<int>(N) - 2; i >= 0; --i) r = add(c(k[i]), mul(z, r));
        return r;
    }
    std::string sign_of(const std::string& x) { return onnx_export::sign_of(g_, x, DType::F64); }
    // copysign(v, x) for v >= 0, NaN where x is: the sign by a product, v (which may be 0)
    // through Where's false branch (onnxruntime gives +0 for a -0 in its true branch).
    std::string copysign(const std::string& v, const std::string& x) {
        return select(op("IsNaN", x), x, mul(v, sign_of(x)));
    }

private:
    GraphWriter& g_;
};

// erf_near_ratio: y with erf(a) = a + a y below kErfNear.
std::string near_ratio(F64Graph& f, const std::string& a) {
    const std::string z = f.mul(a, a), p = f.horner(kErfNearP, z), q = f.mul(z, f.horner(kErfNearQ, z));
    return f.sub(p, f.div(f.mul(p, q), f.add(f.c(1.0), q)));
}

// erfc(a) for a = |x| clamped to [0.5, 28] (erfc_exponent's intervals, polynomials and far
// rational): exp(-a^2 + c0 + c0_lo + c1 w + delta) / d, with a = h + l split so that h^2 is
// exact (Veltkamp: h has 26 bits) and a^2 - h^2 = l (a + h).
std::string erfc_tail(F64Graph& f, const std::string& x) {
    const std::string a = f.op("Min", f.op("Max", f.op("Abs", x), f.c(0.5)), f.c(28.0));
    const std::string first = f.less(a, f.c(kErfcSplit[0])), second = f.less(a, f.c(kErfcSplit[1]));
    const std::string far = f.op("GreaterOrEqual", a, f.c(kErfcFar));
    auto pick = [&](const double (&k)[3]) { return f.select(first, f.c(k[0]), f.select(second, f.c(k[1]), f.c(k[2]))); };
    const std::string w = f.sub(a, pick(kErfcCentre));
    std::string p = f.mul(pick(kErfcPoly[13]), w);
    for (int k = 12; k >= 0; --k) p = f.mul(f.add(p, pick(kErfcPoly[k])), w);
    const std::string d = f.select(far, a, f.c(1.0)), rd = f.div(f.c(1.0), d), s = f.mul(rd, rd);
    const std::string delta = f.select(far, f.div(f.horner(kErfcFarR, s), f.add(f.c(1.0), f.mul(s, f.horner(kErfcFarS, s)))), p);
    const std::string c0 = f.select(far, f.c(kErfcFarC0), pick(kErfcC0));
    const std::string c0_lo = f.select(far, f.c(0.0), pick(kErfcC0Lo)), c1 = f.select(far, f.c(0.0), pick(kErfcC1));
    const std::string big = f.mul(a, f.c(134217729.0));  // 2^27 + 1
    const std::string h = f.sub(big, f.sub(big, a)), l = f.sub(a, h);
    std::string v, v_err, sum, sum_err;
    f.two_sum(f.op("Neg", f.mul(h, h)), c0, v, v_err);
    const std::string rest = f.sub(f.add(f.add(f.add(v_err, c0_lo), f.mul(c1, w)), delta), f.mul(l, f.add(a, h)));
    f.two_sum(v, rest, sum, sum_err);
    return f.div(f.mul(f.op("Exp", sum), f.add(f.c(1.0), sum_err)), d);
}

}  // namespace

// sin_cos_reduced and trig_reduced (src/ir/float_math.h) for |x| <= kTrigReducedLimitF64: k =
// round(x 2/pi), x - k pi/2 = y0 + y1 exactly enough, fdlibm's kernels on the pair, quadrant
// (k + turns) mod 4; sin is x itself below 2^-26 (which keeps -0). Beyond the limit, and at inf
// and NaN, the runtime's Sin or Cos, as the reference takes the C library's there.
std::string sin_cos_f64(GraphWriter& g, const std::string& x, bool cosine) {
    F64Graph f(g);
    const std::string k = f.sub(f.add(f.mul(x, f.c(kTwoOverPi)), f.c(kRoundToInteger)), f.c(kRoundToInteger));
    std::string s1, e1, s2, e2, y0, y1;
    f.two_sum(f.sub(x, f.mul(k, f.c(kPio2F64[0]))), f.op("Neg", f.mul(k, f.c(kPio2F64[1]))), s1, e1);
    f.two_sum(s1, f.op("Neg", f.mul(k, f.c(kPio2F64[2]))), s2, e2);
    f.two_sum(s2, f.sub(f.add(e1, e2), f.mul(k, f.c(kPio2F64[3]))), y0, y1);
    const std::string z = f.mul(y0, y0), v = f.mul(z, y0), w = f.mul(z, z);
    const std::string s = f.sub(y0, f.sub(f.sub(f.mul(z, f.sub(f.mul(f.c(0.5), y1), f.mul(v, f.horner(kSinF64, z)))), y1),
                                          f.mul(v, f.c(kSinF64S1))));
    const std::string rc = f.add(f.mul(z, f.horner(kCosF64Low, z)), f.mul(f.mul(w, w), f.horner(kCosF64High, z)));
    const std::string hz = f.mul(f.c(0.5), z), one_minus = f.sub(f.c(1.0), hz);
    const std::string c = f.add(one_minus, f.add(f.sub(f.sub(f.c(1.0), one_minus), hz), f.sub(f.mul(z, rc), f.mul(y0, y1))));
    // The quadrant as an integer; |k| <= 2^20 * 2/pi within the limit, and 0 beyond it (the
    // runtime's value is taken there), so that the cast is always defined.
    const std::string a = f.op("Abs", x), within = f.op("LessOrEqual", a, f.c(kTrigReducedLimitF64));
    const std::string k_int = g.cast(f.select(within, k, f.c(0.0)), DType::I64);
    auto* quadrant_node = g.add("Mod", {g.op("Add", {k_int, g.scalar(DType::I64, 0, cosine ? 1 : 0, false)}),
                                        g.scalar(DType::I64, 0, 4, false)},
                                {g.fresh("quadrant")});
    const std::string quadrant = quadrant_node->output(0);
    auto quadrant_at_least = [&](std::int64_t q) { return g.op("GreaterOrEqual", {quadrant, g.scalar(DType::I64, 0, q, false)}); };
    const std::string odd = g.op("Equal", {g.op("Mod", {quadrant, g.scalar(DType::I64, 0, 2, false)}), g.scalar(DType::I64, 0, 1, false)});
    // The quadrant's sign by a product, and r (which may be -0) through Where's false branches.
    std::string r = f.mul(f.select(odd, c, s), f.select(quadrant_at_least(2), f.c(-1.0), f.c(1.0)));
    if (!cosine) r = f.select(f.op("GreaterOrEqual", a, f.c(0x1p-26)), r, x);
    return f.select(f.op("Greater", a, f.c(kTrigReducedLimitF64)), f.op(cosine ? "Cos" : "Sin", x), r);
}

// tanh_f64 and tanh_f32 (float_math.h): at f64 x + x^3 P(x^2) below kTanhF64Near, and 1 - 2 /
// (e^2|x| + 1) above (the reference's expm1(2|x|) + 2); f32 (and narrower) in f64, x - x^3/3
// below 2^-10 and (1 - e) / (1 + e), e = e^-2|x|, above, rounded once; then x's sign. The
// runtime's Exp for the reference's: f32 within an ulp of it, f64 within a few. (ONNX's Tanh
// is 81 ulps off on f32 subnormals and reaches 1 early.)
std::string tanh_of(GraphWriter& g, const std::string& x_in, DType t) {
    F64Graph f(g);
    const std::string x = t == DType::F64 ? x_in : g.cast(x_in, DType::F64);
    const std::string a = f.op("Abs", x), two_a = f.mul(f.c(2.0), a);
    std::string v;
    if (t == DType::F64) {
        const std::string z = f.mul(a, a), near = f.add(a, f.mul(a, f.mul(z, f.horner(kTanhF64, z))));
        const std::string far = f.sub(f.c(1.0), f.div(f.c(2.0), f.add(f.op("Exp", two_a), f.c(1.0))));
        v = f.select(f.less(a, f.c(kTanhF64Near)), near, far);
    } else {
        const std::string near = f.sub(a, f.mul(f.mul(a, f.mul(a, a)), f.c(1.0 / 3.0)));
        const std::string e = f.op("Exp", f.op("Neg", two_a));
        v = f.select(f.less(a, f.c(0x1p-10)), near, f.div(f.sub(f.c(1.0), e), f.add(f.c(1.0), e)));
    }
    const std::string r = f.copysign(v, x);
    return t == DType::F64 ? r : g.cast(r, t);
}

// A cast to f16 or bf16 rounded once, as the reference rounds it. onnxruntime converts through
// f32, which rounds a second time wherever its first rounding lands on a midpoint of the
// narrow dtype (f16(1 + 2^-11 + 2^-40) came out 1; 65520 - 1e-9 inf): sources that f32 does
// not hold exactly (f64, and i32 and i64 into bf16; integers convert to f64 first, as in the
// reference) are rounded to the narrow dtype's grid in f64 first, (|x| + C) - C with C = 1.5 x
// 2^52 q for the spacing q of |x|'s binade (its exponent from Log, corrected by exact powers of
// two), and the cast is then exact.
std::string cast_rounded_once(GraphWriter& g, const std::string& x, DType from, DType to) {
    const bool f16 = to == DType::F16;
    const bool double_rounds = from == DType::F64 || (!f16 && (from == DType::I32 || from == DType::I64));
    if (!double_rounds) return g.cast(x, to);
    F64Graph f(g);
    const int digits = f16 ? 11 : 8, min_exponent = f16 ? -14 : -126, max_exponent = f16 ? 15 : 127;
    const std::string v = from == DType::F64 ? x : g.cast(x, DType::F64);
    const std::string a = f.op("Abs", v);
    // e = floor(log2 |v|) within [min_exponent, max_exponent + 1] (below: the subnormals'
    // fixed spacing; above: rounds to inf)
    const std::string clamped = f.op("Min", f.op("Max", a, f.c(std::ldexp(1.0, min_exponent))), f.c(std::ldexp(1.0, max_exponent + 1)));
    std::string e = f.op("Floor", f.mul(f.op("Log", clamped), f.c(1.0 / std::numbers::ln2)));
    auto power = [&](const std::string& k) { return f.op("Pow", f.c(2.0), k); };
    e = f.sub(e, g.cast(f.op("Greater", power(e), clamped), DType::F64));
    e = f.add(e, g.cast(f.op("LessOrEqual", power(f.add(e, f.c(1.0))), clamped), DType::F64));
    const std::string q = power(f.sub(e, f.c(digits - 1.0))), big = f.mul(q, f.c(0x1.8p52));
    const std::string r = f.sub(f.add(a, big), big);
    return g.cast(f.copysign(r, v), to);
}

// atan_f64: fdlibm's reduction of |x| to t = num / den, |t| <= 7/16, atan(|x|) = atan(c) +
// atan(t) with atan(c) = hi + lo, then x's sign. (The reference's pairs num_err and den_err are
// for atan2 only.)
std::string atan_f64(GraphWriter& g, const std::string& x) {
    F64Graph f(g);
    const std::string n = f.op("Abs", x);
    auto at_least = [&](int i) { return f.op("GreaterOrEqual", n, f.c(kAtanBound[i])); };
    const std::string r1 = at_least(0), r2 = at_least(1), r3 = at_least(2), r4 = at_least(3);
    const std::string minus_one = f.sub(n, f.c(1.0));
    const std::string num12 = f.select(r2, minus_one, f.sub(f.mul(f.c(2.0), n), f.c(1.0)));
    const std::string num34 = f.select(r4, f.c(-1.0), f.sub(n, f.c(1.5)));
    const std::string num = f.select(r1, f.select(r3, num34, num12), n);
    const std::string sum = f.add(f.select(r2, f.c(1.0), f.c(2.0)), n);  // n + 1 or 2 + n
    const std::string sum3 = f.add(f.c(1.0), f.add(n, f.mul(f.c(0.5), n)));  // 1 + 1.5 n
    const std::string den = f.select(r3, f.select(r4, n, sum3), f.select(r1, sum, f.c(1.0)));
    auto by_range = [&](const double (&k)[4]) {
        return f.select(r4, f.c(k[3]), f.select(r2, f.select(r3, f.c(k[2]), f.c(k[1])), f.select(r1, f.c(k[0]), f.c(0.0))));
    };
    const std::string t = f.div(num, den), z = f.mul(t, t), w = f.mul(z, z);
    const std::string poly = f.add(f.mul(z, f.horner(kAtanOdd, w)), f.mul(w, f.horner(kAtanEven, w)));
    const std::string r = f.sub(by_range(kAtanHi), f.sub(f.sub(f.mul(t, poly), by_range(kAtanLo)), t));
    return f.copysign(r, x);
}

// erf_from: a + a y below kErfNear (2/sqrt(pi) a near 0), 1 - erfc(a) from there, x's sign.
std::string erf_f64(GraphWriter& g, const std::string& x) {
    F64Graph f(g);
    const std::string a = f.op("Abs", x), an = f.op("Min", a, f.c(kErfNear));
    const std::string tiny = f.select(f.less(a, f.c(0x1p-1018)), f.mul(a, f.c(kTwoOverSqrtPi)),
                                      f.add(a, f.mul(a, f.c(kTwoOverSqrtPiLessOne))));
    const std::string near = f.select(f.less(a, f.c(0x1p-28)), tiny, f.add(an, f.mul(an, near_ratio(f, an))));
    const std::string e = f.select(f.less(a, f.c(kErfNear)), near, f.sub(f.c(1.0), erfc_tail(f, x)));
    return f.copysign(e, x);
}

// erfc_from: 1 - x - x y (1 - x exact as a pair) below 1/4, 0.5 - (x y + (x - 0.5)) to 0.5, the
// tail from there, and 2 - erfc(|x|) at or below -kErfNear.
std::string erfc_of(GraphWriter& g, const std::string& x_in, DType t) {
    F64Graph f(g);
    const std::string x = t == DType::F64 ? x_in : g.cast(x_in, DType::F64);
    const std::string an = f.op("Min", f.op("Abs", x), f.c(kErfNear)), xn = f.mul(an, f.sign_of(x));
    const std::string xy = f.mul(xn, near_ratio(f, an));
    std::string one_minus, one_minus_err;
    f.two_sum(f.c(1.0), f.op("Neg", xn), one_minus, one_minus_err);
    const std::string near = f.select(f.less(x, f.c(0.25)), f.add(one_minus, f.sub(one_minus_err, xy)),
                                      f.sub(f.c(0.5), f.add(xy, f.sub(xn, f.c(0.5)))));
    const std::string tail = erfc_tail(f, x);
    std::string e = f.select(f.less(x, f.c(0.5)), near, tail);
    e = f.select(f.op("LessOrEqual", x, f.c(-kErfNear)), f.sub(f.c(2.0), tail), e);
    e = f.select(f.op("IsNaN", x), x, e);
    return t == DType::F64 ? e : g.cast(e, t);
}

}  // namespace scanc::onnx_export
