// Fuzz target: XML-repository text ("N D L" header, then "l1,l2 f:v ..." rows), read as the CLI
// reads it by default (--format auto) and with --format xml.
#include "tests/fuzz/labeled_text_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xmlt::fuzz::FuzzLabeledText(data, size, xmlt::data::TextFormat::kAuto);
  xmlt::fuzz::FuzzLabeledText(data, size, xmlt::data::TextFormat::kXmlRepo);
  return 0;
}
