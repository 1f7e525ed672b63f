// What the ranks tell each other; see rank_exchange.h.
#include "scheduler/rank_exchange.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "data/byte_reader.h"
#include "data/byte_writer.h"
#include "scheduler/fault_text.h"

namespace xmlt::scheduler {
namespace {

// The largest of every rank's `value`, a trivially copyable number.
template <class T>
T MaxOverRanks(ranks::RankGroup& ranks, T value) {
  std::vector<uint8_t> mine(sizeof(T));
  std::memcpy(mine.data(), &value, sizeof(T));
  T result = value;
  for (const std::vector<uint8_t>& bytes : ranks.AllGather(mine)) {
    T other = value;
    if (bytes.size() == sizeof(T)) std::memcpy(&other, bytes.data(), sizeof(T));
    result = std::max(result, other);
  }
  return result;
}

}  // namespace

void ShareBatchResults(ranks::RankGroup& ranks, const std::vector<int>& device_rank,
                       const std::vector<size_t>& devices, std::vector<engine::BatchResult>* results) {
  if (devices.size() != results->size()) throw std::logic_error("ShareBatchResults: plan and results differ");
  // Only this rank's batches travel, each with its index in the plan.
  data::ByteWriter mine;
  for (size_t k = 0; k < devices.size(); ++k) {
    if (device_rank[devices[k]] != ranks.rank()) continue;
    const engine::BatchResult& r = (*results)[k];
    const std::string error = r.error ? FaultText(r.error) : std::string();
    mine.Append<uint64_t>(k);
    mine.Append<uint64_t>(r.count);
    mine.Append<double>(r.loss_sum);
    mine.Append<uint32_t>(r.labeled_rows);
    mine.Append<double>(r.compute_s);
    mine.Append<double>(r.busy_s);
    mine.Append<uint64_t>(error.size());
    mine.AppendBytes(error.data(), error.size());
    mine.Append<uint8_t>(r.context_lost ? 1 : 0);
  }
  const auto* begin = reinterpret_cast<const uint8_t*>(mine.data());
  const std::vector<std::vector<uint8_t>> all = ranks.AllGather(std::vector<uint8_t>(begin, begin + mine.size()));
  for (int rank = 0; rank < ranks.size(); ++rank) {
    if (rank == ranks.rank()) continue;
    const std::vector<uint8_t>& bytes = all[rank];
    data::ByteReader in(reinterpret_cast<const char*>(bytes.data()), bytes.size(), "rank " + std::to_string(rank),
                        "batch results");
    while (in.remaining() > 0) {
      const uint64_t k = in.Read<uint64_t>("plan index");
      if (k >= devices.size() || device_rank[devices[k]] != rank)
        throw std::runtime_error("rank " + std::to_string(rank) + " sent a result for a batch it does not own");
      engine::BatchResult& r = (*results)[k];
      r.device = devices[k];
      r.id = k;
      r.count = in.Read<uint64_t>("rows");
      r.loss_sum = in.Read<double>("loss");
      r.labeled_rows = in.Read<uint32_t>("labeled rows");
      r.compute_s = in.Read<double>("compute time");
      r.busy_s = in.Read<double>("busy time");
      const uint64_t length = in.Read<uint64_t>("error length");
      const std::string error(in.ReadBytes(length, "error"), length);
      r.error = error.empty() ? nullptr : std::make_exception_ptr(std::runtime_error(error));
      r.context_lost = in.Read<uint8_t>("context lost") != 0;
    }
  }
}

void SendReplicasToEveryRank(ranks::RankGroup& ranks, const std::vector<int>& device_rank,
                             const std::vector<size_t>& ids, const std::vector<engine::Device*>& devices) {
  for (size_t k = 0; k < devices.size(); ++k) {
    engine::Device& d = *devices[k];
    // A replica with bf16 weights travels as its bits, as its mirrors keep it (every rank makes its
    // mirrors with the run's --weights, so all make the same call).
    if (d.KeepsBf16Weights()) {
      ranks.Broadcast(d.HostBf16Params(), d.NumParams(), device_rank.at(ids[k]));
    } else {
      ranks.Broadcast(d.HostParams(), d.NumParams(), device_rank.at(ids[k]));
    }
  }
}

void SendReplicasToRoot(ranks::RankGroup& ranks, int root, const std::vector<int>& device_rank,
                        const std::vector<size_t>& ids, const std::vector<engine::Device*>& devices) {
  const int me = ranks.rank();
  for (size_t k = 0; k < devices.size(); ++k) {
    engine::Device& d = *devices[k];
    const int owner = device_rank.at(ids[k]);
    if (owner == root) continue;
    // A bystander neither reads nor makes its mirror (HostParams would allocate it).
    const bool involved = me == owner || me == root;
    if (d.KeepsBf16Weights()) {
      ranks.Copy(involved ? d.HostBf16Params() : nullptr, d.NumParams(), owner, root);
    } else {
      ranks.Copy(involved ? d.HostParams() : nullptr, d.NumParams(), owner, root);
    }
    // The owner's state, or empty (no local momentum): its size goes first, to every rank, so
    // that all make the same calls. A momentum buffer holds a value per parameter, a sampled
    // device's Adagrad squares fewer; the size travels as two 24-bit halves, each exact in a float.
    std::vector<float> state = me == owner ? d.SaveOptimizerState() : std::vector<float>{};
    float size[2] = {float(state.size() >> 24), float(state.size() & 0xFFFFFF)};
    ranks.Broadcast(size, 2, owner);
    const size_t count = size_t(size[0]) << 24 | size_t(size[1]);
    if (count == 0) continue;
    if (me == root) state.resize(count);
    ranks.Copy(involved ? state.data() : nullptr, count, owner, root);
    if (me == root) d.RestoreOptimizerState(state);
  }
  // The owners' extra states (the dropout masks' step counts, a sampled device's tables), which
  // a resume needs as much as the momentum: each rank's as (index, size, bytes) records, gathered
  // by every rank (a collective), kept by the root's mirrors.
  std::vector<uint8_t> mine;
  for (size_t k = 0; k < devices.size(); ++k) {
    if (device_rank.at(ids[k]) != me || me == root) continue;
    const std::vector<uint8_t> extra = devices[k]->SaveExtraState();
    if (extra.empty()) continue;
    const uint64_t header[2] = {k, extra.size()};
    const auto* bytes = reinterpret_cast<const uint8_t*>(header);
    mine.insert(mine.end(), bytes, bytes + sizeof header);
    mine.insert(mine.end(), extra.begin(), extra.end());
  }
  const std::vector<std::vector<uint8_t>> all = ranks.AllGather(mine);
  if (me != root) return;
  for (const std::vector<uint8_t>& records : all) {
    for (size_t at = 0; at < records.size();) {
      uint64_t header[2];
      if (records.size() - at < sizeof header) throw std::runtime_error("a rank's extra device state is cut short");
      std::memcpy(header, records.data() + at, sizeof header);
      at += sizeof header;
      if (header[0] >= devices.size() || records.size() - at < header[1])
        throw std::runtime_error("a rank's extra device state names no device of this run");
      devices[header[0]]->RestoreExtraState(
          std::vector<uint8_t>(records.begin() + long(at), records.begin() + long(at + header[1])));
      at += header[1];
    }
  }
}

void ShareEvaluations(ranks::RankGroup& ranks, const std::vector<int>& owner,
                      std::vector<engine::EvaluationSums>* parts) {
  static_assert(std::is_trivially_copyable_v<engine::EvaluationSums>, "evaluation sums travel as bytes");
  std::vector<uint8_t> mine;
  for (size_t k = 0; k < parts->size(); ++k) {
    if (owner[k] != ranks.rank()) continue;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&(*parts)[k]);
    mine.insert(mine.end(), bytes, bytes + sizeof(engine::EvaluationSums));
  }
  const std::vector<std::vector<uint8_t>> all = ranks.AllGather(mine);
  for (int rank = 0; rank < ranks.size(); ++rank) {
    if (rank == ranks.rank()) continue;
    size_t at = 0;
    for (size_t k = 0; k < parts->size(); ++k) {
      if (owner[k] != rank) continue;
      if (at + sizeof(engine::EvaluationSums) > all[rank].size())
        throw std::runtime_error("rank " + std::to_string(rank) + " sent too few evaluation parts");
      std::memcpy(&(*parts)[k], all[rank].data() + at, sizeof(engine::EvaluationSums));
      at += sizeof(engine::EvaluationSums);
    }
  }
}

