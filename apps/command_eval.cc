// `xmltrain eval` and `xmltrain predict`: use a saved model on a data file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "apps/model_evaluation.h"
#include "apps/output_paths.h"
#include "apps/propensity_flag.h"
#include "apps/stdout_check.h"
#include "data/atomic_file.h"
#include "data/feature_limit.h"
#include "data/input_error.h"
#include "data/row_normalization.h"
#include "engine/evaluator.h"
#include "engine/model_file.h"
#include "kernels/propensity.h"

namespace xmlt::apps {
namespace {

struct EvalFlags {
  std::string model, test, test_labels, train, train_labels;
  std::string propensity = "0.55,1.5";
  DataFlags data;
};

void RunEval(const EvalFlags& f) {
  const kernels::PropensityModel propensity = ParsePropensity(f.propensity);
  if (f.train.empty() && !f.train_labels.empty()) throw std::invalid_argument("--train-labels needs --train");
  const engine::TrainedModel model = engine::LoadModel(f.model);
  const data::Dataset test = LoadWithWarnings(f.test, f.test_labels, f.data);
  data::Dataset train;
  if (!f.train.empty()) {
    train = LoadWithWarnings(f.train, f.train_labels, f.data);
    if (train.num_rows() < 2) throw std::invalid_argument("--train: " + f.train + " has fewer than 2 rows");
  }
  const nlohmann::json result =
      EvaluateModel(model, test, f.test, f.train.empty() ? nullptr : &train.labels, f.train, propensity);
  WriteStdout(result.dump() + "\n");
  CheckStdoutWritten();
}

struct PredictFlags {
  std::string model, input, input_labels, output;
  uint32_t top_k = 5;
  DataFlags data;
};

// One line per input row: "label:score" pairs, best first: the MLP's probabilities, or with a
// ranker the blend it ranks by.
void RunPredict(const PredictFlags& f) {
  if (f.top_k == 0 || f.top_k > kMaxTopK)
    throw std::invalid_argument("--top-k must be in 1.." + std::to_string(kMaxTopK));
  ProbeOutputFile("--output", f.output);  // now, not after the whole prediction
  RefuseOutputsOverInputs({{"--model", f.model}, {"--input", f.input}, {"--input-labels", f.input_labels}},
                          {AtomicOutput("--output", f.output)});
  const engine::TrainedModel model = engine::LoadModel(f.model);
  const data::Dataset input =
      AsModelInput(LoadWithWarnings(f.input, f.input_labels, f.data), model.mlp.shape, f.input);
  const uint32_t k = uint32_t(std::min<uint64_t>(f.top_k, model.mlp.shape.num_labels));
  const engine::Prediction prediction = engine::Predict(model, input, k);
  std::unique_ptr<data::AtomicFile> file;
  if (!f.output.empty()) file = std::make_unique<data::AtomicFile>(f.output);
  std::string line;
  for (uint64_t r = 0; r < input.num_rows(); ++r) {
    line.clear();
    for (uint32_t i = 0; i < k; ++i) {
      char pair[64];
      std::snprintf(pair, sizeof pair, "%s%u:%.6g", i == 0 ? "" : " ", prediction.labels[r * k + i],
                    prediction.scores[r * k + i]);
      line += pair;
    }
    line += '\n';
    if (file) {
      file->Write(line);
    } else {
      WriteStdout(line);
    }
  }
  if (file) {
    file->Commit();
  } else {
    CheckStdoutWritten();
  }
}

}  // namespace

Command AddEvalCommand(CLI::App* app) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* cmd = app->add_subcommand("eval", "Evaluate a saved model: P@1,3,5, nDCG@3,5 (with --train also PSP@1,3,5 and PSnDCG@3,5) and loss as JSON");
  cmd->add_option("--model", flags->model, "Model file written by train --model")->required();
  cmd->add_option("--test", flags->test, "Test data")->required();
  cmd->add_option("--test-labels", flags->test_labels, "Labels file when --test is the X file of a split pair");
  cmd->add_option("--train", flags->train,
                  "The model's training data: its label counts give the propensities, and PSP@1,3,5 and "
                  "PSnDCG@3,5 are added");
  cmd->add_option("--train-labels", flags->train_labels, "Labels file when --train is the X file of a split pair");
  AddPropensityFlag(cmd, &flags->propensity);
  AddDataFlags(cmd, &flags->data);
  return {cmd, [cmd, flags] {
            // The propensities come from --train's label counts: without it there are none to weigh.
            if (cmd->count("--propensity") > 0 && flags->train.empty())
              throw std::invalid_argument("--propensity weighs the PSP@k that --train's label counts give; give --train");
            RunEval(*flags);
            return kExitOk;
          }};
}

Command AddPredictCommand(CLI::App* app) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* cmd = app->add_subcommand("predict", "Print the top-k labels with probabilities for each input row");
  cmd->add_option("--model", flags->model, "Model file written by train --model")->required();
  cmd->add_option("--input", flags->input, "Rows to label (any supported format; labels are ignored)")->required();
  cmd->add_option("--input-labels", flags->input_labels, "Labels file when --input is a split pair");
  cmd->add_option("--top-k", flags->top_k, "Labels per row")->capture_default_str();
  cmd->add_option("--output", flags->output, "Write here instead of stdout");
  AddDataFlags(cmd, &flags->data);
  return {cmd, [flags] { RunPredict(*flags); return kExitOk; }};
}

}  // namespace xmlt::apps
