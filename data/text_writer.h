// Writes a dataset as XML-repository text ("N D L" header, "l1,l2 f:v ..." rows), atomically.
#pragma once

#include <string>

#include "data/dataset.h"

namespace xmlt::data {

void WriteXmlRepoText(const Dataset& dataset, const std::string& path);

}  // namespace xmlt::data
