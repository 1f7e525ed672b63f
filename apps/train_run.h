// One `xmltrain train` run, from its parsed flags to the trained model. The command line runs it
// on files and prints what it finds; the Python package runs the same code with its data handed in
// from memory, and takes the records, the summary and the model back instead.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/stop_signals.h"
#include "apps/train_flags.h"
#include "data/dataset.h"
#include "engine/trained_model.h"
#include "kernels/model.h"
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

// Runs `xmltrain train` with `f` (parsed by AddTrainFlags's options); returns the exit code the
// command line ends with. Throws what the command line turns into "error: ..." (cli.h).
int RunTrain(TrainFlags& f, TrainSession& session);

}  // namespace xmlt::apps
