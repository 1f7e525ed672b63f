// The grammar of one text row; see text_rows.h.
#include "data/text_rows.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace xmlt::data::text {
namespace {

inline bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t' && c != '\r' && c != '\n') || u == 0x7f;
}

enum class Digits { kOk, kNone, kTooLarge };

// Hand-rolled because it is the hot loop: ids are plain decimal digits, at most 2^32-1.
inline Digits ParseId(const char*& p, const char* end, uint64_t* value) {
  const char* start = p;
  uint64_t v = 0;
  bool too_large = false;
  while (p < end && static_cast<unsigned>(*p - '0') < 10) {
    v = v * 10 + static_cast<unsigned>(*p - '0');
    if (v > kMaxId) {
      too_large = true;
      v = kMaxId;  // keeps consuming digits without overflowing
    }
    ++p;
  }
  *value = v;
  if (p == start) return Digits::kNone;
  return too_large ? Digits::kTooLarge : Digits::kOk;
}

class ChunkParser {
 public:
  ChunkParser(std::string_view text, const ParseSpec& spec, ChunkResult* out)
      : base_(text.data()), end_(text.data() + text.size()), spec_(spec), out_(*out) {}

  // Parses the lines in [begin, end) (offsets into the text); stops at the first error.
  void Run(size_t begin, size_t end) {
    const char* p = base_ + begin;
    const char* stop = base_ + end;
    end_ = stop;
    const size_t guess_rows = (end - begin) / 256 + 1;
    out_.feature_ends.reserve(guess_rows);
    if (spec_.labeled) out_.label_ends.reserve(guess_rows);
    out_.features.reserve((end - begin) / 10 + 1);
    while (p < stop) {
      if (!ParseRow(p)) return;
    }
  }

 private:
  bool Fail(const char* at, std::string problem) {
    out_.error_offset = static_cast<size_t>(at - base_);
    out_.error = std::move(problem);
    return false;
  }
  // `bad` is the offending byte; control bytes mean the file is not text at all.
  bool FailAt(const char* bad, const char* token, std::string problem) {
    // Numbers, commas, colons and spaces are all ASCII: a control byte or one above 0x7f means the
    // file is not text at all.
    if (bad < end_ && (IsControl(*bad) || static_cast<unsigned char>(*bad) >= 0x80)) {
      char text[64];
      std::snprintf(text, sizeof text, "binary data (byte 0x%02x)", static_cast<unsigned char>(*bad));
      return Fail(bad, text);
    }
    return Fail(token, std::move(problem));
  }

  bool CheckId(const char* token, uint64_t* id, bool feature) {
    const char* kind = feature ? spec_.column_kind : "label";
    if (spec_.one_based) {
      if (*id == 0) return Fail(token, std::string(kind) + " id 0 in a one-based file");
      --*id;
    }
    const uint64_t limit = feature ? spec_.feature_limit : spec_.label_limit;
    if (*id >= limit) {
      const bool declared = feature ? spec_.feature_limit_declared : spec_.label_limit_declared;
      const uint64_t shown = *id + (spec_.one_based ? 1 : 0);
      std::string problem = std::string(kind) + " id " + std::to_string(shown) + " out of range";
      const std::string ids = (spec_.one_based ? ", ids 1.." : ", ids 0..") +
                              std::to_string(limit - (spec_.one_based ? 0 : 1)) + ")";
      if (declared) {
        problem += " (the header declares " + std::to_string(limit) + " " + kind + "s" + ids;
      } else {
        problem += " (at most 2^32-1 " + std::string(kind) + "s" + ids;
      }
      return Fail(token, problem);
    }
    return true;
  }

  // Labels occupy [p, q): "l1,l2,...".
  bool ParseLabels(const char* p, const char* q) {
    const char* list = p;
    for (;;) {
      const char* token = p;
      uint64_t id;
      const Digits digits = ParseId(p, q, &id);
      if (digits == Digits::kNone) {
        if (p < q && *p == '-') return Fail(token, "negative label id in " + Quote(list, q));
        if (p < q && *p == ',') return Fail(token, "empty label id in " + Quote(list, q));
        return FailAt(p, list, "invalid label list " + Quote(list, q));
      }
      if (digits == Digits::kTooLarge)
        return Fail(token, "label id in " + Quote(list, q) + " exceeds 2^32-1");
      if (!CheckId(token, &id, false)) return false;
      out_.labels.push_back(static_cast<uint32_t>(id));
      if (p == q) return true;
      if (*p != ',') return FailAt(p, list, "invalid label list " + Quote(list, q));
      if (++p == q) return Fail(list, "label list " + Quote(list, q) + " ends with ','");
    }
  }

