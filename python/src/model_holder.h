// The model object the extension hands to Python.
#pragma once

#include "kernels/model.h"

namespace xmlt::python {

struct ModelHolder {
  kernels::Model<float> model;
};

}  // namespace xmlt::python
