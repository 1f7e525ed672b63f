// A number in a message as the user would write it: the shortest text that reads back as the same
// value ("0.5000001", not std::to_string's "0.500000", which is another number).
#pragma once

#include <charconv>
#include <string>

namespace xmlt::apps {

inline std::string ShortestText(double value) {
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

inline std::string ShortestText(float value) {
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace xmlt::apps
