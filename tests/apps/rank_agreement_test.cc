// Ranks comparing their settings before training (issue: reliability, third round, row 4), with
// threads playing the ranks; tests/scripts/mpi_ranks_agree_test.sh runs it under mpirun.
#include "apps/rank_agreement.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace xmlt::apps {
namespace {

// What CheckRanksAgree said on each rank: "" when it let the run go on.
std::vector<std::string> Check(const std::vector<nlohmann::json>& settings) {
  std::vector<std::unique_ptr<ranks::RankGroup>> groups = ranks::MakeThreadGroups(int(settings.size()));
  std::vector<std::string> said(settings.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < settings.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        CheckRanksAgree(groups[r].get(), settings[r]);
      } catch (const RanksDisagree& e) {
        said[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  return said;
}

TEST(RankAgreement, RanksThatAgreeGoOn) {
  const nlohmann::json same = {{"seed", 1}, {"lr", "0.3"}, {"train_checksum", 77}};
  for (const std::string& said : Check({same, same, same})) EXPECT_EQ(said, "");
}

TEST(RankAgreement, EveryRankRefusesNamingEachFlagAndRankThatDiffers) {
  const nlohmann::json first = {{"seed", 1}, {"lr", "0.3"}, {"train_checksum", 77}, {"epochs", 2.0}};
  nlohmann::json stale = first, other_seed = first;
  stale["train_checksum"] = 78;
  other_seed["seed"] = 5;
  other_seed["inject_fault"] = nlohmann::json::array({"device=1,megabatch=2"});  // a key rank 0 lacks
  const std::vector<std::string> said = Check({first, stale, other_seed});
  for (const std::string& text : said) {
    EXPECT_EQ(text, said[0]);  // every rank alike, so none waits for another
    EXPECT_NE(text.find("--train (checksum): the file's content differs on rank 1"), std::string::npos) << text;
    EXPECT_NE(text.find("--seed: rank 0 1, rank 2 5"), std::string::npos) << text;
    EXPECT_NE(text.find("--inject-fault: rank 0 null, rank 2 [\"device=1,megabatch=2\"]"), std::string::npos) << text;
    EXPECT_EQ(text.find("--lr"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace xmlt::apps
