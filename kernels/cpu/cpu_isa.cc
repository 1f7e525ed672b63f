// Picks the vector kernels' ISA at run time; see cpu_isa.h. Compiled for plain x86-64 like the
// rest of the build: only the vector_kernels_<isa>.cc files use wider instructions.
#include "kernels/cpu/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace xmlt::kernels::cpu {
namespace {

std::atomic<const VectorKernels*> active{nullptr};
std::once_flag resolve_once;

const VectorKernels& TableOf(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512: return kVectorKernelsAvx512;
    case CpuIsa::kAvx2: return kVectorKernelsAvx2;
    case CpuIsa::kBaseline: break;
  }
  return kVectorKernelsBaseline;
}

CpuIsa IsaFromEnvironment() {
  const char* value = std::getenv("XMLT_CPU_ISA");
  if (value == nullptr || *value == '\0' || std::string(value) == "auto") return BestCpuIsa();
  CpuIsa isa;
  try {
    isa = ParseCpuIsa(value);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("XMLT_CPU_ISA: ") + e.what());
  }
  if (!CpuSupports(isa))
    throw std::runtime_error(std::string("XMLT_CPU_ISA=") + value + ": this CPU cannot run " + CpuIsaName(isa) +
                             " code (its best is " + CpuIsaName(BestCpuIsa()) + ")");
  return isa;
}

}  // namespace

const char* CpuIsaName(CpuIsa isa) { return TableOf(isa).isa; }

CpuIsa ParseCpuIsa(const std::string& name) {
  for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512})
    if (name == CpuIsaName(isa)) return isa;
  throw std::invalid_argument("unknown instruction set '" + name + "' (expected auto, avx512, avx2 or baseline)");
}

bool CpuSupports(CpuIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::kAvx512: return __builtin_cpu_supports("x86-64-v4");
    case CpuIsa::kAvx2: return __builtin_cpu_supports("x86-64-v3");
    case CpuIsa::kBaseline: break;
  }
  return true;
}

CpuIsa BestCpuIsa() {
  if (CpuSupports(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
  if (CpuSupports(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
  return CpuIsa::kBaseline;
}

const VectorKernels& VectorKernelsFor(CpuIsa isa) {
  if (!CpuSupports(isa))
    throw std::runtime_error(std::string("this CPU cannot run ") + CpuIsaName(isa) + " code");
  return TableOf(isa);
}

const VectorKernels& Vec() {
  const VectorKernels* table = active.load(std::memory_order_acquire);
  if (table != nullptr) return *table;
  std::call_once(resolve_once, [] {
    const VectorKernels* expected = nullptr;
    active.compare_exchange_strong(expected, &TableOf(IsaFromEnvironment()));
  });
  return *active.load(std::memory_order_acquire);
}

CpuIsa ActiveCpuIsa() { return ParseCpuIsa(Vec().isa); }

void SetActiveCpuIsa(CpuIsa isa) { active.store(&VectorKernelsFor(isa), std::memory_order_release); }

}  // namespace xmlt::kernels::cpu
