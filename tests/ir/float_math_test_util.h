// The ulp distances and sweeps of the float_math tests (float_math_test.cpp,
// float_math_base_test.cpp, float_math_erf_atan_test.cpp): f32 against the C library's f64
// functions rounded to f32, f64 against its long double ones rounded to f64.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <type_traits>

namespace scanc::float_math_test {

// The reference of an f32 function: `f`, the C library's, in f64 and rounded to f32.
template <typename F>
auto rounded_from_f64(F f) {
    return [f](float x) { return static_cast<float>(f(static_cast<double>(x))); };
}

// Distance in units in the last place between two finite or infinite floats.
inline std::int64_t ulps_apart(float a, float b) {
    auto ordered = [](float f) {
        std::int32_t i;
        std::memcpy(&i, &f, 4);
        return i < 0 ? std::int64_t{INT32_MIN} - i : std::int64_t{i};
    };
    return std::llabs(ordered(a) - ordered(b));
}

// check(x) for every x within 64 representable values of each edge.
template <typename T, typename Check>
void check_around(std::initializer_list<T> edges, Check check) {
    for (T edge : edges) {
        T x = edge;
        for (int k = 0; k < 64; ++k) x = std::nextafter(x, T(-INFINITY));
        for (int k = 0; k < 128; ++k, x = std::nextafter(x, T(INFINITY))) check(x);
    }
}

// The largest distance in ulps of f(x) from ref(x) over every 4099th bit pattern (about a
// million floats of either sign, all exponents, NaNs left out) and every float within 64 ulps
// of each of `edges`; `worst_at` receives where it was.
template <typename F, typename R>
std::int64_t worst_ulps(F f, R ref, std::initializer_list<float> edges, float& worst_at) {
    std::int64_t worst = 0;
    auto check = [&](float x) {
        float a = f(x), b = ref(x);
        std::int64_t d = std::isnan(a) && std::isnan(b) ? 0 : std::isnan(a) || std::isnan(b) ? INT32_MAX : ulps_apart(a, b);
        if (d > worst) worst = d, worst_at = x;
    };
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFu; u += 4099) {
        float x;
        std::uint32_t bits = static_cast<std::uint32_t>(u);
        std::memcpy(&x, &bits, 4);
        if (!std::isnan(x)) check(x);
    }
    check_around(edges, check);
    return worst;
}

// The same for f64: distance in ulps, and the worst over 2^20 random bit patterns (NaNs left
// out), 2^20 draws from [lo, hi), and every double within 64 ulps of each of `edges`.
inline std::int64_t ulps_apart(double a, double b) {
    auto ordered = [](double d) {
        std::int64_t i;
        std::memcpy(&i, &d, 8);
        return i < 0 ? std::numeric_limits<std::int64_t>::min() - i : i;
    };
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<std::int64_t>::max();
    const std::int64_t x = ordered(a), y = ordered(b);
    return x > y ? x - y : y - x;
}

template <typename F, typename R>
std::int64_t worst_ulps_f64(F f, R ref, double lo, double hi, std::initializer_list<double> edges, double& worst_at) {
    std::int64_t worst = 0;
    auto check = [&](double x) {
        const std::int64_t d = ulps_apart(f(x), static_cast<double>(ref(static_cast<long double>(x))));
        if (d > worst) worst = d, worst_at = x;
    };
    std::mt19937_64 bits(7);
    std::uniform_real_distribution<double> draw(lo, hi);
    for (int k = 0; k < (1 << 20); ++k) {
        double x;
        const std::uint64_t b = bits();
        std::memcpy(&x, &b, 8);
        if (!std::isnan(x)) check(x);
        check(draw(bits));
    }
    check_around(edges, check);
    return worst;
}

// A function of two operands (atan2) against `ref`, both at T: the worst distance in ulps over
// 2^20 pairs of random bit patterns (NaNs left out), 2^20 pairs whose quotient is 2^k times a
// draw from [1, 2) for k in [-40, 40], of either sign, and every pair of `edges` with either
// sign; `at_y` and `at_x` receive where it was.
template <typename T, typename F, typename R>
std::int64_t worst_ulps_of_pairs(F f, R ref, std::initializer_list<T> edges, T& at_y, T& at_x) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    std::int64_t worst = 0;
    auto check = [&](T y, T x) {
        const T a = f(y, x), b = ref(y, x);
        const std::int64_t d = std::isnan(a) || std::isnan(b) ? (std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX) : ulps_apart(a, b);
        if (d > worst) worst = d, at_y = y, at_x = x;
    };
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<T> mantissa(1, 2), any(-4, 4);
    std::uniform_int_distribution<int> power(-40, 40);
    for (int k = 0; k < (1 << 20); ++k) {
        Bits by = static_cast<Bits>(rng()), bx = static_cast<Bits>(rng());
        T y, x;
        std::memcpy(&y, &by, sizeof(T));
        std::memcpy(&x, &bx, sizeof(T));
        if (!std::isnan(y) && !std::isnan(x)) check(y, x);
        x = any(rng);
        y = std::ldexp(mantissa(rng), power(rng)) * x * (rng() % 2 ? 1 : -1);
        check(y, x);
    }
    for (T y : edges)
        for (T x : edges)
            for (T sy : {T(1), T(-1)})
                for (T sx : {T(1), T(-1)}) check(sy * y, sx * x);
    return worst;
}

}  // namespace scanc::float_math_test
