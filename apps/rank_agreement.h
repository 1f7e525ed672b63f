// Under an MPI launcher every rank reads its own command line and its own copy of the data, so the
// ranks of one run can disagree: a stale copy of a file on one server, a flag given to one rank
// only. They would train silently on a mix (another seed, rate or file of as many rows), or one
// would wait for the others until --rank-timeout (another --epochs). Before any training the ranks
// compare their settings and data checksums with rank 0's, and all refuse alike when they differ.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ranks/rank_group.h"

namespace xmlt::apps {

// Every rank finds the same disagreement, so every rank can end by itself: none waits.
class RanksDisagree : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// `settings`: this rank's run fingerprint and the flags that steer the loop (setting name ->
// value, named as FlagOf knows them). A collective: every rank calls it once, at the same point.
// Throws RanksDisagree on every rank, naming each flag or file and each rank that differs from
// rank 0. Does nothing for one rank.
void CheckRanksAgree(ranks::RankGroup* ranks, const nlohmann::json& settings);

}  // namespace xmlt::apps
