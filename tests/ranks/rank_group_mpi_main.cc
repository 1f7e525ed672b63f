// The MPI rank group under mpirun (-np 2 and -np 3 in ctest): sums of sizes that the rank count
// does not divide, and one past a chunk, against a serial reference and with the same bits on
// every rank, summed in rank order; all-gathers of unequal lengths; a broadcast from the last rank.
// Every rank checks; the process fails if any check failed on it. With --hang, rank 1 skips a sum,
// and rank 0 must end the run within its timeout with a message naming itself.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ranks/rank_group.h"

namespace {

int failures = 0;

void Check(bool ok, int rank, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

template <class T>
T ValueAt(int rank, uint64_t j) {
  return T(double(j % 97) * 0.37 + rank * 1.1 + 1.0 / double(j + 1));
}

// Every rank's copy of `values` is byte-for-byte the same as rank 0's.
template <class T>
bool SameOnEveryRank(xmlt::ranks::RankGroup& group, const std::vector<T>& values) {
  const auto* begin = reinterpret_cast<const uint8_t*>(values.data());
  const std::vector<uint8_t> mine(begin, begin + values.size() * sizeof(T));
  for (const std::vector<uint8_t>& other : group.AllGather(mine))
    if (other != mine) return false;
  return true;
}

template <class T>
void CheckSum(xmlt::ranks::RankGroup& group, uint64_t count, const char* type) {
  // Every rank's input, computed once here, so that the reference adds the very bits the ranks
  // sent (ValueAt inlined in two loops may contract differently).
  std::vector<std::vector<T>> inputs(group.size(), std::vector<T>(count));
  for (int r = 0; r < group.size(); ++r)
    for (uint64_t j = 0; j < count; ++j) inputs[r][j] = ValueAt<T>(r, j);
  std::vector<T> values = inputs[group.rank()];
  group.SumInPlace(values.data(), count);
  double worst = 0;
  bool in_rank_order = true;  // the documented order: the same bits as this serial sum
  for (uint64_t j = 0; j < count; ++j) {
    double reference = 0;
    T serial = inputs[0][j];
    for (int r = 0; r < group.size(); ++r) reference += double(inputs[r][j]);
    for (int r = 1; r < group.size(); ++r) serial += inputs[r][j];
    worst = std::max(worst, std::abs(double(values[j]) - reference) / std::max(1.0, std::abs(reference)));
    in_rank_order &= std::memcmp(&serial, &values[j], sizeof(T)) == 0;
  }
  const std::string what = std::string("sum of ") + std::to_string(count) + " " + type;
  Check(in_rank_order, group.rank(), what + ": not summed in rank order");
  Check(worst < (sizeof(T) == 4 ? 1e-6 : 1e-14), group.rank(), what + ": relative error " + std::to_string(worst));
  if (count < 2000000) Check(SameOnEveryRank(group, values), group.rank(), what + ": ranks differ");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc == 2 && std::string(argv[1]) == "--hang") {
    // Rank 1 never joins a sum: rank 0 must end the run within its timeout, naming itself (the
    // ctest checks the message and the exit code); rank 1 must not be the one to end it.
    std::unique_ptr<xmlt::ranks::RankGroup> hasty = xmlt::ranks::JoinRankGroup(300ms);
    float x = 1;
    if (hasty->rank() == 0) hasty->SumInPlace(&x, 1);
    std::this_thread::sleep_for(60s);
    return 0;
  }
  std::unique_ptr<xmlt::ranks::RankGroup> group = xmlt::ranks::JoinRankGroup(60s);
  const int rank = group->rank(), size = group->size();
  Check(size >= 2, rank, "started with fewer than 2 ranks: run it under mpirun -np 2 or more");

  for (uint64_t count : {0ull, 1ull, 7ull, 1000003ull}) {
    CheckSum<float>(*group, count, "floats");
    CheckSum<double>(*group, count, "doubles");
  }
  CheckSum<float>(*group, (uint64_t{1} << 24) + 5, "floats (past one chunk)");

  // Unequal lengths, rank 0's empty.
  std::vector<uint8_t> mine(size_t(rank) * 3, uint8_t(rank + 1));
  const std::vector<std::vector<uint8_t>> all = group->AllGather(mine);
  Check(int(all.size()) == size, rank, "all-gather: one entry per rank");
  for (int r = 0; r < int(all.size()); ++r)
    Check(all[r] == std::vector<uint8_t>(size_t(r) * 3, uint8_t(r + 1)), rank, "all-gather: rank " + std::to_string(r));

  std::vector<float> broadcast(1001, float(rank));
  group->Broadcast(broadcast.data(), broadcast.size(), size - 1);
  Check(broadcast == std::vector<float>(1001, float(size - 1)), rank, "broadcast from the last rank");
  std::vector<uint16_t> bits(1001, uint16_t(rank));
  group->Broadcast(bits.data(), bits.size(), size - 1);
  Check(bits == std::vector<uint16_t>(1001, uint16_t(size - 1)), rank, "broadcast of bf16 values from the last rank");

  // From the last rank to rank 0, past one chunk; the ranks between are not touched (null).
  const uint64_t copied = (uint64_t{1} << 24) + 3;
  std::vector<float> copy(rank == 0 || rank == size - 1 ? copied : 0, float(rank));
  if (rank == size - 1) copy.back() = -1;
  group->Copy(copy.empty() ? nullptr : copy.data(), copied, size - 1, 0);
  if (rank == 0)
    Check(copy.front() == float(size - 1) && copy[copied / 2] == float(size - 1) && copy.back() == -1, rank,
          "copy from the last rank to rank 0");
  std::vector<uint16_t> copied_bits(rank == 0 || rank == size - 1 ? 1001 : 0, uint16_t(rank + 1));
  group->Copy(copied_bits.empty() ? nullptr : copied_bits.data(), 1001, size - 1, 0);
  if (rank == 0)
    Check(copied_bits == std::vector<uint16_t>(1001, uint16_t(size)), rank, "copy of bf16 values to rank 0");

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && failures == 0) std::printf("rank group under mpirun -np %d: all checks passed\n", size);
  return failures == 0 ? 0 : 1;
}
