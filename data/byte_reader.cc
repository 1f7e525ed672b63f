// The error of ByteReader, out of line so that the reads themselves stay small; see byte_reader.h.
#include "data/byte_reader.h"

#include "data/input_error.h"

namespace xmlt::data {

void ByteReader::TooShort(uint64_t count, const char* what) const {
  throw InputError(file_, 0,
                   kind_ + " too short: " + what + " needs " + std::to_string(count) + " bytes at offset " +
                       std::to_string(pos_) + ", " + std::to_string(remaining()) + " remain");
}

}  // namespace xmlt::data
