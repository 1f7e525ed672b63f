// What one `xmltrain train` run is given besides its flags, and what it leaves: the data in memory
// or not, where its records, progress and warnings go, how a second signal acts, and the outcome.
// The command line and the Python package each fill one for RunTrain (train_run.h); loading and
// the outputs read it too.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/stop_signals.h"
#include "data/dataset.h"
#include "engine/trained_model.h"
#include "run/metrics_log.h"

namespace xmlt::apps {

struct TrainSession {
  // Data in memory, used instead of loading --train and --test (which then only name it in
  // messages); null: the files are loaded. The caller checked it as the readers check a file.
  const data::Dataset* train = nullptr;
  const data::Dataset* test = nullptr;
  // true: the command line's lines on stdout (each evaluation, the summary) and its progress bar
  // on a terminal. false: nothing on stdout; the caller takes the records from on_eval and the
  // summary from `summary`.
  bool print = true;
  std::function<void(const run::EvalRecord&)> on_eval;  // after the record is in --metrics
  std::function<void(uint64_t done, uint64_t total, double batch_loss)> on_progress;
  // A second SIGINT/SIGTERM ends the process at once (the command line); false: it changes
  // nothing, the run still stops at its safe point (an interpreter must outlive its call).
  bool second_signal_exits = true;
  engine::TrainedModel* model = nullptr;  // receives the trained model when not null
  // Not null: the data's warnings (a test set's rows without labels, its ids beyond the training
  // data's) are collected here instead of printed; the Python package raises them as warnings.
  std::vector<std::string>* warnings = nullptr;
  // This run's stop, set by RunTrain while the run may train (null before and after): the
  // callbacks above may ask it (Request) to stop this run alone at its next safe point.
  StopSignals* stop = nullptr;

  // What the run left: the signal that stopped it (0: it finished), its last checkpoint, and the
  // summary of a finished run. `trained`: the run finished training, and `model` (when given) and
  // `summary` hold its outcome before the model and metrics files are written; an error RunTrain
  // throws after that is one of those files'.
  bool trained = false;
  int stopped_by_signal = 0;
  // The stop came in the ranker stage, after training: `model` (when given) holds the trained MLP
  // without its ranker, and `checkpoint` the end-of-training checkpoint that --resume fits it from.
  bool stopped_in_ranker_stage = false;
  std::string checkpoint;
  nlohmann::json summary;
};

}  // namespace xmlt::apps
