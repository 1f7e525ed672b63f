// bfloat16 products through oneDNN's matmul; see bf16_gemm.h.
#include "kernels/cpu/bf16_gemm.h"

#include <cstring>
#include <stdexcept>

#ifdef XMLT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <tuple>

// Debian's oneDNN runs its primitives on OpenMP. Each call here is one block of a TBB loop, so
// the OpenMP team of the calling thread is held at one thread, as OpenBLAS is in gemm.cc.
extern "C" void omp_set_num_threads(int) __attribute__((weak));
#endif

namespace xmlt::kernels::cpu {

Bf16 FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return Bf16((bits >> 16) | 0x0040u);  // a NaN stays a (quiet) NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);   // round to nearest, ties to even
  return Bf16(bits >> 16);
}

float Bf16ToFloat(Bf16 value) {
  const uint32_t bits = uint32_t(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

void ConvertToBf16(const float* in, uint64_t count, Bf16* out) {
  // The same rounding as FloatToBf16 without the NaN branch, so that it vectorizes; a NaN input
  // can round to an infinity here, which poisons the product just as the NaN would.
#pragma omp simd
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = Bf16(bits >> 16);
  }
}

#ifdef XMLT_HAVE_ONEDNN
namespace {

bool NativeBf16(dnnl::cpu_isa isa) {
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

// One primitive per product shape, per thread: creating one costs far more than running it, and
// a thread-local table needs no lock. The table is cleared if a run's changing batch sizes ever
// fill it.
class MatmulCache {
 public:
  MatmulCache() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    if (omp_set_num_threads != nullptr) omp_set_num_threads(1);
  }

  void Run(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const Bf16* a, int64_t lda,
           const Bf16* b, int64_t ldb, bool accumulate, float* c, int64_t ldc) {
    const Key key{op_a == Op::kTranspose, op_b == Op::kTranspose, m, n, k, lda, ldb, ldc, accumulate};
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      if (entries_.size() >= kMaxEntries) entries_.clear();
      found = entries_.emplace(key, Make(key)).first;
    }
    Entry& entry = *found->second;
    entry.a.set_data_handle(const_cast<Bf16*>(a));
    entry.b.set_data_handle(const_cast<Bf16*>(b));
    entry.c.set_data_handle(c);
    entry.matmul.execute(stream_, {{DNNL_ARG_SRC, entry.a}, {DNNL_ARG_WEIGHTS, entry.b}, {DNNL_ARG_DST, entry.c}});
    stream_.wait();
  }

 private:
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  struct Entry {
    dnnl::matmul matmul;
    dnnl::memory a, b, c;
  };
  static constexpr size_t kMaxEntries = 256;

  std::unique_ptr<Entry> Make(const Key& key) {
    const auto [ta, tb, m, n, k, lda, ldb, ldc, accumulate] = key;
    using dt = dnnl::memory::data_type;
    // A stored row-major with stride lda is the m x k matrix with strides {lda, 1}, or, stored
    // transposed, {1, lda}; the same for B.
    const dnnl::memory::desc a_desc({m, k}, dt::bf16, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
    const dnnl::memory::desc b_desc({k, n}, dt::bf16, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
    const dnnl::memory::desc c_desc({m, n}, dt::f32, dnnl::memory::dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, engine_);
    auto entry = std::make_unique<Entry>();
    entry->matmul = dnnl::matmul(pd);
    entry->a = dnnl::memory(a_desc, engine_, DNNL_MEMORY_NONE);
    entry->b = dnnl::memory(b_desc, engine_, DNNL_MEMORY_NONE);
    entry->c = dnnl::memory(c_desc, engine_, DNNL_MEMORY_NONE);
    return entry;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<Key, std::unique_ptr<Entry>> entries_;
};

}  // namespace

bool Bf16Available(std::string* why) {
  if (NativeBf16(dnnl::get_effective_cpu_isa())) return true;
  if (why != nullptr)
    *why = "this CPU has neither AMX nor AVX-512 BF16 (oneDNN reports " + Bf16Isa() + ")";
  return false;
}

std::string Bf16Isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "an older instruction set";
  }
}

void Bf16GemmOneThread(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const Bf16* a,
                       int64_t lda, const Bf16* b, int64_t ldb, bool accumulate, float* c,
                       int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  std::string why;
  if (!Bf16Available(&why)) throw std::runtime_error("bf16 products: " + why);
  if (k <= 0) {  // oneDNN refuses an empty inner dimension; the product is zero
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, sizeof(float) * size_t(n));
    return;
  }
  thread_local MatmulCache cache;
  cache.Run(op_a, op_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
}

#else  // built without oneDNN

bool Bf16Available(std::string* why) {
  if (why != nullptr) *why = "this build has no oneDNN (install libdnnl-dev and rebuild)";
  return false;
}

std::string Bf16Isa() { return "none (built without oneDNN)"; }

void Bf16GemmOneThread(Op, Op, int64_t, int64_t, int64_t, const Bf16*, int64_t, const Bf16*,
                       int64_t, bool, float*, int64_t) {
  std::string why;
  Bf16Available(&why);
  throw std::runtime_error("bf16 products: " + why);
}

#endif

}  // namespace xmlt::kernels::cpu
