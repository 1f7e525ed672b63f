// The check every unsigned integer flag takes. CLI11 reads them with strtoull, which wraps "-1" to
// 2^64 - 1 and saturates a number beyond 2^64 - 1 to it: `--seed 18446744073709551616` would run
// as another seed than the one given.
#pragma once

namespace CLI {
class Validator;
}  // namespace CLI

namespace xmlt::apps {

// Refuses a negative value ("must not be negative") and one beyond 2^64 - 1 ("is beyond
// 18446744073709551615, the largest it can be"). No description, so that --help keeps showing the
// plain type and default. (Narrower types are range-checked by CLI11 itself.)
extern const CLI::Validator kUnsignedValue;

}  // namespace xmlt::apps
