// The model object the extension hands to Python.
#pragma once

#include "engine/trained_model.h"

namespace xmlt::python {

struct ModelHolder {
  engine::TrainedModel model;  // the MLP, and its shortlist ranker when trained with one
};

}  // namespace xmlt::python
