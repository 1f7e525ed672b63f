// CSR matrices from the package's arrays; see csr_arguments.h.
#include "python/src/csr_arguments.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include "data/input_error.h"
#include "data/memory_dataset.h"

namespace nb = nanobind;

namespace xmlt::python {
namespace {

// The arrays the engine keeps: copies, checked and read only by it.
struct OwnedArrays {
  std::vector<uint64_t> indptr;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

// The caller's arrays stay the caller's: another Python thread, or the run's own callback, may
// write them while the engine trains with the GIL released. Checked in place and then read again,
// an id rewritten in between would index memory unchecked; so they are copied once, here, and
// everything after (the checks, the sort of unsorted rows, training) reads the copy.
data::CsrArrays ArraysOf(const CsrArguments& a, const std::string& name) {
  if (a.indptr.shape(0) != a.rows + 1)
    throw data::InputError(name, 0, "malformed CSR arrays: indptr has " + std::to_string(a.indptr.shape(0)) +
                                        " entries for " + std::to_string(a.rows) + " rows");
  auto owned = std::make_shared<OwnedArrays>();
  owned->indptr.assign(a.indptr.data(), a.indptr.data() + a.rows + 1);
  const uint64_t nnz = owned->indptr.back();  // of the copy: the offsets checked are the offsets used
  if (a.indices.shape(0) != nnz || a.values.shape(0) != nnz)
    throw data::InputError(name, 0, "malformed CSR arrays: indptr ends at " + std::to_string(nnz) + " but indices has " +
                                        std::to_string(a.indices.shape(0)) + " and data " +
                                        std::to_string(a.values.shape(0)) + " entries");
  owned->indices.assign(a.indices.data(), a.indices.data() + nnz);
  owned->values.assign(a.values.data(), a.values.data() + nnz);
  data::CsrArrays arrays;
  arrays.num_rows = a.rows;
  arrays.num_cols = a.cols;
  arrays.indptr = owned->indptr.data();
  arrays.indices = owned->indices.data();
  arrays.values = owned->values.data();
  arrays.owner = std::move(owned);  // the matrices made from them hold the copy
  return arrays;
}

}  // namespace

CsrArguments CsrOf(nb::handle parts, const std::string& name) {
  nb::tuple t = nb::cast<nb::tuple>(parts);
  if (t.size() != 5) throw std::invalid_argument(name + ": expected (rows, cols, indptr, indices, data)");
  CsrArguments a;
  a.rows = nb::cast<uint64_t>(t[0]);
  a.cols = nb::cast<uint64_t>(t[1]);
  // No implicit conversion: a converted array would be a temporary, freed while still borrowed.
  a.indptr = nb::cast<decltype(a.indptr)>(t[2], false);
  a.indices = nb::cast<decltype(a.indices)>(t[3], false);
  a.values = nb::cast<decltype(a.values)>(t[4], false);
  return a;
}

data::CsrMatrix FeaturesOf(const CsrArguments& a, const std::string& name) {
  return data::FeaturesFromArrays(ArraysOf(a, name), name);
}

data::CsrMatrix LabelsOf(const CsrArguments& a, const std::string& name) {
  return data::LabelsFromArrays(ArraysOf(a, name), name);
}

data::Dataset UnlabelledRows(data::CsrMatrix features, const std::string& name) {
  data::Dataset rows;
  rows.labels.num_rows = features.num_rows;
  rows.labels.row_ptr = data::SharedArray<uint64_t>(std::vector<uint64_t>(features.num_rows + 1, 0));
  rows.features = std::move(features);
  rows.source = name;
  return rows;
}

}  // namespace xmlt::python
