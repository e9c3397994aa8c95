// The example of DESIGN §2, verbatim (comments included), shared by the text tests.
#pragma once

namespace scanc {

inline const char* kDesignExample = R"(# h[b,t,d] = exp(dt[b,t,d] * A[d]) * h[b,t-1,d] + dt[b,t,d] * x[b,t,d]
combine affine(a1, b1 | a2, b2) {
  return a1 * a2, a2 * b1 + b2
}

combine smooth_max(x1 | x2; tau) {        # tau is captured
  return tau * logaddexp(x1 / tau, x2 / tau)
}

program mamba(x: f32[B, L<=1048576, D], dt: f32[B, L, D], A: f32[D]) {
  a = exp(dt * A)                          # elementwise, numpy broadcasting
  b = dt * x
  (_, h) = scan affine(a, b) dim=1
  return h
}

program softmax_max(x: f32[N, T], tau: f32[N, 1]) {
  y = scan smooth_max(x) dim=1 reverse with (tau)
  return y
}
)";

}  // namespace scanc
