// Dealing on the wall clock, dynamic, across ranks. No rank can wait for the others' word after
// each batch (a message per batch across servers), so the mega-batch's rows are shared out between
// the ranks in proportion to how fast their devices trained in the last mega-batch (RankShares),
// and each rank deals its share dynamically to its own devices, as the wall-clock dealer does.
// Every rank takes every share's rows from the queue, in rank order, so the queues stay alike;
// then the ranks swap what they dealt and what it gave, and every rank tallies the same plan. The
// shares are re-balanced after every mega-batch; within one, the ranks can end apart by up to about
// a batch per device (the price of no message per batch). See dealer.h.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "scheduler/dealer.h"
#include "scheduler/rank_exchange.h"
#include "scheduler/result_tally.h"

namespace xmlt::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class RankShareDealer : public Dealer {
 public:
  explicit RankShareDealer(DevicePool& pool) : pool_(pool), rows_per_s_(pool.size(), 0.0) {}

  Dealt Deal(const DealRequest& request, MegaBatchRun* run) override {
    if (!request.continues) pool_.planner().BeginMegaBatch();
    ranks::RankGroup& ranks = *pool_.ranks();
    const size_t me = size_t(ranks.rank()), rank_count = size_t(ranks.size());
    const Clock::time_point start = Clock::now();
    const std::vector<size_t> begin = TakeShares(RankShares(std::min(request.budget, request.cap)));

    // My share, dealt to my devices as they come back.
    RankDeal mine;
    size_t next = begin[me];
    std::vector<size_t> my_devices;
    for (size_t i : pool_.alive())
      if (pool_.local(i)) my_devices.push_back(i);
    const std::vector<engine::BatchResult> my_results =
        DealAsDevicesReturn(pool_, my_devices, [&](size_t i, uint64_t id) {
          if (next >= begin[me + 1]) return false;
          const size_t want = RowsForBatch(pool_.states()[i].batch);
          const size_t count = std::min<size_t>(want, begin[me + 1] - next);
          const Assignment a{i, next, count, pool_.planner().DrawSlowdown(i), double(count) / double(want)};
          mine.batches.push_back(DealtBatch{a.device, a.offset, a.count, a.slowdown});
          next += count;
          pool_.Submit(i, pool_.TaskFor(a, id));
          return true;
        });
    mine.dealt_to = next;
    mine.span_s = Seconds(Clock::now() - start);

    // Every rank's batches, in rank order: one plan, the same everywhere.
    const std::vector<RankDeal> deals = ShareDeals(ranks, mine);
    std::vector<Assignment> plan;
    std::vector<engine::BatchResult> results;
    Dealt dealt;
    double span_s = 0;
    for (size_t r = 0; r < rank_count; ++r) {
      const RankDeal& deal = deals[r];
      if (deal.dealt_to < begin[r] || deal.dealt_to > begin[r + 1])
        throw std::runtime_error("rank " + std::to_string(r) + " dealt rows outside its share");
      for (size_t k = 0; k < deal.batches.size(); ++k) {
        const DealtBatch& b = deal.batches[k];
        if (b.device >= pool_.size() || pool_.owner(b.device) != int(r) || b.offset < begin[r] ||
            b.offset + b.count > deal.dealt_to)
          throw std::runtime_error("rank " + std::to_string(r) + " dealt a batch it does not own");
        const Assignment a{size_t(b.device), size_t(b.offset), size_t(b.count), b.slowdown};
        if (r == me) {
          results.push_back(my_results[k]);
        } else {
          // What the owner's dealing used up here too: the device's slowdown draw and a fault due.
          pool_.planner().DrawSlowdown(a.device);
          pool_.TaskFor(a, plan.size());
          results.emplace_back();
        }
        results.back().id = plan.size();
        plan.push_back(a);
        dealt.rows += a.count;
      }
      // Rows of a share left undealt (its rank's devices all failed) go back to the queue.
      pool_.rows().Return(deal.dealt_to, begin[r + 1]);
      span_s = std::max(span_s, deal.span_s);
    }
    pool_.ShareResults(plan, &results);
    TallyResults(pool_, plan, results, run);
    Measure(plan, results, run);
    run->span_s += span_s;
    return dealt;
  }

