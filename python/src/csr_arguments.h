// A CSR matrix as the xmltrain package hands it over: (rows, cols, indptr uint64, indices uint32,
// values float32), the engine's own dtypes (python/xmltrain/_matrices.py converts others once).
// The engine's matrices (FeaturesOf, LabelsOf) are made from a copy of the arrays taken then: the
// caller may change its arrays while the engine trains (csr_arguments.cc).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "data/csr_matrix.h"
#include "data/dataset.h"

namespace xmlt::python {

struct CsrArguments {
  uint64_t rows = 0, cols = 0;
  nanobind::ndarray<const uint64_t, nanobind::ndim<1>, nanobind::c_contig, nanobind::device::cpu> indptr;
  nanobind::ndarray<const uint32_t, nanobind::ndim<1>, nanobind::c_contig, nanobind::device::cpu> indices;
  nanobind::ndarray<const float, nanobind::ndim<1>, nanobind::c_contig, nanobind::device::cpu> values;
};

// Throws a TypeError/ValueError for a tuple of the wrong form.
CsrArguments CsrOf(nanobind::handle parts, const std::string& name);
data::CsrMatrix FeaturesOf(const CsrArguments& a, const std::string& name);
data::CsrMatrix LabelsOf(const CsrArguments& a, const std::string& name);
// Rows without labels, for predict: the features alone.
data::Dataset UnlabelledRows(data::CsrMatrix features, const std::string& name);

}  // namespace xmlt::python
