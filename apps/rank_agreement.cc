// Ranks comparing their settings; see rank_agreement.h.
#include "apps/rank_agreement.h"

#include <set>
#include <vector>

#include "apps/setting_flags.h"

namespace xmlt::apps {

void CheckRanksAgree(ranks::RankGroup* ranks, const nlohmann::json& settings) {
  if (ranks->size() <= 1) return;
  const std::string mine = settings.dump();
  const std::vector<std::vector<uint8_t>> all = ranks->AllGather(std::vector<uint8_t>(mine.begin(), mine.end()));
  const nlohmann::json first = nlohmann::json::parse(all[0].begin(), all[0].end());
  std::string differences;
  for (size_t r = 1; r < all.size(); ++r) {
    const nlohmann::json other = nlohmann::json::parse(all[r].begin(), all[r].end());
    std::set<std::string> keys;
    for (const auto& [key, value] : first.items()) keys.insert(key);
    for (const auto& [key, value] : other.items()) keys.insert(key);
    for (const std::string& key : keys) {
      const nlohmann::json a = first.value(key, nlohmann::json()), b = other.value(key, nlohmann::json());
      if (a == b) continue;
      const bool checksum = key.size() > 9 && key.compare(key.size() - 9, 9, "_checksum") == 0;
      differences += "\n  " + FlagOf(key) +
                     (checksum ? ": the file's content differs on rank " + std::to_string(r) + " (a stale copy?)"
                               : ": rank 0 " + (a.is_string() ? a.get<std::string>() : a.dump()) + ", rank " +
                                     std::to_string(r) + " " + (b.is_string() ? b.get<std::string>() : b.dump()));
    }
  }
  if (!differences.empty())
    throw RanksDisagree("the ranks of this run disagree on their settings or data (every rank must run the same "
                        "command on the same files):" + differences);
}

}  // namespace xmlt::apps
