// How a dataset's text is read: the settings LoadDataset (dataset_loader.h) takes and the text
// readers (text_reader.h) parse with.
#pragma once

namespace xmlt::data {

enum class TextFormat { kAuto, kXmlRepo, kLibsvm };

struct LoadOptions {
  TextFormat format = TextFormat::kAuto;  // kAuto: a first line of exactly three integers is a header
  bool one_based = false;                 // ids in the file start at 1
  bool use_cache = true;                  // read PATH.xmlb instead of PATH while PATH is unchanged
  int threads = 0;                        // parsing threads; 0 = all
};

}  // namespace xmlt::data