 private:
  // Every rank's share of rows taken into the arena, in rank order; returns where each begins
  // (and, last, where the last ends).
  std::vector<size_t> TakeShares(const std::vector<uint64_t>& share) {
    const size_t rank_count = share.size();
    std::vector<size_t> begin(rank_count + 1, 0);
    size_t used = 0;
    for (size_t r = 0; r < rank_count; ++r) {
      begin[r] = used;
      for (uint64_t want = share[r]; want > 0;) {
        pool_.rows().CheckFits(used, want);
        const size_t got = pool_.rows().Take(want, used);
        if (got == 0) break;  // the epoch ended (the budget never passes it)
        used += got;
        want -= got;
      }
    }
    begin[rank_count] = used;
    return begin;
  }

  // `rows` shared out over the ranks in proportion to their surviving devices' rows per second;
  // until every one of them has been measured, to their count, each weighted by 1 / its --speed.
  // Largest remainders, ties to the lower rank: the same shares on every rank.
  std::vector<uint64_t> RankShares(uint64_t rows) const {
    const SchedulerOptions& scheduling = pool_.scheduling();
    const size_t rank_count = size_t(pool_.ranks()->size());
    const std::vector<size_t> devices = pool_.alive();
    bool measured = true;
    for (size_t i : devices) measured = measured && rows_per_s_[i] > 0;
    std::vector<double> rate(rank_count, 0.0);
    for (size_t i : devices) {
      const std::vector<double>& speed = scheduling.heterogeneity.speed;
      rate[pool_.owner(i)] += measured ? rows_per_s_[i] : 1.0 / (speed.empty() ? 1.0 : speed[i]);
    }
    const double total = std::accumulate(rate.begin(), rate.end(), 0.0);
    std::vector<uint64_t> share(rank_count, 0);
    if (total <= 0) return share;
    std::vector<std::pair<double, size_t>> remainder;
    uint64_t given = 0;
    for (size_t r = 0; r < rank_count; ++r) {
      const double exact = double(rows) * rate[r] / total;
      share[r] = std::min<uint64_t>(uint64_t(std::floor(exact)), rows - given);
      given += share[r];
      remainder.push_back({-(exact - std::floor(exact)), r});
    }
    std::sort(remainder.begin(), remainder.end());
    for (size_t k = 0; given < rows; k = (k + 1) % rank_count)
      if (rate[remainder[k].second] > 0) ++share[remainder[k].second], ++given;
    return share;
  }

  // Busy times into `run`, and each device's rows per second for the next mega-batch's shares.
  void Measure(const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
               MegaBatchRun* run) {
    std::vector<double> busy_s(pool_.size(), 0.0);
    std::vector<uint64_t> rows(pool_.size(), 0);
    for (size_t k = 0; k < plan.size(); ++k) {
      if (pool_.dropped(plan[k].device)) continue;
      busy_s[plan[k].device] += results[k].busy_s;
      rows[plan[k].device] += plan[k].count;
    }
    for (size_t i = 0; i < pool_.size(); ++i) {
      run->busy_s[i] += busy_s[i];
      if (rows[i] > 0 && busy_s[i] > 0) rows_per_s_[i] = double(rows[i]) / busy_s[i];
    }
  }

  DevicePool& pool_;
  // Each device's rows per second in the last mega-batch it trained in (0: not measured yet).
  std::vector<double> rows_per_s_;
};

}  // namespace

std::unique_ptr<Dealer> MakeRankShareDealer(DevicePool& pool) { return std::make_unique<RankShareDealer>(pool); }

}  // namespace xmlt::scheduler
