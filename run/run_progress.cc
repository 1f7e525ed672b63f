// Run bookkeeping as JSON; see run_progress.h.
#include "run/run_progress.h"

#include <algorithm>
#include <sstream>

#include <xxhash.h>

#include "data/input_error.h"

namespace xmlt::run {
namespace {

template <class T>
void HashArray(XXH3_state_t* state, const data::SharedArray<T>& values) {
  if (values.size() > 0) XXH3_64bits_update(state, values.data(), values.size() * sizeof(T));
}

uint64_t DataChecksum(const data::Dataset& train) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const data::CsrMatrix* m : {&train.features, &train.labels}) {
    HashArray(state, m->row_ptr);
    HashArray(state, m->col_idx);
    HashArray(state, m->values);
  }
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

}  // namespace

nlohmann::json ProgressToJson(const RunProgress& p) {
  nlohmann::json since = nlohmann::json::array(), evals = nlohmann::json::array();
  // The device records travel inside an evaluation record, whose JSON form already exists.
  EvalRecord carrier;
  carrier.devices = p.since_eval;
  for (const EvalRecord& r : p.evals) evals.push_back(ToJson(r));
  nlohmann::json holdout = nlohmann::json::array();
  for (const HoldoutScore& h : p.holdout_scores) holdout.push_back({{"epoch", h.epoch}, {"score", h.score}});
  return {{"rows_done", p.rows_done},         {"megabatches", p.megabatches},
          {"batches", p.batches},             {"train_seconds", p.train_seconds},
          {"wall_seconds", p.wall_seconds},   {"loss_sum", p.loss_sum},
          {"loss_batches", p.loss_batches},   {"merge_cost_s", p.merge_cost_s},
          {"rollbacks", p.rollbacks},         {"last_perturbed", p.last_perturbed},
          {"since_eval", ToJson(carrier)},
          {"evals", evals},
          {"holdout_scores", holdout},        {"stopped_by_holdout_at", p.stopped_by_holdout_at}};
}

RunProgress ProgressFromJson(const nlohmann::json& j) {
  RunProgress p;
  p.rows_done = j.at("rows_done").get<uint64_t>();
  p.megabatches = j.at("megabatches").get<uint64_t>();
  p.batches = j.at("batches").get<uint64_t>();
  p.train_seconds = j.at("train_seconds").get<double>();
  p.wall_seconds = j.at("wall_seconds").get<double>();
  p.loss_sum = j.at("loss_sum").get<double>();
  p.loss_batches = j.at("loss_batches").get<uint64_t>();
  p.merge_cost_s = j.at("merge_cost_s").get<double>();
  p.rollbacks = j.at("rollbacks").get<uint32_t>();
  p.last_perturbed = j.value("last_perturbed", false);
  p.since_eval = EvalRecordFromJson(j.at("since_eval").get<std::string>()).devices;
  for (const nlohmann::json& line : j.at("evals")) p.evals.push_back(EvalRecordFromJson(line.get<std::string>()));
  // Checkpoints written before the held-out stop have neither.
  if (j.contains("holdout_scores"))
    for (const nlohmann::json& h : j.at("holdout_scores"))
      p.holdout_scores.push_back({h.at("epoch").get<uint64_t>(), h.at("score").get<double>()});
  p.stopped_by_holdout_at = j.value("stopped_by_holdout_at", uint64_t{0});
  return p;
}

TrainResult ResultOf(const RunProgress& progress) {
  TrainResult result;
  result.batches = progress.batches;
  result.rollbacks = progress.rollbacks;
  if (progress.evals.empty()) return result;
  result.last = progress.evals.back();
  // Like with like: a sample's P@1 (--eval-rows) is not comparable with the whole test set's (a
  // lucky 1.0 on 3 rows would beat every real score), so the best is among the evaluations on as
  // many rows as the last one: the sample's all along, or the whole set's.
  bool found = false;
  for (const EvalRecord& record : progress.evals) {
    if (record.test.rows != result.last.test.rows) continue;
    if (!found || record.test.metrics.p1 > result.best.test.metrics.p1) result.best = record;
    found = true;
  }
  return result;
}

namespace {

// Values by the names the flags take, so that a refused --resume says what changed.
const char* ScheduleName(scheduler::SchedulerOptions::Schedule schedule) {
  switch (schedule) {
    case scheduler::SchedulerOptions::Schedule::kStatic: return "static";
    case scheduler::SchedulerOptions::Schedule::kSync: return "sync";
    default: return "dynamic";
  }
}

const char* MergeName(scheduler::SchedulerOptions::Merge merge) {
  switch (merge) {
    case scheduler::SchedulerOptions::Merge::kAverage: return "average";
    case scheduler::SchedulerOptions::Merge::kAdasum: return "adasum";
    case scheduler::SchedulerOptions::Merge::kCrossbow: return "crossbow";
    case scheduler::SchedulerOptions::Merge::kGradient: return "gradient";
    case scheduler::SchedulerOptions::Merge::kCopy: return "copy";
    default: return "normalized";
  }
}

}  // namespace