std::vector<RankDeal> ShareDeals(ranks::RankGroup& ranks, const RankDeal& mine) {
  data::ByteWriter out;
  out.Append<uint64_t>(mine.dealt_to);
  out.Append<double>(mine.span_s);
  out.Append<uint64_t>(mine.batches.size());
  for (const DealtBatch& b : mine.batches) {
    out.Append<uint64_t>(b.device);
    out.Append<uint64_t>(b.offset);
    out.Append<uint64_t>(b.count);
    out.Append<double>(b.slowdown);
  }
  const auto* begin = reinterpret_cast<const uint8_t*>(out.data());
  const std::vector<std::vector<uint8_t>> all = ranks.AllGather(std::vector<uint8_t>(begin, begin + out.size()));
  std::vector<RankDeal> deals(all.size());
  for (size_t rank = 0; rank < all.size(); ++rank) {
    data::ByteReader in(reinterpret_cast<const char*>(all[rank].data()), all[rank].size(),
                        "rank " + std::to_string(rank), "dealt batches");
    RankDeal& deal = deals[rank];
    deal.dealt_to = in.Read<uint64_t>("dealt position");
    deal.span_s = in.Read<double>("span");
    const uint64_t count = in.Read<uint64_t>("batch count");
    // Each batch takes 32 bytes: a count beyond the bytes is a corrupt message, not an allocation.
    if (count > in.remaining() / 32)
      throw std::runtime_error("rank " + std::to_string(rank) + " sent a truncated deal");
    deal.batches.resize(count);
    for (DealtBatch& b : deal.batches) {
      b.device = in.Read<uint64_t>("device");
      b.offset = in.Read<uint64_t>("offset");
      b.count = in.Read<uint64_t>("count");
      b.slowdown = in.Read<double>("slowdown");
    }
  }
  return deals;
}

int AgreeOnMax(ranks::RankGroup& ranks, int value) { return MaxOverRanks(ranks, value); }
double AgreeOnMax(ranks::RankGroup& ranks, double value) { return MaxOverRanks(ranks, value); }

double FromRank(ranks::RankGroup& ranks, double value, int root) {
  double sum = ranks.rank() == root ? value : 0.0;
  ranks.SumInPlace(&sum, 1);
  return sum;
}

}  // namespace xmlt::scheduler
