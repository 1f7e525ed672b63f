// RAII, move-only owners of CUDA resources: device memory, pinned host memory, streams, events and
// cuBLAS handles. Constructors throw through the check macros; destructors never throw
// (a failed release during unwinding must not terminate the process), nor leave their error
// behind for the next check (ForgetUnreportedError).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace xmlt::kernels::cuda {

// `count` elements of T in the memory of the current device.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : size_(count) {
    if (count > 0) XMLT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) ForgetUnreportedError(cudaFree(data_));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) ForgetUnreportedError(cudaFree(data_));
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

  // Synchronous helpers for setup and tests; the training path uses async copies on its stream.
  static DeviceBuffer FromHost(const std::vector<T>& host) {
    DeviceBuffer buffer(host.size());
    if (!host.empty())
      XMLT_CUDA_CHECK(cudaMemcpy(buffer.data_, host.data(), host.size() * sizeof(T),
                                 cudaMemcpyHostToDevice));
    return buffer;
  }
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    if (size_ > 0)
      XMLT_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory: the staging area that lets host-device copies run asynchronously.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) : size_(count) {
    if (count > 0)
      XMLT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) ForgetUnreportedError(cudaFreeHost(data_));
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) ForgetUnreportedError(cudaFreeHost(data_));
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// A non-blocking stream: it does not synchronize with the legacy default stream, so replicas
// sharing a GPU (cuda:0x4) overlap.
class Stream {
 public:
  Stream() { XMLT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) ForgetUnreportedError(cudaStreamDestroy(stream_));
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      if (stream_ != nullptr) ForgetUnreportedError(cudaStreamDestroy(stream_));
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void Synchronize() const { XMLT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing (cheaper to record); used to wait for one stream's work only.
class Event {
 public:
  Event() { XMLT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~Event() {
    if (event_ != nullptr) ForgetUnreportedError(cudaEventDestroy(event_));
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      if (event_ != nullptr) ForgetUnreportedError(cudaEventDestroy(event_));
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void Record(cudaStream_t stream) { XMLT_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void Synchronize() const { XMLT_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() { XMLT_CUBLAS_CHECK(cublasCreate(&handle_)); }
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    if (this != &other) {
      if (handle_ != nullptr) cublasDestroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Makes `device` current for a scope and restores the previous one: the engine's manager threads
// may drive replicas on different GPUs, and the current device is per-thread state.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    XMLT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) XMLT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace xmlt::kernels::cuda