nlohmann::json RunFingerprint(const scheduler::TrainOptions& options, const scheduler::SchedulerOptions& scheduling,
                              const kernels::ModelShape& shape, const data::Dataset& train,
                              const data::Dataset* test) {
  nlohmann::json j = {{"model", shape.ToString()},
                      {"normalize", shape.normalize_rows ? "l2" : "none"},
                      {"batch", options.batch},
                      {"lr", options.lr},
                      {"local_momentum", options.local_momentum},
                      {"mega_batch", options.mega_batch},
                      {"seed", options.seed},
                      {"train_rows", train.num_rows()},
                      {"train_checksum", DataChecksum(train)},
                      // The metrics of one run are of one test set.
                      {"test_rows", test == nullptr ? 0 : test->num_rows()},
                      {"test_checksum", test == nullptr ? 0 : DataChecksum(*test)}};
  // Only when set, so that checkpoints of runs without it still resume.
  if (options.eval_rows > 0) {
    j["eval_rows"] = options.eval_rows;
    j["final_eval"] = options.final_eval_full ? "full" : "sample";
  }
  // The metrics of one run have one propensity model (only when not the default, as above).
  if (test != nullptr && (options.propensity.a != kernels::PropensityModel{}.a ||
                          options.propensity.b != kernels::PropensityModel{}.b))
    j["propensity"] = {options.propensity.a, options.propensity.b};
  if (options.mega_batch_warmup) j["mega_batch_warmup"] = true;  // only when set, as above
  if (options.lr_schedule != scheduler::LrSchedule::kConstant)
    j["lr_schedule"] = scheduler::LrScheduleName(options.lr_schedule);
  if (options.math != kernels::OutputMath::kFp32) j["math"] = kernels::OutputMathName(options.math);
  if (options.bf16_optimizer_state) j["optimizer_state"] = "bf16";  // only when set, as above
  if (options.bf16_weights) j["weights"] = "bf16";  // only when set, as above
  if (options.weight_decay != 0) j["weight_decay"] = options.weight_decay;
  if (options.dropout != 0) j["dropout"] = options.dropout;
  if (options.input_lr != 0) j["input_adagrad_lr"] = options.input_lr;
  if (options.divergence_factor != 100) j["divergence_factor"] = options.divergence_factor;
  if (scheduling.sampled_output.enabled) {  // only when set, as above
    const engine::SampledOutputOptions& s = scheduling.sampled_output;
    j["sampled_output"] = {{"hash", s.hash},           {"k", s.k},
                           {"l", s.l},                 {"bucket_bits", s.bucket_bits},
                           {"bucket_cap", s.bucket_cap}, {"min_active", s.min_active},
                           {"first_rebuild", s.first_rebuild}, {"rebuild_growth", s.rebuild_growth},
                           {"weight_padding", s.weight_padding}, {"seed", s.seed}};
  }
  j["devices"] = engine::DeviceListText(scheduling.devices);
  j["schedule"] = ScheduleName(scheduling.schedule);
  j["merge"] = MergeName(scheduling.merge);
  j["collective"] = merge::CollectiveName(scheduling.collective);
  j["momentum_mode"] = scheduling.merge_rule.momentum_mode == merge::MomentumMode::kNesterov ? "nesterov" : "heavy";
  j["elastic_alpha"] = scheduling.merge_rule.elastic_alpha;
  j["momentum"] = scheduling.merge_rule.momentum;
  j["pert_threshold"] = scheduling.merge_rule.pert_threshold;
  j["pert_delta"] = scheduling.merge_rule.pert_delta;
  j["pert_weights"] = scheduling.merge_rule.renormalize_perturbed ? "normalized" : "raw";
  j["speed"] = scheduling.heterogeneity.speed;
  j["hetero"] = scheduling.heterogeneity.cvb ? nlohmann::json{{"vmach", scheduling.heterogeneity.vmach},
                                                             {"vtask", scheduling.heterogeneity.vtask}}
                                           : nlohmann::json("none");
  j["clock"] = scheduling.clock == scheduler::SchedulerOptions::Clock::kWall ? "wall" : "virtual";
  j["row_cost"] = scheduling.row_cost_s;
  if (scheduling.measure_clock_costs) j["clock_costs"] = "measured";  // only when set, as above
  j["merge_cost"] = scheduling.merge_cost_s;
  j["batch_min"] = scheduling.batch_min;
  j["beta"] = scheduling.beta;
  return j;
}

void CheckEpochsCoverProgress(uint64_t total_rows, uint64_t rows_done, uint64_t rows_per_epoch,
                              const std::string& source) {
  if (rows_done <= total_rows) return;
  std::ostringstream text;
  text << "the run asks for " << double(total_rows) / double(rows_per_epoch) << " epochs, but the checkpoint has trained "
       << double(rows_done) / double(rows_per_epoch) << ": give at least that many to go on";
  throw data::InputError(source, 0, text.str());
}

bool ResumeLowersLr(const nlohmann::json& saved, double now_lr) {
  if (!saved.contains("lr") || !saved.at("lr").is_number()) return false;
  // The fingerprint stores a float's value: compare as floats.
  return float(now_lr) < float(saved.at("lr").get<double>());
}

