// The training loop's checkpoints: written in one place (WriteCheckpoint), read back in one
// (Resume, with RestorePool). See training_loop.h.
#include <algorithm>

#include "data/input_error.h"
#include "run/checkpoint_file.h"
#include "run/pool_checkpoint.h"
#include "run/replica_exchange.h"
#include "run/training_loop.h"

namespace xmlt::run {
namespace {

std::string DevicesOf(const nlohmann::json& meta) {
  const nlohmann::json& devices = meta.at("run").value("devices", nlohmann::json("?"));
  return devices.is_string() ? devices.get<std::string>() : devices.dump();
}

}  // namespace

void TrainingLoop::Resume() {
  const CheckpointReader reader = CheckpointReader::Open(control_.resume_dir);
  const nlohmann::json meta = ParseCheckpointMeta(reader.meta(), reader.source());
  // Other devices (another number of ranks, say): an elastic restart, as torchrun's. The run
  // goes on from the global model and the data's position with the devices it has now.
  const bool replan = OtherDevices(meta.at("run"), fingerprint_);
  std::vector<std::string> outer;
  for (const auto& item : control_.outer_settings.items()) outer.push_back(item.key());
  CheckSameRun(meta.at("run"), fingerprint_, reader.source(),
               replan ? DeviceDependentSettings() : std::vector<std::string>{}, outer);
  if (!meta.contains("pool")) throw data::InputError(reader.source(), 0, "not a multi-device checkpoint");
  // A mega-batch cut by a stop lives in the replicas of the devices that trained it.
  if (replan && meta.contains("open_mega_batch"))
    throw data::InputError(reader.source(), 0,
                           "this checkpoint was cut inside a mega-batch (" + DevicesOf(meta) +
                               "); resume it with those devices, or re-plan from a checkpoint written between "
                               "mega-batches (--checkpoint-every)");
  reader.ReadInto("global.current", global_.MutableCurrent().data(), global_.size());
  // A run that keeps no w_p (scheduler::KeepsPreviousModel) writes none and reads none; one that
  // keeps it resumes a checkpoint without it as a rollback does, with w_p = w (no momentum yet).
  if (global_.previous_size() > 0 && reader.Has("global.previous"))
    reader.ReadInto("global.previous", global_.MutablePrevious().data(), global_.previous_size());
  else if (global_.previous_size() > 0)
    global_.MutablePrevious() = global_.current();
  try {
    RestorePool(pool_, reader, meta.at("pool"), global_.current(), replan);
    if (!replan && ResumeLowersLr(meta.at("run"), options_.lr)) ResetLearningRates(pool_, options_.lr);
    std::vector<DeviceRecord> fresh = std::move(progress_.since_eval);
    progress_ = ProgressFromJson(meta.at("progress"));
    // The old devices' records since the last evaluation go with them.
    if (replan) progress_.since_eval = std::move(fresh);
    if (meta.contains("open_mega_batch")) open_ = OpenMegaBatchFromJson(meta.at("open_mega_batch"), pool_.EmptyRun());
  } catch (const nlohmann::json::exception& e) {
    throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw data::InputError(reader.source(), 0, std::string("bad checkpoint state: ") + e.what());
  }
  CheckEpochsCoverProgress(total_rows_, TrainedRows(), rows_per_epoch_, reader.source());
  // A run the held-out rows ended stays ended while they still watch it; without them it goes on
  // to its planned end, on the schedule it was on.
  if (control_.stop_holdout == nullptr)
    progress_.stopped_by_holdout_at = 0;
  else if (progress_.stopped_by_holdout_at > 0)
    total_rows_ = std::min(total_rows_, progress_.stopped_by_holdout_at);
  if (progress_.since_eval.size() != pool_.size())
    throw data::InputError(reader.source(), 0, "device records do not match the devices");
  if (callbacks_.on_resume) callbacks_.on_resume(progress_.evals);
  std::string how;
  if (replan) {
    how = " on other devices (" + DevicesOf(meta) + " then, " + fingerprint_.at("devices").get<std::string>() +
          " now): every device starts from the global model with the initial batch size and learning rate";
  } else if (ResumeLowersLr(meta.at("run"), options_.lr)) {
    how = " with the lower learning rate " + std::to_string(options_.lr);
  }
  Event("resumed from " + reader.source() + " at mega-batch " + std::to_string(progress_.megabatches) + how);
}

void TrainingLoop::WriteCheckpoint(const char* why) {
  if (control_.checkpoint_dir.empty()) return;
  // A device with memory of its own (a GPU) holds its replica there: its host mirror is as old as
  // the last merge, so a checkpoint inside a mega-batch refreshes it first, or the work since
  // that merge would be lost. Across ranks rank 0 writes it, with every device's replica and
  // momentum from its owner; the other ranks send their own and hold no mirror.
  for (size_t i : pool_.alive())
    if (pool_.local(i)) pool_.device(i).PrepareMerge();
  GatherReplicas(pool_, 0);
  // Across ranks w and w_p may be sharded over every rank's GPUs: their copy to the host is a
  // collective every rank makes.
  global_.SyncToHost();
  if (pool_.ranks() != nullptr && pool_.ranks()->rank() != 0) {
    checkpoint_ = CheckpointPath(control_.checkpoint_dir);
    return;
  }
  progress_.wall_seconds = WallSeconds();
  nlohmann::json meta = {{"run", fingerprint_}, {"progress", ProgressToJson(progress_)}, {"pool", SavePoolMeta(pool_)}};
  if (open_.open()) meta["open_mega_batch"] = OpenMegaBatchToJson(open_);
  CheckpointWriter writer(meta.dump());
  writer.Add("global.current", global_.current());
  if (global_.previous_size() > 0) writer.Add("global.previous", global_.previous());
  // w, w_p and the replicas are written from where they are, each device's optimizer state streamed
  // from where it lives; the devices' other state is copied out and must outlive Write.
  std::vector<std::vector<uint8_t>> extra;
  AddPoolSections(pool_, &writer, &extra);
  writer.Write(control_.checkpoint_dir);
  ReleaseIdleMirrors();
  checkpoint_ = CheckpointPath(control_.checkpoint_dir);
  Event(std::string("checkpoint (") + why + ") at mega-batch " + std::to_string(progress_.megabatches) + ": " +
        checkpoint_);
}

// A periodic checkpoint that cannot be written (a full disk) is no reason to end a run that can
// go on: it is reported, the last one written stays, and the next one may succeed.
void TrainingLoop::TryWritePeriodicCheckpoint() {
  try {
    WriteCheckpoint("periodic");
  } catch (const std::exception& e) {
    ReleaseIdleMirrors();
    Event("periodic checkpoint failed at mega-batch " + std::to_string(progress_.megabatches) + " (" + e.what() +
          "); training goes on, and the last checkpoint written stays");
  }
}

void TrainingLoop::TryWriteEndCheckpoint() {
  // As in the single-device loop: a failed end checkpoint must not lose the trained model.
  try {
    WriteCheckpoint("end");
  } catch (const std::exception& e) {
    end_checkpoint_error_ = e.what();
  }
}

// Across ranks, a hierarchical merge never reads the mirrors of the other ranks' replicas: they
// take memory only on rank 0 while it writes a checkpoint (Adasum and CROSSBOW keep theirs,
// which every merge refills; a resume or rollback touches local devices only).
void TrainingLoop::ReleaseIdleMirrors() {
  if (pool_.ranks() != nullptr && scheduler::MergesByWeightedSum(scheduling_)) ReleaseMirrors(pool_);
}

}  // namespace xmlt::run
