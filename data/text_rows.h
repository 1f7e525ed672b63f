// The grammar of one text row, shared by every text format: an optional label list ("l1,l2"),
// then "f:v" features; a run of whole lines parses to a ChunkResult. Internal to the text readers
// (text_reader.cc, text_body.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "data/canonical_row.h"

namespace xmlt::data::text {

constexpr uint64_t kMaxId = std::numeric_limits<uint32_t>::max();
constexpr size_t kNone = std::numeric_limits<size_t>::max();

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
inline bool IsDelimiter(char c) { return IsBlank(c) || c == '\n'; }

// The token starting at `p`, printable and bounded, for messages.
std::string Quote(const char* p, const char* end);

// A feature as parsed, in the form SortAndSumFeatures makes canonical in place.
using Entry = FeatureEntry;

// What a run of rows parses to. Rules that apply to one row at a time only, so any chunking of the
// file gives the same rows; errors and warnings keep the smallest byte offset, so the first in file
// order wins whatever the thread count.
struct ChunkResult {
  std::vector<uint64_t> feature_ends;  // per row: end of its entries in `features`
  std::vector<uint64_t> label_ends;    // per row: end of its ids in `labels` (labeled text only)
  std::vector<Entry> features;
  std::vector<uint32_t> labels;
  uint64_t feature_bound = 0;  // max feature id + 1 (0 when none)
  uint64_t label_bound = 0;
  size_t error_offset = kNone;
  std::string error;
  size_t duplicate_offset = kNone;  // start of the first line with a repeated feature id
};

struct ParseSpec {
  bool labeled = true;  // rows start with an optional label list
  bool one_based = false;
  // Ids must stay below the declared D (or L) when known; otherwise the count, max id + 1, must
  // still fit the 32-bit column counts that the cache and the model accept.
  uint64_t feature_limit = kMaxId;
  uint64_t label_limit = kMaxId;
  bool feature_limit_declared = false;
  bool label_limit_declared = false;
  const char* column_kind = "feature";  // what a column id is called: "label" in a split pair's Y file
};

// Parses the lines in [begin, end) (offsets into `text`) into `out`; stops at the first error,
// which `out` records.
void ParseRows(std::string_view text, const ParseSpec& spec, size_t begin, size_t end, ChunkResult* out);

}  // namespace xmlt::data::text
