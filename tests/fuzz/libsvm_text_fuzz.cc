// Fuzz target: libSVM multi-label text (no header, "l1,l2 f:v ..." rows), read with
// --format libsvm.
#include "tests/fuzz/labeled_text_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xmlt::fuzz::FuzzLabeledText(data, size, xmlt::data::TextFormat::kLibsvm);
  return 0;
}
