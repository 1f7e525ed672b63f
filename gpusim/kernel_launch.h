// kernel<<<grid, block, shared, stream>>>(args...) on the simulated GPUs, written
// gpusim::Launch(kernel, grid, block, shared, stream, "kernel")(args...) (kernels/cuda/launch.h
// spells both). The arguments are copied at the launch, as a card's launch copies them; each
// pointer argument must be null, device memory of the launching GPU, or pinned host memory.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "gpusim/kernel_builtins.h"

struct CUstream_st;

namespace gpusim {
namespace detail {

// Why pointer argument `index` may not be used by a kernel on the current GPU, or "".
std::string CheckKernelPointer(const void* p, size_t index);

template <class T>
std::string CheckArgument(const T& value, size_t index) {
  if constexpr (std::is_pointer_v<T>) {
    return CheckKernelPointer(static_cast<const void*>(value), index);
  } else {
    return {};
  }
}

// Validates the configuration, counts the launch and enqueues the grid on the stream; records a
// configuration error as the launch's error (cudaGetLastError).
void SubmitKernel(const char* name, dim3 grid, dim3 block, size_t shared_bytes, CUstream_st* stream,
                  std::string misuse, std::function<void()> thread_body);

}  // namespace detail

template <class... Params>
class KernelLaunch {
 public:
  KernelLaunch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, CUstream_st* stream,
               const char* name)
      : kernel_(kernel), grid_(grid), block_(block), shared_bytes_(shared_bytes), stream_(stream), name_(name) {}

  template <class... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of kernel arguments");
    auto bound = std::make_shared<std::tuple<std::decay_t<Params>...>>(std::forward<Args>(args)...);
    std::string misuse;
    size_t index = 0;
    std::apply(
        [&](const auto&... value) {
          ((misuse.empty() ? (void)(misuse = detail::CheckArgument(value, index)) : (void)0, ++index), ...);
        },
        *bound);
    void (*kernel)(Params...) = kernel_;
    detail::SubmitKernel(name_, grid_, block_, shared_bytes_, stream_, std::move(misuse),
                         [kernel, bound] { std::apply(kernel, *bound); });
  }

 private:
  void (*kernel_)(Params...);
  dim3 grid_, block_;
  size_t shared_bytes_;
  CUstream_st* stream_;
  const char* name_;
};

template <class... Params>
KernelLaunch<Params...> Launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                               CUstream_st* stream, const char* name) {
  return KernelLaunch<Params...>(kernel, grid, block, shared_bytes, stream, name);
}

}  // namespace gpusim
