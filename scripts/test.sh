#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and end-to-end) with ctest.
# Usage: scripts/test.sh [--sanitize address|thread | --gpu-sim] [extra cmake configure arguments]
#   (no option)         the Release build in build/, every test; then the simulated-GPU build
#                       (scripts/test-gpu-sim.sh, build-sim/) and its tests, as --gpu-sim does.
#   --gpu-sim           only the simulated-GPU build (-DXMLT_CUDA=SIM) in build-sim/: the CUDA
#                       backend's own sources on simulated GPUs (gpusim/), its CUDA tests with
#                       XMLT_REQUIRE_GPU=1 (a skip fails), the simulator's tests, xmltrain on Bibtex
#                       against CPU devices, and the engine and scheduler tests, which then have
#                       CUDA devices (scripts/test-gpu-sim.sh; about 8 minutes to build and 1 to
#                       test on two cores). --gpu-sim --sanitize address: only the CUDA and
#                       simulator tests under ASan+UBSan, in build-sim-asan/.
#   --sanitize address  ASan + UBSan build in build-asan/ (RelWithDebInfo) with the simulated GPUs
#                       (-DXMLT_CUDA=SIM), every test: the CPU's, and the CUDA and simulator tests
#                       (XMLT_REQUIRE_GPU=1), where a kernel reading past a device allocation (an
#                       exact-size heap block) or past its dynamic shared memory is an ASan report,
#                       as compute-sanitizer's memcheck would report it on a card. CI runs it. The
#                       first memory error or undefined behaviour fails its test; leaks are not
#                       checked. Left out, for time (each is minutes under ASan, and what it
#                       executes runs here in shorter tests): the Bibtex accuracy runs of every
#                       algorithm, of the paper preset and of SLIDE at the default width, the
#                       Delicious defaults, training across MPI ranks, xmltrain end to end on
#                       simulated GPUs (gpu_sim_*) and the merges' grids on more GPUs than
#                       two or without peer access.
#                       -DXMLT_CUDA=OFF after the option builds the CPU alone.
#   --sanitize thread   TSan build in build-tsan/ (RelWithDebInfo, CUDA off), every test (about 4
#                       minutes to build and 27 to test on two cores, 23 of them the Bibtex
#                       end-to-end runs). Debian's TBB is not instrumented, so this build runs TBB
#                       on one thread (cmake/tsan_serial_tbb.cc says why): TSan checks the threads
#                       our code starts (the device manager threads and the coordinator feeding
#                       them through their queues) and everything they share, but not races
#                       between the iterations of one TBB parallel loop. scripts/tsan.supp holds
#                       the one TBB-internal false positive left. The first race fails its test.
#   Sanitizer reports are printed after the tests and kept in BUILD/sanitizer-logs/.
# XMLT_CTEST_ARGS adds ctest arguments, e.g. XMLT_CTEST_ARGS="-L engine|merge|scheduler" for a
# subset by label (data kernels engine merge scheduler apps scripts fuzz), or
# XMLT_CTEST_ARGS="-E EndToEndTest.(Bibtex|Delicious)" to leave out the long end-to-end runs (an -E
# given there replaces --sanitize address's own).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest_args=()
if [[ "${1:-}" == "--gpu-sim" ]]; then
  shift
  exec bash scripts/test-gpu-sim.sh "$@"
fi
plain_run=1
if [[ "${1:-}" == "--sanitize" ]]; then
  plain_run=0
  kind=${2:?"--sanitize needs address or thread"}
  shift 2
  case $kind in
    address)
      export XMLT_BUILD_DIR=${XMLT_BUILD_DIR:-build-asan}
      cuda=SIM
      export XMLT_REQUIRE_GPU=1
      # Under ASan: BibtexEveryAlgorithm 470 s, BibtexSlide 360 s (110 s and 55 s in the plain
      # tier); their steps run under ASan in CpuStepDefaults and DeliciousSlide. DeliciousWithDefaults
      # took 222 s under ASan on an AVX2-only CPU (2026-11-28); its dense step runs under ASan in
      # BibtexWithDefaults. The end-to-end runs on simulated GPUs and the merges' grids on 8 GPUs,
      # on 4 across ranks and on 4 without peer access (340 s under ASan, the last) run in the plain
      # simulated tier; their kernels run under ASan in the default grids. BibtexPaperPreset (70 s
      # under ASan) trains adaptive on 4 devices for 20 epochs to check a message; mpi_train (127 s)
      # trains across MPI ranks: under ASan the loop across ranks runs in RanksRun (threads playing
      # the ranks) and the MPI transport in ranks_mpi_np2 and np3 (both measured 2026-12-01, Intel Xeon).
      # MultiDeviceScalingTest trains Bibtex on one and four devices to compare their curves; what
      # it runs, runs under ASan in the shorter multi-device tests.
      ctest_args+=(-E 'EndToEndTest\.(BibtexEveryAlgorithm|BibtexSlide|DeliciousWithDefaults|BibtexPaperPreset)|MultiDeviceScalingTest\.|^mpi_train$|^gpu_sim_(train|algos|resume|merge)$|\.(on_[48]_gpus|without_peer_access)$')
      ;;
    thread) export XMLT_BUILD_DIR=${XMLT_BUILD_DIR:-build-tsan}; cuda=OFF ;;
    *) echo "test.sh: --sanitize takes address or thread, not '$kind'" >&2; exit 2 ;;
  esac
  set -- -DXMLT_SANITIZE="$kind" -DXMLT_CUDA=$cuda -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXMLT_BUILD_BENCHMARKS=OFF "$@"
  # ASan's and TSan's reports go to files, printed below: the CLI tests capture the stderr of the
  # command they run in-process, and a report written there would be lost with it. (UBSan running
  # beside ASan ignores log_path and writes to stderr: an error inside a captured command fails
  # its test, but only rerunning it without the capture shows the report.) Leaks in third-party
  # singletons are not ours; races and memory errors are. Options the caller sets come after
  # ours and win, except for the log files and the TSan suppressions.
  logs=$XMLT_BUILD_DIR/sanitizer-logs
  [[ $logs == /* ]] || logs=$PWD/$logs
  rm -rf "$logs" && mkdir -p "$logs"
  # allow_user_segv_handler: the data reader's SIGBUS handler (data/mapped_file.h) is installed
  # over ASan's, which passes on the faults that are not a shortened mapping's.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_segv_handler=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}:log_path=$logs/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}:log_path=$logs/tsan:suppressions=$PWD/scripts/tsan.supp"
  # Sanitized end-to-end tests run for minutes (ctest's default limit is 1500 s a test).
  ctest_args+=(--timeout 3600)
fi
bash scripts/build.sh "$@"
# shellcheck disable=SC2206  # XMLT_CTEST_ARGS is split on purpose
ctest_args+=(${XMLT_CTEST_ARGS:-})
status=0
ctest --test-dir "${XMLT_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)" "${ctest_args[@]}" || status=$?
if [[ -n "${logs:-}" ]] && ! bash scripts/sanitizer-reports.sh "$logs" test.sh; then
  [[ $status -ne 0 ]] || status=1
fi
# The plain run (what CI runs first) goes on to the simulated GPUs, whatever the first part gave.
if [[ $plain_run -eq 1 ]]; then
  bash scripts/test-gpu-sim.sh || status=$?
fi
exit "$status"