namespace {

std::string Describe(const std::vector<SettingDifference>& differences) {
  std::string text = "this run's settings differ from the checkpointed run's:";
  for (const SettingDifference& d : differences) {
    text += "\n  " + d.name + ": checkpoint " + d.checkpoint + (d.checkpoint_note.empty() ? "" : " (" + d.checkpoint_note + ")") +
            ", now " + d.now + (d.now_note.empty() ? "" : " (" + d.now_note + ")");
  }
  return text;
}

// The fingerprint's note on `key`, or "".
std::string NoteOn(const nlohmann::json& fingerprint, const std::string& key) {
  const auto notes = fingerprint.find("notes");
  if (notes == fingerprint.end() || !notes->is_object()) return "";
  const auto note = notes->find(key);
  return note != notes->end() && note->is_string() ? note->get<std::string>() : "";
}

}  // namespace

RunMismatch::RunMismatch(const std::string& source, std::vector<SettingDifference> differences)
    : data::InputError(source, 0, Describe(differences)), differences_(std::move(differences)) {}

void CheckSameRun(const nlohmann::json& saved, const nlohmann::json& now, const std::string& source,
                  const std::vector<std::string>& may_differ, const std::vector<std::string>& recorded_later) {
  const bool predates = std::none_of(recorded_later.begin(), recorded_later.end(),
                                     [&](const std::string& key) { return saved.contains(key); });
  auto allowed = [&](const std::string& key) {
    if (key == "notes") return true;
    if (predates && std::find(recorded_later.begin(), recorded_later.end(), key) != recorded_later.end()) return true;
    return std::find(may_differ.begin(), may_differ.end(), key) != may_differ.end();
  };
  auto difference = [&](const std::string& key, std::string checkpoint, std::string now_text) {
    return SettingDifference{key, std::move(checkpoint), std::move(now_text), NoteOn(saved, key), NoteOn(now, key)};
  };
  std::vector<SettingDifference> differences;
  // The data's checksum is taken after normalization: a changed normalization changes it too,
  // and is the one to report.
  const bool normalize_differs = saved.contains("normalize") && now.contains("normalize") &&
                                 saved.at("normalize") != now.at("normalize");
  // The ranker's held-out rows leave the training set: another share (or none) changes its rows,
  // and the ranker's setting is the one to report.
  const bool holdout_differs = !predates && std::any_of(recorded_later.begin(), recorded_later.end(), [&](const std::string& key) {
    return key.rfind("ranker", 0) == 0 && saved.value(key, nlohmann::json()) != now.value(key, nlohmann::json());
  });
  for (const auto& [key, value] : now.items()) {
    const auto it = saved.find(key);
    if (it != saved.end() && *it == value) continue;
    if (normalize_differs && key == "train_checksum") continue;
    if (holdout_differs && (key == "train_checksum" || key == "train_rows")) continue;
    if (key == "lr" && it != saved.end() && ResumeLowersLr(saved, value.get<double>())) continue;
    if (allowed(key)) continue;
    differences.push_back(difference(key, it == saved.end() ? "(not set)" : it->dump(), value.dump()));
  }
  for (const auto& [key, value] : saved.items())
    if (!now.contains(key) && !allowed(key)) differences.push_back(difference(key, value.dump(), "(not set)"));
  if (!differences.empty()) throw RunMismatch(source, std::move(differences));
}

bool OtherDevices(const nlohmann::json& saved, const nlohmann::json& now) {
  return saved.value("devices", nlohmann::json()) != now.value("devices", nlohmann::json());
}

const std::vector<std::string>& DeviceDependentSettings() {
  // The collective too: NCCL needs every device to be a GPU, so a run trained with it could not
  // otherwise go on after losing a GPU to a mixed list. It sums the same values either way.
  // The rate's scaling, the mega-batch's warm-up and where merges run follow the devices too (one
  // device scales nothing and merges nothing, and a lost GPU may leave the merges to the host).
  static const std::vector<std::string> settings{"devices",           "speed",      "lr",         "mega_batch",
                                                 "mega_batch_warmup", "collective", "lr_scaling", "merge_on"};
  return settings;
}

nlohmann::json WithOuterSettings(nlohmann::json fingerprint, const nlohmann::json& outer_settings,
                                 const nlohmann::json& notes) {
  for (const auto& [key, value] : outer_settings.items()) fingerprint[key] = value;
  if (!notes.empty()) fingerprint["notes"] = notes;
  return fingerprint;
}

nlohmann::json ParseCheckpointMeta(const std::string& text, const std::string& source) {
  try {
    nlohmann::json meta = nlohmann::json::parse(text);
    if (!meta.is_object() || !meta.contains("run") || !meta.contains("progress"))
      throw data::InputError(source, 0, "checkpoint state lacks its run or progress");
    return meta;
  } catch (const nlohmann::json::exception& e) {
    throw data::InputError(source, 0, std::string("checkpoint state is not valid JSON: ") + e.what());
  }
}

}  // namespace xmlt::run
