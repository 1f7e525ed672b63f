// train(): `xmltrain train` on matrices in memory. The keywords arrive as the command line's
// arguments and go through its parser and checks (apps/train_arguments.h); the run is the
// command line's own (apps/train_run.h), with the data handed in instead of read from files.
// The GIL is released while it runs. SIGINT/SIGTERM stop it at its next safe point (a checkpoint
// when checkpoint_dir is given), after which train raises KeyboardInterrupt (in the ranker stage,
// after training, with the trained MLP attached); an exception in the
// Python callback stops it (and no other run) there too and is raised. An error writing the model
// or metrics file after training is raised with the trained model attached (RaiseWithModel).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <tbb/global_control.h>

#include <csignal>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/progress_throttle.h"
#include "apps/stop_signals.h"
#include "apps/stop_texts.h"
#include "apps/train_arguments.h"
#include "apps/train_run.h"
#include "data/input_error.h"
#include "data/memory_dataset.h"
#include "python/src/bindings.h"
#include "python/src/csr_arguments.h"
#include "python/src/model_holder.h"
#include "run/metrics_log.h"

namespace nb = nanobind;

namespace xmlt::python {
namespace {

// Raises `error`, thrown after training (a model or metrics file that could not be written), as
// the Python exception the module's translation gives it, with the trained model as its `model`
// and the run's summary JSON as its `summary`: train() wraps them into a Model.
[[noreturn]] void RaiseWithModel(const std::exception_ptr& error, std::unique_ptr<ModelHolder> model,
                                 const std::string& summary) {
  PyObject* type = PyExc_RuntimeError;
  std::string message = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const data::InputError& e) {
    type = PyExc_ValueError;
    message = e.what();
  } catch (const std::invalid_argument& e) {
    type = PyExc_ValueError;
    message = e.what();
  } catch (const std::bad_alloc& e) {
    type = PyExc_MemoryError;
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  nb::object raised = nb::borrow(type)(message);
  raised.attr("model") = nb::cast(model.release(), nb::rv_policy::take_ownership);
  raised.attr("summary") = summary;
  PyErr_SetObject(type, raised.ptr());
  throw nb::python_error();
}

// (model, summary JSON). `on_eval(line)` gets each evaluation's metrics line; `on_progress(done,
// total, batch_loss)` the progress within a mega-batch, at most five times a second.
nb::tuple Train(const std::vector<std::string>& args, nb::handle x_parts, nb::handle y_parts, nb::handle x_test_parts,
                nb::handle y_test_parts, nb::object on_eval, nb::object on_progress) {
  const CsrArguments x = CsrOf(x_parts, "X"), y = CsrOf(y_parts, "Y");
  std::optional<CsrArguments> x_test, y_test;
  if (!x_test_parts.is_none()) x_test = CsrOf(x_test_parts, "X_test");
  if (!y_test_parts.is_none()) y_test = CsrOf(y_test_parts, "Y_test");
  auto holder = std::make_unique<ModelHolder>();
  apps::TrainSession session;
  std::unique_ptr<nb::python_error> callback_error;  // made and freed with the GIL held
  std::exception_ptr output_error;                   // thrown after training: the model is kept
  std::vector<std::string> warnings;                 // the data's, raised as Python warnings
  {
    nb::gil_scoped_release release;
    apps::TrainArguments arguments(args);
    std::unique_ptr<tbb::global_control> limit;
    if (arguments.threads() > 0)
      limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    size_t(arguments.threads()));
    const data::Dataset train = data::DatasetFromMatrices(FeaturesOf(x, "X"), LabelsOf(y, "Y"), "X", "Y");
    std::optional<data::Dataset> test;
    if (x_test) test = data::DatasetFromMatrices(FeaturesOf(*x_test, "X_test"), LabelsOf(*y_test, "Y_test"), "X_test", "Y_test");
    session.train = &train;
    session.test = test ? &*test : nullptr;
    session.print = false;
    session.second_signal_exits = false;
    session.model = &holder->model;
    session.warnings = &warnings;
    // A callback that raises stops the run at its next safe point, as a signal does.
    const auto call = [&](auto&& function) {
      nb::gil_scoped_acquire gil;
      if (callback_error) return;
      try {
        function();
      } catch (nb::python_error& e) {
        callback_error = std::make_unique<nb::python_error>(std::move(e));
        if (session.stop != nullptr) session.stop->Request(SIGINT);  // this run's stop, not another's
      }
    };
    if (!on_eval.is_none())
      session.on_eval = [&](const run::EvalRecord& record) {
        const std::string line = run::ToJson(record);
        call([&] { on_eval(line); });
      };
    apps::ProgressThrottle progress_throttle;
    if (!on_progress.is_none())
      session.on_progress = [&](uint64_t done, uint64_t total, double loss) {
        if (progress_throttle.Due(done, total)) call([&] { on_progress(done, total, loss); });
      };
    try {
      apps::RunTrain(arguments.flags(), session);
    } catch (...) {
      if (!session.trained) throw;
      output_error = std::current_exception();
    }
  }
  // Where train() was called from (stacklevel 2: the caller of the package's train); a filter
  // that makes them errors raises the first.
  for (const std::string& warning : warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 2) != 0) throw nb::python_error();
  if (callback_error) {
    callback_error->restore();
    throw nb::python_error();
  }
  if (output_error) RaiseWithModel(output_error, std::move(holder), session.summary.dump());
  if (session.stopped_by_signal != 0 && session.stopped_in_ranker_stage) {
    // Training had finished: the trained MLP comes with the KeyboardInterrupt, as after a failed
    // output, and a checkpoint (checkpoint_dir) resumes to fit the ranker.
    nb::object raised = nb::borrow(PyExc_KeyboardInterrupt)(
        "training " + apps::StoppedInRankerStageText(session.stopped_by_signal,
                                                     "the exception's model is the trained MLP without its ranker",
                                                     session.checkpoint, apps::kPythonWording));
    raised.attr("model") = nb::cast(holder.release(), nb::rv_policy::take_ownership);
    raised.attr("summary") = std::string("null");
    PyErr_SetObject(PyExc_KeyboardInterrupt, raised.ptr());
    throw nb::python_error();
  }
  if (session.stopped_by_signal != 0) {
    const std::string text =
        "training " + apps::StoppedInTrainingText(session.stopped_by_signal, session.checkpoint, apps::kPythonWording);
    PyErr_SetString(PyExc_KeyboardInterrupt, text.c_str());
    throw nb::python_error();
  }
  return nb::make_tuple(nb::cast(holder.release(), nb::rv_policy::take_ownership), session.summary.dump());
}

}  // namespace

void BindTrain(nb::module_& m) {
  m.def("train", &Train, nb::arg("args"), nb::arg("x"), nb::arg("y"), nb::arg("x_test").none(),
        nb::arg("y_test").none(), nb::arg("on_eval").none(), nb::arg("on_progress").none());
}

}  // namespace xmlt::python
