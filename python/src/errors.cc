// The command line's errors as Python exceptions, with the command line's text: bad options and
// bad input are ValueError (an unknown option TypeError, as an unknown keyword is), a run that
// could not go on RuntimeError.
#include <CLI/CLI.hpp>

#include "apps/setting_flags.h"
#include "data/input_error.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace xmlt::python {

void BindErrors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const CLI::ExtrasError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const CLI::ParseError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const run::RunMismatch& e) {
      PyErr_SetString(PyExc_ValueError, apps::DescribeInFlags(e).c_str());
    } catch (const scheduler::OptionError& e) {
      PyErr_SetString(PyExc_ValueError, apps::DescribeInFlags(e).c_str());
    } catch (const data::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const run::RunStopped& e) {
      PyErr_SetString(PyExc_RuntimeError, apps::DescribeInFlags(e).c_str());
    }
    // Anything else goes on to nanobind's own translation (std::bad_alloc: MemoryError; others:
    // RuntimeError).
  });
}

}  // namespace xmlt::python
