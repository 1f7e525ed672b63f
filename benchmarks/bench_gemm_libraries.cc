// The output layer's three products at exactly the step's shapes (batch 256, hidden 128, 670,091
// labels) in each GEMM library Debian ships: OpenBLAS (the build's BLAS), BLIS and oneDNN's sgemm,
// and in the engine's own direct kernels (kernels/cpu/direct_gemm.h, of the ISA XMLT_CPU_ISA picks),
// called as the fused layer calls its BLAS: one single-threaded call per block of labels, blocks
// over the threads. Which kernels a library runs is its own run-time choice; the environment forces
// a narrower one (scripts/bench-isa.sh --gemm-libraries: OPENBLAS_CORETYPE, XMLT_CPU_ISA,
// ONEDNN_MAX_CPU_ISA), and the context lines name what each library picked. FmaPeak measures the
// machine's multiply-add rate, the ceiling the products are quoted against.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <cblas.h>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/direct_gemm.h"
#include "kernels/cpu/output_layer.h"

#if XMLT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" void omp_set_num_threads(int) __attribute__((weak));

namespace {

// Row-major C = alpha op(A) op(B) + beta C, as cblas_sgemm takes it.
using Sgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int, float, const float*, int,
                       const float*, int, float, float*, int);

// BLIS exports the same cblas_/sgemm_ names as OpenBLAS: loaded apart (RTLD_DEEPBIND) so that each
// library's calls stay inside it. Null when BLIS is not installed.
struct Blis {
  Sgemm sgemm = nullptr;
  std::string arch = "not installed";
  Blis() {
    void* lib = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (lib == nullptr) return;
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    auto query = reinterpret_cast<int (*)()>(dlsym(lib, "bli_arch_query_id"));
    auto name = reinterpret_cast<char* (*)(int)>(dlsym(lib, "bli_arch_string"));
    if (query != nullptr && name != nullptr) arch = name(query());
  }
};
const Blis& BlisLibrary() {
  static const Blis blis;
  return blis;
}

enum Library { kOpenBlas, kBlis, kOneDnn, kDirect };
const char* kLibraryNames[] = {"OpenBLAS", "BLIS", "oneDNN", "direct"};

// The direct kernels of the active ISA; none on the baseline one.
const xmlt::kernels::cpu::DirectGemmKernels* DirectKernels() {
  return xmlt::kernels::cpu::DirectGemmKernelsFor(xmlt::kernels::cpu::ActiveCpuIsa());
}
enum Product { kLogits, kInputGradient, kWeightGradient };
const char* kProductNames[] = {"logits=A*W^T", "dA=D*W", "dW=D^T*A"};

// One product on one thread: m x n = op(A) k-inner, row-major.
void RunOne(Library library, bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) {
  switch (library) {
    case kOpenBlas:
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
                  lda, b, ldb, beta, c, ldc);
      return;
    case kBlis:
      BlisLibrary().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                          alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    case kOneDnn:
#if XMLT_HAVE_ONEDNN
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
      return;
    case kDirect: {
      using xmlt::kernels::cpu::Op;
      xmlt::kernels::cpu::DirectGemm(*DirectKernels(), ta ? Op::kTranspose : Op::kNone, tb ? Op::kTranspose : Op::kNone,
                                     m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  }
}

// Args: library, product, batch rows, hidden units, labels.
void OutputProduct(benchmark::State& state) {
  const auto library = Library(state.range(0));
  const auto product = Product(state.range(1));
  const int64_t rows = state.range(2), hidden = state.range(3), labels = state.range(4);
  if (library == kBlis && BlisLibrary().sgemm == nullptr) {
    state.SkipWithError("BLIS is not installed (Debian: libblis-dev)");
    return;
  }
  if (library == kDirect && DirectKernels() == nullptr) {
    state.SkipWithError("no direct kernels below AVX2");
    return;
  }
#if !XMLT_HAVE_ONEDNN
  if (library == kOneDnn) {
    state.SkipWithError("built without oneDNN");
    return;
  }
#endif
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  const int64_t block = int64_t(xmlt::kernels::cpu::OutputBlockLabels(uint32_t(rows), uint64_t(hidden)));
  const int64_t blocks = (labels + block - 1) / block;
  // The step's layout: A rows x hidden, W labels x hidden, the logits / output gradient block by
  // block (rows x width, contiguous), the input gradient one rows x hidden part per block.
  std::vector<float> a(rows * hidden), w(labels * hidden), z(rows * labels), da(blocks * rows * hidden);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& x : a) x = uniform(rng);
  for (float& x : w) x = uniform(rng) * 0.01f;
  for (float& x : z) x = uniform(rng) * 1e-6f;
  const int m = int(rows), k = int(hidden);
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, blocks, 1), [&](const tbb::blocked_range<int64_t>& range) {
      // oneDNN's (and BLIS's) OpenMP threads: one per calling thread, as bf16_gemm.cc sets them.
      thread_local const bool serial = [] {
        if (omp_set_num_threads != nullptr) omp_set_num_threads(1);
        return true;
      }();
      (void)serial;
      for (int64_t blk = range.begin(); blk < range.end(); ++blk) {
        const int64_t j0 = blk * block;
        const int width = int(std::min(block, labels - j0));
        float* zb = z.data() + j0 * rows;
        float* wb = w.data() + j0 * hidden;
        switch (product) {
          case kLogits:  // m x width, k inner
            RunOne(library, false, true, m, width, k, 1, a.data(), k, wb, k, 0, zb, width);
            break;
          case kInputGradient:  // m x k, width inner
            RunOne(library, false, false, m, k, width, 1, zb, width, wb, k, 0, da.data() + blk * rows * hidden, k);
            break;
          case kWeightGradient:  // width x k, m inner, the SGD step folded in (beta 1)
            RunOne(library, true, false, width, k, m, -1e-3f, zb, width, a.data(), k, 1, wb, k);
            break;
        }
      }
    }, tbb::simple_partitioner());
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(kLibraryNames[library]) + " " + kProductNames[product]);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows) * double(hidden) * double(labels) * 1e-9 *
                                                     double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

