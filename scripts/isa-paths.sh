# Sourced by the benchmark scripts that measure each vector path this CPU runs (bench-isa.sh,
# bench-slide.sh): isa_paths lists them (avx512 where the CPU has it, then avx2), env_for PATH
# prints the environment that holds the step's kernels and the libraries' to that path. On an
# AVX-512 CPU the avx2 path is AVX2 code on an AVX-512 CPU, not an AVX2 machine. BLIS is left to
# its own choice: Debian's BLIS 0.9 aborts at start with any BLIS_ARCH_TYPE ("accessed
# uninitialized context in gks"), names or numbers alike.
env_for() {
  case "$1" in
    avx512) echo "XMLT_CPU_ISA=avx512 OPENBLAS_CORETYPE=SkylakeX ONEDNN_MAX_CPU_ISA=AVX512_CORE" ;;
    avx2) echo "XMLT_CPU_ISA=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2" ;;
  esac
}

isa_paths=()
if grep -qw avx512f /proc/cpuinfo; then isa_paths+=(avx512); fi
isa_paths+=(avx2)
