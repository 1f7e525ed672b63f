// AdviseHugePages changes how a buffer is backed, never what it holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/huge_pages.h"

namespace xmlt::kernels::cpu {
namespace {

TEST(HugePages, AdvisedBuffersKeepTheirContents) {
  // 7 MiB and a few bytes, not aligned to 2 MiB: whole huge pages inside, ragged ends outside.
  for (const size_t floats : {size_t(1), size_t(1000), size_t(7 << 18) + 3}) {
    std::vector<float> values(floats);
    for (size_t i = 0; i < floats; ++i) values[i] = float(i % 1009) * 0.5f;
    AdviseHugePages(values.data(), values.size() * sizeof(float));
    for (size_t i = 0; i < floats; ++i) ASSERT_EQ(values[i], float(i % 1009) * 0.5f) << i << " of " << floats;
    values.back() = -1.0f;  // still writable
    EXPECT_EQ(values.back(), -1.0f);
  }
  AdviseHugePages(nullptr, 0);  // nothing to advise
}

}  // namespace
}  // namespace xmlt::kernels::cpu
