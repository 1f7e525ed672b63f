#!/usr/bin/env bash
# XMLT_REQUIRE_GPU=1 turns the CUDA tests' skips into failures, so that a GPU run with a broken
# driver cannot pass as a row of skips. On a machine without a usable GPU the test must skip
# (naming the runtime's reason) and fail when a GPU is required; with one it must run in both.
# Usage: require_gpu_test.sh <kernels_cuda_tests>
set -uo pipefail
tests=$1
filter=--gtest_filter=CudaTopK.RejectsKAbove32

plain=$(env -u XMLT_REQUIRE_GPU "$tests" "$filter" 2>&1)
plain_status=$?
required=$(XMLT_REQUIRE_GPU=1 "$tests" "$filter" 2>&1)
required_status=$?
fail() { echo "FAIL: $*"; echo "--- plain run:"; echo "$plain"; echo "--- XMLT_REQUIRE_GPU=1:"; echo "$required"; exit 1; }

[[ $plain_status -eq 0 ]] || fail "the test fails without XMLT_REQUIRE_GPU"
if grep -q '\[  SKIPPED \]' <<< "$plain"; then
  grep -q 'no CUDA device (.*): the CUDA code cannot run here' <<< "$plain" ||
    fail "the skip does not say why there is no GPU"
  [[ $required_status -ne 0 ]] || fail "XMLT_REQUIRE_GPU=1 without a GPU passed"
  grep -q 'XMLT_REQUIRE_GPU is set but no CUDA device can run this test: ' <<< "$required" ||
    fail "the failure does not say that a GPU was required"
  echo "no GPU here: skipped without XMLT_REQUIRE_GPU, failed with it"
else
  [[ $required_status -eq 0 ]] || fail "XMLT_REQUIRE_GPU=1 fails on a machine whose GPU runs the test"
  ! grep -q '\[  SKIPPED \]' <<< "$required" || fail "a test skipped although a GPU was required"
  echo "a GPU here: the test ran, with and without XMLT_REQUIRE_GPU"
fi
