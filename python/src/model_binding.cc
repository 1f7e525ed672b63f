// _Model: a trained model in memory. The package's Model wraps it with the run's history.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "apps/model_evaluation.h"
#include "apps/output_paths.h"
#include "apps/propensity_flag.h"
#include "data/memory_dataset.h"
#include "engine/evaluator.h"
#include "engine/model_file.h"
#include "python/src/bindings.h"
#include "python/src/csr_arguments.h"
#include "python/src/model_holder.h"

namespace nb = nanobind;

namespace xmlt::python {
namespace {

// (labels int32 [n, k], scores float32 [n, k], warnings), k at most the label count. The package
// checks k (Model.predict) and raises the warnings as Python warnings.
nb::tuple Predict(const ModelHolder& holder, nb::handle x_parts, uint32_t k) {
  if (k == 0 || k > apps::kMaxTopK) throw std::invalid_argument("k must be an integer in 1..1000, as --top-k");
  const CsrArguments x = CsrOf(x_parts, "X");
  auto prediction = std::make_unique<engine::Prediction>();
  const engine::TrainedModel& model = holder.model;
  uint64_t rows = 0;
  std::vector<std::string> warnings;
  {
    nb::gil_scoped_release release;
    const data::Dataset input = apps::AsModelInput(UnlabelledRows(FeaturesOf(x, "X"), "X"), model.mlp.shape, "X",
                                                   apps::Warnings::Into(&warnings));
    rows = input.num_rows();
    *prediction = engine::Predict(model, input, uint32_t(std::min<uint64_t>(k, model.mlp.shape.num_labels)));
  }
  const size_t kept = prediction->k;
  engine::Prediction* owned = prediction.release();
  nb::capsule capsule(owned, [](void* p) noexcept { delete static_cast<engine::Prediction*>(p); });
  // The labels are below 2^32 and in practice below 2^31: int32, as the package promises.
  nb::ndarray<nb::numpy, const int32_t, nb::ndim<2>> labels(reinterpret_cast<const int32_t*>(owned->labels.data()),
                                                             {size_t(rows), kept}, capsule);
  nb::ndarray<nb::numpy, const float, nb::ndim<2>> scores(owned->scores.data(), {size_t(rows), kept}, capsule);
  return nb::make_tuple(labels, scores, warnings);
}

// (the JSON `xmltrain eval` prints, warnings).
nb::tuple Evaluate(const ModelHolder& holder, nb::handle x_parts, nb::handle y_parts, const std::string& propensity_text,
                     nb::handle y_train_parts) {
  const kernels::PropensityModel propensity = apps::ParsePropensity(propensity_text);
  const CsrArguments x = CsrOf(x_parts, "X"), y = CsrOf(y_parts, "Y");
  std::unique_ptr<CsrArguments> y_train;
  if (!y_train_parts.is_none()) y_train = std::make_unique<CsrArguments>(CsrOf(y_train_parts, "Y_train"));
  std::vector<std::string> warnings;
  std::string figures;
  {
    nb::gil_scoped_release release;
    const data::Dataset test = data::DatasetFromMatrices(FeaturesOf(x, "X"), LabelsOf(y, "Y"), "X", "Y");
    data::CsrMatrix train_labels;
    if (y_train) train_labels = LabelsOf(*y_train, "Y_train");
    figures = apps::EvaluateModel(holder.model, test, "X, Y", y_train ? &train_labels : nullptr, "Y_train", propensity,
                                  apps::Warnings::Into(&warnings))
                  .dump();
  }
  return nb::make_tuple(figures, warnings);
}

}  // namespace

void BindModel(nb::module_& m) {
  nb::class_<ModelHolder>(m, "_Model")
      .def_static(
          "load",
          [](const std::string& path) {
            auto holder = std::make_unique<ModelHolder>();
            nb::gil_scoped_release release;
            holder->model = engine::LoadModel(path);
            return holder.release();
          },
          nb::arg("path"), nb::rv_policy::take_ownership)
      .def(
          "save",
          [](const ModelHolder& holder, const std::string& path) {
            nb::gil_scoped_release release;
            apps::ProbeOutputFile("Model.save:", path);  // a bad path is the caller's error, as --model's
            engine::SaveModel(holder.model, path);
          },
          nb::arg("path"))
      .def_prop_ro("num_features", [](const ModelHolder& h) { return h.model.mlp.shape.num_features; })
      .def_prop_ro("num_labels", [](const ModelHolder& h) { return h.model.mlp.shape.num_labels; })
      .def_prop_ro("hidden", [](const ModelHolder& h) { return h.model.mlp.shape.hidden; })
      .def_prop_ro("normalize_rows", [](const ModelHolder& h) { return h.model.mlp.shape.normalize_rows; })
      .def_prop_ro("shape", [](const ModelHolder& h) { return h.model.mlp.shape.ToString(); })
      .def_prop_ro("has_ranker", [](const ModelHolder& h) { return h.model.ranker != nullptr; })
      .def_prop_ro("ranker_form",
                   [](const ModelHolder& h) {
                     return std::string(h.model.ranker ? kernels::BlendFormName(h.model.ranker->form) : "");
                   })
      .def_prop_ro("ranker_blend", [](const ModelHolder& h) { return h.model.ranker ? h.model.ranker->blend : 0.0f; })
      .def_prop_ro("ranker_shortlist",
                   [](const ModelHolder& h) { return h.model.ranker ? h.model.ranker->shortlist : 0u; })
      .def("predict", &Predict, nb::arg("x"), nb::arg("k"))
      .def("evaluate", &Evaluate, nb::arg("x"), nb::arg("y"), nb::arg("propensity"), nb::arg("y_train").none());
}

}  // namespace xmlt::python