// Independent multiply-add chains (enough to cover the FMA latency on every pipe) on every
// thread: the machine's measured FMA peak for 256-bit and 512-bit vectors. Inlined into the two
// callers, each compiled for its vector width.
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));
template <class V, int kLanes>
__attribute__((always_inline)) inline float FmaChains(int64_t iterations, float seed) {
  constexpr int kChains = 12;
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V{} + seed * float(c + 1);
  const V mul = V{} + 0.999999f, add = V{} + 1e-7f;
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kLanes; ++l) sum += acc[c][l];
  return sum;
}
__attribute__((target("avx2,fma"), noinline)) float FmaChainsAvx2(int64_t n, float seed) {
  return FmaChains<V8, 8>(n, seed);
}
__attribute__((target("avx512f,fma"), noinline)) float FmaChainsAvx512(int64_t n, float seed) {
  return FmaChains<V16, 16>(n, seed);
}

// Arg: vector lanes (8: AVX2, 16: AVX-512).
void FmaPeak(benchmark::State& state) {
  const int lanes = int(state.range(0));
  if (lanes == 16 && !__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  constexpr int64_t kIterations = 1 << 22;
  const int threads = tbb::this_task_arena::max_concurrency();
  for (auto _ : state) {
    tbb::parallel_for(0, threads, [&](int t) {
      benchmark::DoNotOptimize(lanes == 16 ? FmaChainsAvx512(kIterations, 1.0f + float(t))
                                           : FmaChainsAvx2(kIterations, 1.0f + float(t)));
    });
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * lanes * 12.0 * double(kIterations) * threads * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["threads"] = threads;
}

// What each library runs here, in the output's context.
const bool kContext = [] {
  if (openblas_get_corename != nullptr) benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("blis_arch", BlisLibrary().arch);
#if XMLT_HAVE_ONEDNN
  const int isa = int(dnnl_get_effective_cpu_isa());
  benchmark::AddCustomContext("onednn_isa", isa == dnnl_cpu_isa_avx2 ? "avx2" :
                                            isa == dnnl_cpu_isa_avx512_core ? "avx512_core" :
                                            isa == dnnl_cpu_isa_avx512_core_vnni ? "avx512_core_vnni" :
                                            isa == dnnl_cpu_isa_avx512_core_bf16 ? "avx512_core_bf16" :
                                            std::to_string(isa));
#endif
  return true;
}();

BENCHMARK(FmaPeak)->Arg(8)->Arg(16)->UseRealTime();
BENCHMARK(OutputProduct)
    ->ArgsProduct({{kOpenBlas, kBlis, kOneDnn, kDirect}, {kLogits, kInputGradient, kWeightGradient}, {256}, {128}, {670091}})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

}  // namespace
