// The instruction set the CPU step's vector kernels run with, chosen at run time so that one build
// serves every x86-64 machine: the widest the CPU has, or the one XMLT_CPU_ISA names (to measure
// or test a narrower path on a wider CPU).
#pragma once

#include <string>

#include "kernels/cpu/vector_kernels.h"

namespace xmlt::kernels::cpu {

enum class CpuIsa { kBaseline, kAvx2, kAvx512 };

// "baseline" (x86-64: SSE2), "avx2" (x86-64-v3: AVX2 and FMA), "avx512" (x86-64-v4).
const char* CpuIsaName(CpuIsa isa);
// Parses a name as above; throws std::invalid_argument naming the accepted values otherwise.
CpuIsa ParseCpuIsa(const std::string& name);
// Whether this CPU runs the instructions of `isa`.
bool CpuSupports(CpuIsa isa);
// The widest ISA this CPU supports.
CpuIsa BestCpuIsa();

// The ISA in use: XMLT_CPU_ISA when set (and not "auto"), the best one otherwise. Resolved once;
// a name this CPU cannot run throws std::runtime_error, which a run reports before training.
CpuIsa ActiveCpuIsa();
// The kernels of the active ISA.
const VectorKernels& Vec();
// The kernels of `isa`; throws std::runtime_error when this CPU cannot run them.
const VectorKernels& VectorKernelsFor(CpuIsa isa);
// Switches the active ISA for the rest of the process (tests and benchmarks that compare paths
// in one run); not while a step runs.
void SetActiveCpuIsa(CpuIsa isa);

}  // namespace xmlt::kernels::cpu
