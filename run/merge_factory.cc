// The table of merges, {rule} x {host, GPUs}; see merge_factory.h.
#include "run/merge_factory.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "merge/collective.h"
#include "merge/rank_sum_collective.h"
#include "ranks/rank_group.h"
#ifdef XMLT_HAVE_CUDA
#include "merge/gpu/gpu_mergers.h"
#endif

namespace xmlt::run {
namespace {

// The host collective of the weighted merges; across ranks the rank's own collective keeps the
// one-process partitioning, so that norms are the same bits.
std::shared_ptr<merge::Collective> HostCollective(const scheduler::SchedulerOptions& scheduling, const MergeSite& site) {
  std::shared_ptr<merge::Collective> collective = merge::MakeCollective(scheduling.collective, site.devices);
  if (!site.is_local.empty() && scheduler::MergesByWeightedSum(scheduling))
    collective = merge::MakeRankSumCollective(merge::MakeCollective(scheduling.collective, site.devices), *site.ranks,
                                              site.is_local);
  return collective;
}

#ifdef XMLT_HAVE_CUDA
// The GPUs' collective of the weighted merges: the ring or NCCL; across ranks NCCL over every
// rank's GPUs.
std::shared_ptr<merge::Collective> GpuCollective(const scheduler::SchedulerOptions& scheduling, const MergeSite& site) {
  if (!site.owners.empty()) {
    ranks::RankGroup* group = site.ranks;
    // Rank 0's NCCL id reaches every rank through the rank group (its bytes overwrite the others').
    const auto from_rank0 = [group](uint8_t* bytes, size_t size) {
      const std::vector<std::vector<uint8_t>> all = group->AllGather(std::vector<uint8_t>(bytes, bytes + size));
      std::copy(all[0].begin(), all[0].end(), bytes);
    };
    return merge::gpu::MakeGpuCollectiveAcrossRanks(*site.replicas,
                                                    merge::gpu::NcclRanks{group->rank(), site.owners, from_rank0});
  }
  const merge::gpu::GpuCollectiveKind kind = scheduling.collective == merge::CollectiveKind::kNccl
                                                 ? merge::gpu::GpuCollectiveKind::kNccl
                                                 : merge::gpu::GpuCollectiveKind::kRing;
  return merge::gpu::MakeGpuCollective(kind, *site.replicas);
}
std::unique_ptr<merge::Merger> GpuAdasum(const merge::MergeOptions& options, const MergeSite& site) {
  return merge::gpu::MakeGpuAdasumMerger(options, *site.replicas);
}
std::unique_ptr<merge::Merger> GpuElasticForce(const merge::MergeOptions& options, const MergeSite& site) {
  return merge::gpu::MakeGpuElasticForceMerger(options, *site.replicas);
}
#else
[[noreturn]] void NoGpus() { throw std::logic_error("merges on GPUs need the CUDA backend"); }
std::shared_ptr<merge::Collective> GpuCollective(const scheduler::SchedulerOptions&, const MergeSite&) { NoGpus(); }
std::unique_ptr<merge::Merger> GpuAdasum(const merge::MergeOptions&, const MergeSite&) { NoGpus(); }
std::unique_ptr<merge::Merger> GpuElasticForce(const merge::MergeOptions&, const MergeSite&) { NoGpus(); }
#endif

}  // namespace

std::unique_ptr<merge::Merger> CreateMerger(const scheduler::SchedulerOptions& scheduling, const MergeSite& site) {
  const bool on_gpus = site.place == MergePlace::kGpus;
#ifndef XMLT_HAVE_CUDA
  if (on_gpus) NoGpus();
#endif
  const merge::MergeOptions& options = scheduling.merge_rule;
  // The weighted merges' collective: on the host made for every rule (a collective the host lacks
  // fails them all alike), on the GPUs only for the rules that sum.
  const std::shared_ptr<merge::Collective> host = on_gpus ? nullptr : HostCollective(scheduling, site);
  const auto collective = [&] { return on_gpus ? GpuCollective(scheduling, site) : host; };
  using Merge = scheduler::SchedulerOptions::Merge;
  switch (scheduling.merge) {
    case Merge::kNormalized: return merge::MakeNormalizedMerger(options, collective());
    case Merge::kAverage:
      if (!(options.elastic_alpha > 0)) return merge::MakeAverageMerger(options, collective());
      [[fallthrough]];  // an average with a pull strength: the elastic force
    case Merge::kCrossbow:
      return on_gpus ? GpuElasticForce(options, site) : merge::MakeElasticForceMerger(options, collective());
    case Merge::kAdasum: return on_gpus ? GpuAdasum(options, site) : merge::MakeAdasumMerger(options);
    case Merge::kGradient: return merge::MakeGradientMerger(options, collective());
    case Merge::kCopy: {
      if (!on_gpus) return merge::MakeCopyMerger();
      // On the GPUs the one replica taken as w, w_p <- w: an average of one with no momentum.
      merge::MergeOptions average_of_one = options;
      average_of_one.momentum = 0;
      average_of_one.momentum_mode = merge::MomentumMode::kHeavy;
      return merge::MakeAverageMerger(average_of_one, collective());
    }
  }
  throw std::logic_error("unknown merge");
}

}  // namespace xmlt::run
