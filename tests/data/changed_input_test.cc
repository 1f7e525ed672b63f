// Issue: reliability, fourth round, row 5. A plain data file rewritten while it was read killed
// `convert`, `train --no-cache` and `info` with SIGBUS (exit 135, no message): the text is a
// memory mapping, and reading a mapped page past the file's new end faults. Such a fault now
// reads zeros (mapped_file.h), and the loader refuses the file as changed while it was read.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "data/text_windows.h"
#include "tests/test_support.h"

namespace xmlt::data {
namespace {

std::string Rows(int rows) {
  std::string text = std::to_string(rows) + " 100 10\n";
  for (int r = 0; r < rows; ++r)
    text += std::to_string(r % 10) + " " + std::to_string(r % 100) + ":1 " + std::to_string((r * 7) % 100) + ":0.5\n";
  return text;
}

// Cut short after it was mapped: reading a page past the new end raised SIGBUS; it now reads as
// zeros and the mapping says it faulted.
TEST(ChangedInput, AFileCutShortUnderItsMappingReadsAsZerosAndSaysSo) {
  const testing::TempDir dir;
  const std::string path = dir.File("train.txt");
  const std::string text = Rows(20000);
  testing::WriteFile(path, text);
  OpenedText opened = OpenText(path);
  ASSERT_NE(opened.file, nullptr);
  EXPECT_FALSE(opened.file->faulted());
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  const std::string_view window = opened.text->window();
  ASSERT_EQ(window.size(), text.size());
  EXPECT_EQ(window.substr(0, 100), std::string_view(text).substr(0, 100));
  size_t zeros = 0;
  for (const char c : window.substr(size_t{1} << 16)) zeros += c == '\0';  // pages wholly past the end
  EXPECT_EQ(zeros, window.size() - (size_t{1} << 16));
  EXPECT_TRUE(opened.file->faulted());
}

// A SIGBUS that is not a guarded mapping's still kills the process, as it did before. Under a
// sanitizer the handler it goes on to is the sanitizer's, which reports and aborts instead.
TEST(ChangedInputDeathTest, ASigbusElsewhereStillKills) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's SIGBUS handler comes before the default action here";
#endif
  const testing::TempDir dir;
  testing::WriteFile(dir.File("t.txt"), Rows(10));
  { OpenedText opened = OpenText(dir.File("t.txt")); }  // the handler is installed
  EXPECT_EXIT(::raise(SIGBUS), ::testing::KilledBySignal(SIGBUS), "");
}

// The whole loader against a writer that keeps rewriting the file (the red-team's case, `cp`
// over a dataset a run is reading): every load gives the whole dataset, or refuses the file by
// name; none faults. Where the rewrite lands in a load is up to the scheduler, so the test
// counts, but does not require, the loads that saw it.
TEST(ChangedInput, ALoadRacingARewriterGivesTheWholeDatasetOrRefusesTheFile) {
  const testing::TempDir dir;
  const std::string path = dir.File("train.txt");
  const std::string text = Rows(200000);  // about 4 MB
  testing::WriteFile(path, text);
  std::atomic<bool> stop{false};
  std::thread rewriter([&] {
    while (!stop) {
      ASSERT_EQ(::truncate(path.c_str(), off_t(text.size() / 3)), 0);
      testing::WriteFile(path, text);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  int whole = 0, refused = 0, said_changed = 0;
  for (int attempt = 0; attempt < 40; ++attempt) {
    try {
      LoadOptions options;
      options.use_cache = false;
      const Dataset dataset = LoadDataset(path, options);
      EXPECT_EQ(dataset.num_rows(), 200000u);
      ++whole;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path) << e.what();
      ++refused;
      said_changed += std::string(e.what()).find("changed while it was read") != std::string::npos;
    }
  }
  stop = true;
  rewriter.join();
  std::printf("40 loads racing a rewriter: %d whole, %d refused (%d saying it changed)\n", whole, refused,
              said_changed);
  EXPECT_EQ(whole + refused, 40);
}

}  // namespace
}  // namespace xmlt::data
