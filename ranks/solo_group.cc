// This process alone; see rank_group.h.
#include <cstdio>
#include <cstdlib>

#include "ranks/rank_group.h"

namespace xmlt::ranks {
namespace {

class SoloGroup : public RankGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void SumInPlace(float*, uint64_t) override {}
  void SumInPlace(double*, uint64_t) override {}
  std::vector<std::vector<uint8_t>> AllGather(const std::vector<uint8_t>& mine) override { return {mine}; }
  void Broadcast(float*, uint64_t, int root) override { CheckBroadcast(root); }
  void Broadcast(uint16_t*, uint64_t, int root) override { CheckBroadcast(root); }
  void Copy(float*, uint64_t, int from, int to) override { CheckCopy(from, to); }
  void Copy(uint16_t*, uint64_t, int from, int to) override { CheckCopy(from, to); }
  [[noreturn]] void Abort(const std::string& why, int exit_code) override {
    std::fprintf(stderr, "xmltrain: %s\n", why.c_str());
    std::exit(exit_code);
  }

 private:
  static void CheckBroadcast(int root) {
    if (root != 0) throw std::invalid_argument("broadcast from rank " + std::to_string(root) + " of 1");
  }
  static void CheckCopy(int from, int to) {
    if (from != 0 || to != 0)
      throw std::invalid_argument("copy from rank " + std::to_string(from) + " to rank " + std::to_string(to) + " of 1");
  }
};

}  // namespace

std::unique_ptr<RankGroup> MakeSoloGroup() { return std::make_unique<SoloGroup>(); }

}  // namespace xmlt::ranks
