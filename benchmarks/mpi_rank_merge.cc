// The cross-rank merge at the Amazon-670K model's size (135,909 x 128 x 670,091: 103.8M floats,
// 415 MB), run under an MPI launcher: each rank holds `--local` replicas, and every repetition
// times, between barriers,
//   allreduce      a plain MPI_Allreduce(MPI_SUM) of the model's bytes, in place (the peer);
//   rank_sum       RankGroup::SumInPlace of the same bytes (our cross-rank step: a reduce-scatter
//                  then an all-gather, chunked, polled against the timeout);
//   local_sum      the rank's own replicas summed on the CPU partitioned collective (no ranks);
//   merge          the whole hierarchical merge (local sum, rank sum, global momentum, written
//                  into every local replica): what a weighted merge of a run over ranks costs;
//   merge_bf16     the same merge of replicas that keep bf16 weights (--weights bf16): the local
//                  sums of the widened replicas into an fp32 chunk, the rank sum of the chunks,
//                  the momentum moved to the rounded start, the total rounded into the replicas;
//   memcpy         one copy of the model's bytes on this rank (the memory's pace, for scale).
// Rank 0 prints the median and the minimum of each, and rank_sum / allreduce from the same run.
// Usage: mpirun -np R mpi_rank_merge [--local K] [--repeats N] [--floats F]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/model.h"
#include "merge/collective.h"
#include "merge/global_momentum.h"
#include "merge/rank_sum_collective.h"
#include "ranks/rank_group.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  std::string name;
  std::vector<double> seconds;
};

// Seconds of `body` on the slowest rank: a collective's time is its last rank's.
double TimeOnAllRanks(const std::function<void()>& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const Clock::time_point start = Clock::now();
  body();
  double mine = std::chrono::duration<double>(Clock::now() - start).count(), slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

void Fill(std::vector<float>& values, int seed) {
  for (size_t j = 0; j < values.size(); ++j) values[j] = float((j * 2654435761u + seed) % 2001) * 1e-3f - 1.0f;
}

}  // namespace

int main(int argc, char** argv) {
  int local = 2, repeats = 5;
  xmlt::kernels::ModelShape amazon{135909, {128}, 670091};
  uint64_t floats = amazon.NumParameters();
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    if (flag == "--local") local = std::atoi(argv[a + 1]);
    else if (flag == "--repeats") repeats = std::atoi(argv[a + 1]);
    else if (flag == "--floats") floats = std::strtoull(argv[a + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "mpi_rank_merge: unknown flag %s\n", argv[a]);
      return 2;
    }
  }
  if (local < 1 || repeats < 1 || floats == 0 || floats > uint64_t(INT32_MAX)) {
    std::fprintf(stderr, "mpi_rank_merge: --local and --repeats must be positive, --floats in 1..2^31-1\n");
    return 2;
  }
  std::unique_ptr<xmlt::ranks::RankGroup> group = xmlt::ranks::JoinRankGroup(std::chrono::seconds(600));
  const int rank = group->rank(), ranks = group->size();

  // This rank's replicas, then the other ranks' (never touched by the hierarchical merge: they
  // alias the first local replica so that no memory is spent on them).
  std::vector<std::vector<float>> replicas(local, std::vector<float>(floats));
  for (int k = 0; k < local; ++k) Fill(replicas[k], rank * local + k);
  xmlt::merge::ReplicaSet set;
  set.size = floats;
  std::vector<bool> is_local;
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k < local; ++k) {
      set.members.push_back({r == rank ? replicas[k].data() : replicas[0].data()});
      is_local.push_back(r == rank);
    }
  const std::vector<double> weights(set.count(), 1.0 / double(set.count()));
  xmlt::merge::ReplicaSet mine;
  mine.size = floats;
  for (auto& r : replicas) mine.members.push_back({r.data()});
  const std::vector<double> my_weights(local, 1.0 / double(set.count()));

  xmlt::merge::GlobalModel global{replicas[0], replicas[0]};
  auto hierarchical = xmlt::merge::MakeRankSumCollective(xmlt::merge::MakeCollective("ring", set.count()), *group,
                                                         is_local);
  auto local_collective = xmlt::merge::MakeCollective("ring", set.count());
  std::vector<float> buffer(floats), copy(floats);
  Fill(buffer, rank);

  // The same replicas in bf16, as --weights bf16 keeps them; the other ranks' members null.
  std::vector<std::vector<uint16_t>> bf16_replicas(local, std::vector<uint16_t>(floats));
  for (int k = 0; k < local; ++k)
    for (uint64_t j = 0; j < floats; ++j) bf16_replicas[k][j] = xmlt::kernels::cpu::NearestBf16(replicas[k][j]);
  xmlt::merge::ReplicaSet bf16_set;
  bf16_set.size = floats;
  bf16_set.weights_in_bf16 = true;
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k < local; ++k)
      bf16_set.members.push_back(r == rank ? xmlt::base::ReplicaParams{nullptr, -1, bf16_replicas[k].data()}
                                           : xmlt::base::ReplicaParams{});
  xmlt::merge::GlobalModel bf16_global{replicas[0], replicas[0]};

  std::vector<Timing> timings = {{"allreduce", {}}, {"rank_sum", {}}, {"local_sum", {}},
                                 {"merge", {}},     {"memcpy", {}},   {"merge_bf16", {}}};
  for (int repeat = 0; repeat < repeats; ++repeat) {
    timings[0].seconds.push_back(TimeOnAllRanks(
        [&] { MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }));
    timings[1].seconds.push_back(TimeOnAllRanks([&] { group->SumInPlace(buffer.data(), floats); }));
    timings[2].seconds.push_back(
        TimeOnAllRanks([&] { local_collective->WeightedAllReduce(mine, my_weights, nullptr); }));
    timings[3].seconds.push_back(TimeOnAllRanks([&] {
      hierarchical->WeightedAllReduce(set, weights, xmlt::merge::GlobalMomentumFinish(&global, 0.9));
    }));
    timings[4].seconds.push_back(
        TimeOnAllRanks([&] { std::memcpy(copy.data(), buffer.data(), floats * sizeof(float)); }));
    timings[5].seconds.push_back(TimeOnAllRanks([&] {
      hierarchical->WeightedAllReduceWithMomentum(bf16_set, weights, 0.9, xmlt::merge::MomentumMode::kHeavy,
                                                  &bf16_global);
    }));
    Fill(buffer, rank);  // keep the sums finite
  }

  if (rank == 0) {
    std::printf("ranks %d, local replicas %d, %llu floats (%.1f MB) a model, %d repeats\n", ranks, local,
                (unsigned long long)floats, floats * 4e-6, repeats);
    std::printf("%-10s %10s %10s %10s\n", "step", "median_ms", "min_ms", "GB/s");
    std::vector<double> medians;
    for (Timing& t : timings) {
      std::sort(t.seconds.begin(), t.seconds.end());
      const double median = t.seconds[t.seconds.size() / 2];
      medians.push_back(median);
      std::printf("%-10s %10.1f %10.1f %10.2f\n", t.name.c_str(), median * 1e3, t.seconds.front() * 1e3,
                  floats * 4e-9 / median);
    }
    std::printf("rank_sum / allreduce = %.2f (medians, same run)\n", medians[1] / medians[0]);
    std::printf("merge / allreduce = %.2f\n", medians[3] / medians[0]);
    std::printf("merge_bf16 / merge = %.2f (medians, same run)\n", medians[5] / medians[3]);
  }
  return 0;
}
