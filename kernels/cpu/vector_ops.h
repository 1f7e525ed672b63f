// The vector kernels (vector_kernels.h) for either element type: float goes to the kernels of the
// CPU's ISA (cpu_isa.h), double (the gradient checks' models) to the plain loops here.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/fast_exp.h"
#include "kernels/cpu/stochastic_rounding.h"

namespace xmlt::kernels::cpu::vector_ops {

template <class T>
constexpr bool kVectorized = std::is_same_v<T, float>;

// max_j z[j] (n >= 1).
template <class T>
T Max(const T* z, uint64_t n) {
  if constexpr (kVectorized<T>) {
    return Vec().max(z, n);
  } else {
    T max = z[0];
    for (uint64_t j = 1; j < n; ++j) max = max > z[j] ? max : z[j];
    return max;
  }
}

// sum_j exp(z[j] - max).
template <class T>
T ExpSum(const T* z, T max, uint64_t n) {
  if constexpr (kVectorized<T>) {
    return Vec().exp_sum(z, max, n);
  } else {
    T sum = 0;
    for (uint64_t j = 0; j < n; ++j) sum += FastExp(z[j] - max);
    return sum;
  }
}

// z[j] = exp(z[j] - max); returns the sum of the new z.
template <class T>
T ExpInPlace(T* z, T max, uint64_t n) {
  if constexpr (kVectorized<T>) {
    return Vec().exp_in_place(z, max, n);
  } else {
    T sum = 0;
    for (uint64_t j = 0; j < n; ++j) {
      z[j] = FastExp(z[j] - max);
      sum += z[j];
    }
    return sum;
  }
}

// dst[j] = s * exp(z[j] - max).
template <class T>
void ScaledExp(T* dst, const T* z, T s, T max, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().scaled_exp(dst, z, s, max, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) dst[j] = s * FastExp(z[j] - max);
  }
}

// dst[j] = f * src[j].
template <class T>
void Scale(T* dst, const T* src, T f, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().scale(dst, src, f, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) dst[j] = f * src[j];
  }
}

// sums[j] += x[j].
template <class T>
void AddTo(T* sums, const T* x, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().add(sums, x, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) sums[j] += x[j];
  }
}

// dst[j] = f * src[j]; sums[j] += dst[j].
template <class T>
void ScaleAdd(T* dst, const T* src, T f, T* sums, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().scale_add(dst, src, f, sums, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) {
      dst[j] = f * src[j];
      sums[j] += dst[j];
    }
  }
}

// w[j] -= lr * g[j]. The gradient may be float for a double model (the bf16 path's scratch, which
// a double model never reaches but compiles).
template <class T, class G>
void Sgd(T* w, const G* g, T lr, uint64_t n) {
  if constexpr (kVectorized<T> && kVectorized<G>) {
    Vec().sgd(w, g, lr, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) w[j] -= lr * g[j];
  }
}

// v[j] = momentum * v[j] + g[j]; w[j] -= lr * v[j].
template <class T, class G>
void Momentum(T* w, T* v, const G* g, T momentum, T lr, uint64_t n) {
  if constexpr (kVectorized<T> && kVectorized<G>) {
    Vec().momentum(w, v, g, momentum, lr, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) {
      v[j] = momentum * v[j] + g[j];
      w[j] -= lr * v[j];
    }
  }
}

// y[j] += a * x[j].
template <class T>
void Axpy(T* y, const T* x, T a, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().axpy(y, x, a, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) y[j] += a * x[j];
  }
}

// Adagrad with g[j] = scale * d[j]: squares[j] += g[j]^2; w[j] -= lr * g[j] / (sqrt(squares[j]) + epsilon).
template <class T>
void Adagrad(T* w, T* squares, const T* d, T scale, T lr, T epsilon, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().adagrad(w, squares, d, scale, lr, epsilon, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) {
      const T g = scale * d[j];
      squares[j] += g * g;
      w[j] -= lr * g / (std::sqrt(squares[j]) + epsilon);
    }
  }
}

// Momentum and Adagrad with the state in bfloat16 (vector_kernels.h: momentum_bf16, adagrad_bf16).
// Only float models keep such state; the plain loops serve the double models that compile it.
template <class T, class G>
void MomentumBf16(T* w, uint16_t* v, const G* g, T momentum, T lr, uint64_t n, uint32_t key, uint64_t index) {
  if constexpr (kVectorized<T> && kVectorized<G>) {
    Vec().momentum_bf16(w, v, g, momentum, lr, n, key, index);
  } else {
    for (uint64_t j = 0; j < n; ++j) {
      const T next = momentum * T(WidenBf16(v[j])) + T(g[j]);
      w[j] -= lr * next;
      v[j] = StochasticBf16(float(next), RoundingNoise(key, index + j));
    }
  }
}

template <class T>
void AdagradBf16(T* w, uint16_t* squares, const T* d, T scale, T lr, T epsilon, uint64_t n, uint32_t key,
                 uint64_t index) {
  if constexpr (kVectorized<T>) {
    Vec().adagrad_bf16(w, squares, d, scale, lr, epsilon, n, key, index);
  } else {
    for (uint64_t j = 0; j < n; ++j) {
      const T g = scale * d[j];
      const T sum = T(WidenBf16(squares[j])) + g * g;
      w[j] -= lr * g / (std::sqrt(sum) + epsilon);
      squares[j] = StochasticBf16(float(sum), RoundingNoise(key, index + j));
    }
  }
}

// out[j] = v[j] rounded stochastically to bf16.
template <class T>
void RoundBf16(const T* v, uint16_t* out, uint64_t n, uint32_t key, uint64_t index) {
  if constexpr (kVectorized<T>) {
    Vec().round_bf16(v, out, n, key, index);
  } else {
    for (uint64_t j = 0; j < n; ++j) out[j] = StochasticBf16(float(v[j]), RoundingNoise(key, index + j));
  }
}

// out[j] = v[j] rounded to its nearest bf16 (ties to even; a NaN stays a NaN).
template <class T>
void NearestBf16s(const T* v, uint16_t* out, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().nearest_bf16(v, out, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) out[j] = NearestBf16(float(v[j]));
  }
}

// out[j] = in[j] widened from bf16.
template <class T>
void WidenBf16s(const uint16_t* in, T* out, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().widen_bf16(in, out, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) out[j] = T(WidenBf16(in[j]));
  }
}

// y[j] += a * x[j], x in bf16.
template <class T>
void AxpyBf16(T* y, const uint16_t* x, T a, uint64_t n) {
  if constexpr (kVectorized<T>) {
    Vec().axpy_bf16(y, x, a, n);
  } else {
    for (uint64_t j = 0; j < n; ++j) y[j] += a * T(WidenBf16(x[j]));
  }
}

}  // namespace xmlt::kernels::cpu::vector_ops
