// XML-repository text output; rows are formatted in parallel blocks and written in order through an
// AtomicFile, so a failed run never leaves a half-written file.
#include "data/text_writer.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <charconv>

#include "data/atomic_file.h"

namespace xmlt::data {
namespace {

constexpr uint64_t kRowsPerBlock = 4096;
constexpr uint64_t kBlocksPerBatch = 64;  // bounds the memory held by formatted text

template <class T>
void AppendNumber(std::string* out, T value) {
  char buffer[32];
  // Shortest representation that reads back to the same value (floats round-trip exactly).
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, result.ptr);
}

// A row whose labels are empty starts with the space before its first feature, as the format wants.
void FormatRows(const Dataset& dataset, uint64_t begin, uint64_t end, std::string* out) {
  const CsrMatrix& x = dataset.features;
  const CsrMatrix& y = dataset.labels;
  for (uint64_t r = begin; r < end; ++r) {
    for (uint64_t i = y.RowBegin(r); i < y.RowEnd(r); ++i) {
      if (i != y.RowBegin(r)) out->push_back(',');
      AppendNumber(out, y.col_idx[i]);
    }
    for (uint64_t i = x.RowBegin(r); i < x.RowEnd(r); ++i) {
      out->push_back(' ');
      AppendNumber(out, x.col_idx[i]);
      out->push_back(':');
      AppendNumber(out, x.binary() ? 1.0f : x.values[i]);
    }
    out->push_back('\n');
  }
}

}  // namespace

void WriteXmlRepoText(const Dataset& dataset, const std::string& path) {
  AtomicFile file(path);
  file.Write(std::to_string(dataset.num_rows()) + " " + std::to_string(dataset.num_features()) +
             " " + std::to_string(dataset.num_labels()) + "\n");
  const uint64_t rows = dataset.num_rows();
  const uint64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  for (uint64_t first = 0; first < blocks; first += kBlocksPerBatch) {
    const uint64_t count = std::min(kBlocksPerBatch, blocks - first);
    std::vector<std::string> text(count);
    tbb::parallel_for(uint64_t{0}, count, [&](uint64_t b) {
      const uint64_t begin = (first + b) * kRowsPerBlock;
      FormatRows(dataset, begin, std::min(rows, begin + kRowsPerBlock), &text[b]);
    });
    for (const auto& block : text) file.Write(block);
  }
  file.Commit();
}

}  // namespace xmlt::data
