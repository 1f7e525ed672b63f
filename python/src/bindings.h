// The parts of the _xmltrain extension, each adding its functions to the module.
#pragma once

#include <nanobind/nanobind.h>

namespace xmlt::python {

void BindErrors(nanobind::module_& m);   // C++ errors as the Python exceptions they mean
void BindRead(nanobind::module_& m);     // read(): a data file as CSR arrays
void BindModel(nanobind::module_& m);    // _Model: load, save, predict, evaluate
void BindTrain(nanobind::module_& m);    // train(): the train command on arrays

}  // namespace xmlt::python
