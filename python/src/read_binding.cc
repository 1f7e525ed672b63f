// read(): a data file, in any format `xmltrain train` reads, as CSR arrays that the package makes
// scipy matrices of. The arrays are the loaded dataset's own (no copy), kept alive by it.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "apps/cli.h"
#include "apps/command_input.h"
#include "data/dataset_loader.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace xmlt::python {
namespace {

template <class T>
nb::object ArrayOf(const data::SharedArray<T>& values, const std::shared_ptr<data::Dataset>& owner) {
  // The capsule holds a reference to the whole dataset until numpy lets the array go.
  auto* keep = new std::shared_ptr<data::Dataset>(owner);
  nb::capsule capsule(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<data::Dataset>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, const T, nb::ndim<1>>(values.data(), {values.size()}, capsule));
}

nb::tuple Parts(const data::CsrMatrix& m, const std::shared_ptr<data::Dataset>& owner) {
  return nb::make_tuple(m.num_rows, m.num_cols, ArrayOf(m.row_ptr, owner), ArrayOf(m.col_idx, owner),
                        m.binary() ? nb::none() : ArrayOf(m.values, owner));
}

// (features parts, labels parts, warnings); labels' values None (each is 1).
nb::tuple Read(const std::string& path, const std::string& labels_path, const std::string& format, bool one_based,
               bool no_cache) {
  apps::DataFlags flags;
  flags.format = format;
  flags.one_based = one_based;
  flags.no_cache = no_cache;
  const data::LoadOptions options = flags.ToLoadOptions();
  std::shared_ptr<data::Dataset> dataset;
  {
    nb::gil_scoped_release release;
    dataset = std::make_shared<data::Dataset>(data::LoadDataset(path, options, labels_path));
  }
  return nb::make_tuple(Parts(dataset->features, dataset), Parts(dataset->labels, dataset), dataset->warnings);
}

}  // namespace

void BindRead(nb::module_& m) {
  m.def("read", &Read, nb::arg("path"), nb::arg("labels_path"), nb::arg("format"), nb::arg("one_based"),
        nb::arg("no_cache"));
}

}  // namespace xmlt::python
