// The devices' part of a checkpoint; see pool_checkpoint.h.
#include "run/pool_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "data/input_error.h"

namespace xmlt::run {
namespace {

std::string SectionPrefix(size_t device) { return "device." + std::to_string(device) + "."; }

// The state of the data, common to every device set.
void RestoreDataState(scheduler::DevicePool& pool, const CheckpointReader& reader, const nlohmann::json& meta) {
  const std::string& source = reader.source();
  scheduler::RowQueue& rows = pool.rows();
  rows.sampler().Restore(reader.Read<uint64_t>("sampler.order"), meta.at("sampler_cursor").get<uint64_t>(),
                         meta.at("sampler_rng").get<std::string>());
  std::vector<uint64_t>& returned = rows.returned();
  returned = reader.Read<uint64_t>("requeued");
  // At most a mega-batch's rows plus what a shrinking one left over: never two arenas' worth. An
  // elastic restart may come from more devices, whose arena was larger: bounded by the rows then.
  if (returned.size() > std::max<size_t>(2 * rows.arena_size(), rows.sampler().order().size()))
    throw data::InputError(source, 0, "more returned rows than a mega-batch holds");
  std::vector<uint64_t> trainable = rows.sampler().order();
  std::sort(trainable.begin(), trainable.end());
  for (uint64_t row : returned)
    if (!std::binary_search(trainable.begin(), trainable.end(), row))
      throw data::InputError(source, 0, "returned row " + std::to_string(row) + " is not a training row here");
  pool.row_cost_s() = meta.at("row_cost_s").get<double>();
  pool.loss_watch().Restore(meta.value("loss_reference", 0.0));
}

std::vector<scheduler::FaultInjection> ReadPendingFaults(const nlohmann::json& meta, size_t devices) {
  std::vector<scheduler::FaultInjection> pending;
  for (const nlohmann::json& f : meta.at("pending_faults")) {
    scheduler::FaultInjection fault;
    fault.device = f.at(0).get<size_t>();
    fault.megabatch = f.at(1).get<uint64_t>();
    const int kind = f.at(2).get<int>();
    if (kind != int(scheduler::FaultInjection::Kind::kFail) && kind != int(scheduler::FaultInjection::Kind::kNaN) &&
        kind != int(scheduler::FaultInjection::Kind::kLost))
      throw std::invalid_argument("pending fault of unknown kind " + std::to_string(kind));
    fault.kind = scheduler::FaultInjection::Kind(kind);
    if (fault.device >= devices) throw std::invalid_argument("pending fault for a device that does not exist");
    pending.push_back(fault);
  }
  return pending;
}

// Device i's batch size and learning rate as the checkpoint has them.
void RestoreDeviceState(scheduler::DevicePool& pool, size_t i, const nlohmann::json& saved, const std::string& source) {
  const std::string& id = pool.device(i).spec().id;
  if (saved.at("id").get<std::string>() != id)
    throw data::InputError(source, 0, "checkpoint device " + std::to_string(i) + " is " +
                                          saved.at("id").get<std::string>() + "; this run has " + id);
  scheduler::BatchSizeAndLr& state = pool.states()[i];
  state = {saved.at("batch").get<double>(), saved.at("lr").get<double>()};
  // Above b_max (--batch) its batches would not fit the replica's buffers, sized for --batch rows.
  if (!(state.batch > 0 && state.batch <= pool.bounds().b_max && std::isfinite(state.lr) && state.lr > 0))
    throw data::InputError(source, 0, "device " + id + " has a bad batch size or learning rate");
}

}  // namespace

nlohmann::json SavePoolMeta(const scheduler::DevicePool& pool) {
  nlohmann::json devices = nlohmann::json::array();
  for (size_t i = 0; i < pool.size(); ++i) {
    devices.push_back({{"id", pool.device(i).spec().id},
                       {"batch", pool.states()[i].batch},
                       {"lr", pool.states()[i].lr},
                       {"fault", pool.fault(i)}});
  }
  nlohmann::json pending = nlohmann::json::array();
  // A process's end is not the device's state: a resumed run must not end again.
  for (const scheduler::FaultInjection& f : pool.faults().pending())
    if (f.kind != scheduler::FaultInjection::Kind::kExit) pending.push_back({f.device, f.megabatch, int(f.kind)});
  const scheduler::EpochSampler& sampler = pool.rows().sampler();
  nlohmann::json meta = {{"devices", devices},
                         {"sampler_cursor", sampler.cursor()},
                         {"sampler_rng", sampler.GeneratorState()},
                         {"row_cost_s", pool.row_cost_s()},
                         {"loss_reference", pool.loss_watch().reference()},
                         {"pending_faults", pending}};
  pool.planner().Save(&meta);
  return meta;
}

void AddPoolSections(scheduler::DevicePool& pool, CheckpointWriter* writer,
                     std::vector<std::vector<uint8_t>>* extra_storage) {
  writer->Add("sampler.order", pool.rows().sampler().order());
  writer->Add("requeued", pool.rows().returned());
  extra_storage->assign(pool.size(), {});
  for (size_t i : pool.alive()) {
    engine::Device& d = pool.device(i);
    const std::string prefix = SectionPrefix(i);
    // From where the replica is: a replica with bf16 weights widens them a piece at a time.
    writer->AddStreamed(prefix + "params", d.NumParams() * sizeof(float),
                        [&d](const CheckpointWriter::PieceWriter& write) {
                          d.StreamParams([&](const float* params, size_t count) { write(params, count * sizeof(float)); });
                        });
    if (const size_t values = d.OptimizerStateSize(); values > 0) {
      writer->AddStreamed(prefix + "momentum", values * sizeof(float),
                          [&d](const CheckpointWriter::PieceWriter& write) {
                            d.StreamOptimizerState(
                                [&](const float* state, size_t count) { write(state, count * sizeof(float)); });
                          });
    }
    (*extra_storage)[i] = d.SaveExtraState();
    if (!(*extra_storage)[i].empty()) writer->Add(prefix + "extra", (*extra_storage)[i]);
  }
}

void RestorePool(scheduler::DevicePool& pool, const CheckpointReader& reader, const nlohmann::json& meta,
                 const std::vector<float>& global, bool replan) {
  const std::string& source = reader.source();
  try {
    std::vector<scheduler::FaultInjection> pending;
    if (!replan) {
      const size_t saved = meta.at("devices").size();
      if (saved != pool.size())
        throw data::InputError(source, 0, "checkpoint has " + std::to_string(saved) + " devices; this run has " +
                                              std::to_string(pool.size()));
      pending = ReadPendingFaults(meta, pool.size());
    }
    RestoreDataState(pool, reader, meta);
    if (!replan) pool.planner().Restore(meta);
    for (size_t i = 0; i < pool.size(); ++i) {
      engine::Device& d = pool.device(i);
      if (replan) {
        if (global.size() != d.NumParams()) throw data::InputError(source, 0, "global model of the wrong size");
      } else {
        RestoreDeviceState(pool, i, meta.at("devices").at(i), source);
      }
      // Another rank's device: its owner restores it (a merge that reads it refills this rank's
      // mirror first).
      if (!pool.local(i)) continue;
      // A device dropped before the checkpoint gets another chance (the user asked for it again),
      // starting from the global model with no momentum; so does every device of a re-plan.
      const std::string prefix = SectionPrefix(i);
      if (!replan && reader.Has(prefix + "params")) {
        const CheckpointReader::ValueView params = reader.View<float>(prefix + "params", d.NumParams());
        d.LoadParams(params.bytes, params.count);
      } else {
        if (global.size() != d.NumParams()) throw data::InputError(source, 0, "global model of the wrong size");
        d.LoadParams(global.data(), global.size());
      }
      d.FinishMerge();
      // Straight from the file's mapping into the device's buffer. The device checks the state's
      // size: a momentum buffer holds a value per parameter, the sampled step's Adagrad squares one
      // per first-layer weight.
      if (!replan && reader.Has(prefix + "momentum")) {
        const CheckpointReader::ValueView state = reader.View<float>(prefix + "momentum");
        d.RestoreOptimizerState(state.bytes, state.count);
      } else {
        d.RestoreOptimizerState(nullptr, 0);
      }
      if (!replan && reader.Has(prefix + "extra")) d.RestoreExtraState(reader.Read<uint8_t>(prefix + "extra"));
    }
    pool.faults().Restore(std::move(pending));
  } catch (const nlohmann::json::exception& e) {
    throw data::InputError(source, 0, std::string("bad checkpoint state: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw data::InputError(source, 0, e.what());
  }
}

void ResetLearningRates(scheduler::DevicePool& pool, double lr) {
  for (scheduler::BatchSizeAndLr& state : pool.states()) state.lr = lr * state.batch / double(pool.options().batch);
}

}  // namespace xmlt::run