  bool ParseFeature(const char*& p) {
    const char* token = p;
    uint64_t id;
    const Digits digits = ParseId(p, end_, &id);
    if (digits == Digits::kNone) {
      if (p < end_ && *p == ':')
        return Fail(token, "feature token " + Quote(token, end_) + " has no id");
      if (p < end_ && *p == '-') return Fail(token, "negative feature id in " + Quote(token, end_));
      return FailAt(p, token, "invalid feature token " + Quote(token, end_));
    }
    if (p == end_ || *p != ':') {
      if (p == end_ || IsDelimiter(*p)) {
        return Fail(token, "feature token " + Quote(token, end_) + " has no ':value'");
      }
      return FailAt(p, token, "invalid feature token " + Quote(token, end_));
    }
    if (digits == Digits::kTooLarge) {
      return Fail(token, "feature id in " + Quote(token, end_) + " exceeds 2^32-1");
    }
    ++p;
    if (p == end_ || IsDelimiter(*p)) {
      return Fail(token, "feature token " + Quote(token, end_) + " has no value");
    }
    // from_chars takes no plus sign; after one, a minus sign would be a second sign ("+-3").
    if (*p == '+' && ++p < end_ && *p == '-') return FailAt(p, token, "invalid value in " + Quote(token, end_));
    double value;
    const auto [next, ec] = std::from_chars(p, end_, value);
    if (ec == std::errc::invalid_argument) {
      return FailAt(p, token, "invalid value in " + Quote(token, end_));
    }
    if (next < end_ && !IsDelimiter(*next)) {
      return FailAt(next, token, "invalid value in " + Quote(token, end_));
    }
    // Doubles from halfway above FLT_MAX would round to infinity as floats.
    constexpr double kFloatOverflow = 0x1.ffffffp+127;
    if (ec == std::errc::result_out_of_range ||
        (std::isfinite(value) && std::fabs(value) >= kFloatOverflow)) {
      return Fail(token, "value in " + Quote(token, end_) + " is out of float range");
    }
    if (!std::isfinite(value)) {
      return Fail(token, "value in " + Quote(token, end_) + " is NaN or infinite");
    }
    if (!CheckId(token, &id, true)) return false;
    out_.features.push_back({static_cast<uint32_t>(id), static_cast<float>(value)});
    p = next;
    return true;
  }

  // On success `p` is at the start of the next line.
  bool ParseRow(const char*& p) {
    const char* line = p;
    const size_t feature_begin = out_.features.size();
    const size_t label_begin = out_.labels.size();
    if (spec_.labeled && !IsDelimiter(*p)) {
      const char* q = p;
      while (q < end_ && !IsDelimiter(*q)) ++q;
      // A first token with ':' is a feature: the row has no labels.
      if (std::memchr(p, ':', static_cast<size_t>(q - p)) == nullptr) {
        if (!ParseLabels(p, q)) return false;
        p = q;
      }
    }
    for (;;) {
      while (p < end_ && IsBlank(*p)) ++p;
      if (p == end_) break;
      if (*p == '\n') {
        ++p;
        break;
      }
      if (!ParseFeature(p)) return false;
    }
    return FinishRow(line, feature_begin, label_begin);
  }

  // Puts the row in the readers' form (canonical_row.h); a repeated feature is remembered for the
  // reader's warning. The error names the line, and the id as the file spells it.
  bool FinishRow(const char* line, size_t feature_begin, size_t label_begin) {
    auto& features = out_.features;
    const SummedFeatures summed =
        SortAndSumFeatures(features.data() + feature_begin, features.data() + features.size());
    if (summed.summed && out_.duplicate_offset == kNone) out_.duplicate_offset = line - base_;
    if (summed.out_of_range) {
      return Fail(line, RepeatedFeatureSumProblem(summed.out_of_range_id + (spec_.one_based ? 1 : 0)));
    }
    features.resize(feature_begin + summed.size);
    if (features.size() > feature_begin) {
      out_.feature_bound = std::max<uint64_t>(out_.feature_bound, features.back().id + 1ull);
    }
    out_.feature_ends.push_back(features.size());
    if (!spec_.labeled) return true;

    auto& labels = out_.labels;
    labels.resize(label_begin + SortAndDedupLabels(labels.data() + label_begin, labels.data() + labels.size()));
    if (labels.size() > label_begin) {
      out_.label_bound = std::max<uint64_t>(out_.label_bound, labels.back() + 1ull);
    }
    out_.label_ends.push_back(labels.size());
    return true;
  }

  const char* base_;
  const char* end_;
  const ParseSpec& spec_;
  ChunkResult& out_;
};

}  // namespace

std::string Quote(const char* p, const char* end) {
  std::string out = "'";
  for (size_t n = 0; p < end && !IsDelimiter(*p); ++p, ++n) {
    if (n == 40) {
      out += "...";
      break;
    }
    if (IsControl(*p) || static_cast<unsigned char>(*p) >= 0x80) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(*p));
      out += hex;
    } else {
      out += *p;
    }
  }
  return out + "'";
}

void ParseRows(std::string_view text, const ParseSpec& spec, size_t begin, size_t end, ChunkResult* out) {
  ChunkParser(text, spec, out).Run(begin, end);
}

}  // namespace xmlt::data::text
