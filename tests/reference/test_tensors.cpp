#include "test_tensors.h"

#include <algorithm>
#include <limits>

namespace scanc::testing {

namespace {

// Every non-negative finite value of a format with `fraction` bits and exponent bias `bias`, in
// increasing order (the index is the bit pattern, so an even index is an even mantissa).
std::vector<double> finite_values(int exponent_bits, int fraction, int bias) {
    std::vector<double> v;
    int max_exp = (1 << exponent_bits) - 1;
    for (int e = 0; e < max_exp; ++e)
        for (int m = 0; m < (1 << fraction); ++m)
            v.push_back(e == 0 ? std::ldexp(m, 1 - bias - fraction)
                               : std::ldexp((1 << fraction) + m, e - bias - fraction));
    return v;
}

double nearest(const std::vector<double>& table, double x) {
    if (std::isnan(x) || std::isinf(x)) return x;
    double a = std::fabs(x);
    double max = table.back(), next = 2 * max - table[table.size() - 2];  // ulp past max
    double r;
    if (a >= (max + next) / 2) {
        r = std::numeric_limits<double>::infinity();
    } else {
        auto it = std::lower_bound(table.begin(), table.end(), a);
        if (it == table.end()) {
            r = max;
        } else if (*it == a || it == table.begin()) {
            r = *it;
        } else {
            double hi = *it, lo = *(it - 1);
            std::size_t hi_index = static_cast<std::size_t>(it - table.begin());
            if (a - lo < hi - a) r = lo;
            else if (hi - a < a - lo) r = hi;
            else r = hi_index % 2 == 0 ? hi : lo;
        }
    }
    return std::copysign(r, x);
}

}  // namespace

double nearest_f16(double x) {
    static const std::vector<double> table = finite_values(5, 10, 15);
    return nearest(table, x);
}

double nearest_bf16(double x) {
    static const std::vector<double> table = finite_values(8, 7, 127);
    return nearest(table, x);
}

}  // namespace scanc::testing
