// The check of a rate held in a float (--input-lr). CLI11 reads "1e-300" into a float as 0, which
// the flag's own check then calls "not a positive number"; this one sees the text first and says
// what the number is: too small or too large for a float.
#pragma once

namespace CLI {
class Validator;
}  // namespace CLI

namespace xmlt::apps {

// Refuses a positive number below a float's smallest normal value, and one beyond its largest,
// naming the limit. Anything else passes to the conversion and the flag's checks. No description,
// so that --help keeps showing the plain type and default.
extern const CLI::Validator kFloatRate;

}  // namespace xmlt::apps
