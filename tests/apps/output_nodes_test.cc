// Issue: reliability, fourth round, rows 1 and 4, through the commands: an output that is a device
// node, a FIFO or a symlink (predict --output, train --model and --metrics), and outputs whose
// temporary names are another output's name. Fifth round, rows 6 to 8: convert into a FIFO, gen's
// --out on a node that is no folder, and two outputs on one FIFO.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/apps/cli_runner.h"
#include "tests/apps/cli_test_support.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::CliResult;
using testing::Data;
using testing::Describe;
using testing::TrainArgs;
using testing::Lines;
using xmlt::testing::ReadFile;
using xmlt::testing::WriteFile;

size_t FilesIn(const std::string& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A node of /dev/null's device in `dir` (root only), or /dev/null itself, which no test can then
// replace (the fault this guards against needs root).
std::string NullDevice(const Data& d) {
  const std::string node = d.dir.File("null");
  return ::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0 ? node : "/dev/null";
}

TEST(OutputNodes, DeviceNodesAreWrittenIntoAndStayDevices) {
  Data d;
  const std::string null_device = NullDevice(d);
  const std::string model = d.dir.File("m.xmlt");
  const CliResult train = Cli(TrainArgs(d, {"--model", null_device, "--metrics", model + ".jsonl"}));
  ASSERT_EQ(train.code, 0) << Describe(train);
  EXPECT_TRUE(fs::is_character_file(null_device)) << "--model replaced " << null_device;
  ASSERT_EQ(Cli(TrainArgs(d, {"--model", model, "--metrics", null_device})).code, 0);
  EXPECT_TRUE(fs::is_character_file(null_device)) << "--metrics replaced " << null_device;
  const CliResult predict = Cli({"predict", "--model", model, "--input", d.test, "--output", null_device});
  EXPECT_EQ(predict.code, 0) << Describe(predict);
  EXPECT_TRUE(fs::is_character_file(null_device)) << "predict --output replaced " << null_device;
  // Nothing was left beside it: no temporary files, no metrics .partial.
  if (null_device != "/dev/null") {
    for (const auto& entry : fs::directory_iterator(d.dir.path()))
      EXPECT_EQ(entry.path().filename().string().find("null."), std::string::npos) << entry.path();
  }
}

TEST(OutputNodes, AFifoReceivesTheOutputAndStaysAFifo) {
  Data d;
  const std::string model = d.dir.File("m.xmlt");
  ASSERT_EQ(Cli(TrainArgs(d, {"--model", model})).code, 0);
  const std::string fifo = d.dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string what : {"predictions", "metrics"}) {
    std::string received;
    std::thread reader([&] {
      std::ifstream in(fifo, std::ios::binary);
      received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    });
    const CliResult r = what == "predictions"
                            ? Cli({"predict", "--model", model, "--input", d.test, "--output", fifo})
                            : Cli(TrainArgs(d, {"--metrics", fifo, "--eval-every", "1"}));
    reader.join();
    EXPECT_EQ(r.code, 0) << what << ": " << Describe(r);
    EXPECT_TRUE(fs::is_fifo(fifo)) << what << " replaced the FIFO";
    const std::vector<std::string> lines = Lines(received);
    if (what == "predictions") {
      EXPECT_EQ(lines.size(), size_t(Data::kTestRows)) << received;
    } else {
      ASSERT_FALSE(lines.empty());
      EXPECT_TRUE(nlohmann::json::parse(lines.back()).contains("p1")) << received;
    }
  }
}

TEST(OutputNodes, ASymlinkedOutputIsFollowedAndTheLinkKept) {
  Data d;
  fs::create_directory(d.dir.File("models"));
  fs::create_symlink("models/current.xmlt", d.dir.File("model-link"));
  WriteFile(d.dir.File("models/current.xmlt"), "an older model");
  fs::create_symlink("models/metrics.jsonl", d.dir.File("metrics-link"));
  WriteFile(d.dir.File("models/metrics.jsonl"), "older metrics\n");
  const CliResult r =
      Cli(TrainArgs(d, {"--model", d.dir.File("model-link"), "--metrics", d.dir.File("metrics-link")}));
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_TRUE(fs::is_symlink(d.dir.File("model-link")));
  EXPECT_TRUE(fs::is_symlink(d.dir.File("metrics-link")));
  EXPECT_EQ(ReadFile(d.dir.File("models/current.xmlt")).rfind("XMLTMODL", 0), 0u);
  EXPECT_NE(ReadFile(d.dir.File("models/metrics.jsonl")).find("\"p1\""), std::string::npos);
  EXPECT_EQ(FilesIn(d.dir.File("models")), 2u);  // no .partial or temporary file left beside them
  // A link to nothing is refused before training, saying so, and left as it was.
  fs::create_symlink("nowhere/m.xmlt", d.dir.File("dangling"));
  const CliResult dangling = Cli(TrainArgs(d, {"--model", d.dir.File("dangling")}));
  EXPECT_EQ(dangling.code, 2) << Describe(dangling);
  EXPECT_NE(dangling.err.find("--model " + d.dir.File("dangling") + " is a symlink to nothing"), std::string::npos)
      << Describe(dangling);
  EXPECT_TRUE(dangling.out.empty()) << "trained before refusing: " << Describe(dangling);
}

// Row 4: `--metrics F --model F.partial` exited 0 and F held the model's bytes.
TEST(OutputNodes, AnOutputOnAnotherOutputsTemporaryNameIsRefused) {
  Data d;
  const std::string f = d.dir.File("run");
  const std::vector<std::vector<std::string>> cases = {
      {"--metrics", f, "--model", f + ".partial"},
      {"--model", f + ".partial", "--metrics", f},
      {"--metrics", f + ".tmp." + std::to_string(::getpid()), "--model", f},
  };
  for (const auto& flags : cases) {
    const CliResult r = Cli(TrainArgs(d, flags));
    EXPECT_EQ(r.code, 2) << flags[1] << " " << flags[3] << ": " << Describe(r);
    EXPECT_NE(r.err.find("give each output its own path"), std::string::npos) << Describe(r);
    EXPECT_TRUE(r.out.empty()) << "trained before refusing: " << Describe(r);
    EXPECT_FALSE(fs::exists(f)) << flags[1] << " " << flags[3];
  }
  // An input under an output's temporary name would be overwritten while the run goes on.
  const std::string input = d.dir.File("data.partial");
  fs::copy_file(d.train, input);
  const CliResult over_input =
      Cli({"train", "--train", d.train, "--test", input, "--epochs", "1", "--metrics", d.dir.File("data")});
  EXPECT_EQ(over_input.code, 2) << Describe(over_input);
  EXPECT_NE(over_input.err.find("--metrics's temporary file " + input + " is the --test input"), std::string::npos)
      << Describe(over_input);
  // A prediction over the model it reads, under its temporary name.
  const std::string model = d.dir.File("m.xmlt");
  ASSERT_EQ(Cli(TrainArgs(d, {"--model", model})).code, 0);
  const std::string renamed = d.dir.File("p.tmp." + std::to_string(::getpid()));
  fs::copy_file(model, renamed);
  const CliResult predict = Cli({"predict", "--model", renamed, "--input", d.test, "--output", d.dir.File("p")});
  EXPECT_EQ(predict.code, 2) << Describe(predict);
  EXPECT_NE(predict.err.find("is the --model input"), std::string::npos) << Describe(predict);
}

// Issue: reliability, fifth round, row 7. `gen --out` on a file, a FIFO, a device or a socket, or
// below one, exited 1 with the library's "cannot create directories: Not a directory"; each is a
// usage error naming the path and what it is, and nothing is written.
TEST(OutputNodes, GenRefusesAnOutputFolderThatIsNotAFolderNamingWhatItIs) {
  Data d;
  const std::string file = d.dir.File("a-file"), fifo = d.dir.File("pipe"), socket_path = d.dir.File("sock");
  WriteFile(file, "x");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof(address.sun_path));
  std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {file, "--out " + file + " is a regular file, not a folder"},
      {fifo, "--out " + fifo + " is a FIFO, not a folder"},
      {"/dev/null", "--out /dev/null is a character device, not a folder"},
      {socket_path, "--out " + socket_path + " is a socket, not a folder"},
      {file + "/below/deeper", "--out " + file + "/below/deeper: " + file + " is a regular file, not a folder"},
  };
  for (const auto& [out, message] : cases) {
    const CliResult r = Cli({"gen", "--rows", "20", "--test-rows", "5", "--out", out});
    EXPECT_EQ(r.code, 2) << out << ": " << Describe(r);
    EXPECT_NE(r.err.find(message), std::string::npos) << message << "\n" << Describe(r);
  }
  ::close(sock);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(ReadFile(file), "x");
  // A folder that cannot be written (only a user other than root is kept out by its mode).
  if (::geteuid() != 0) {
    const std::string locked = d.dir.File("locked");
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    const CliResult r = Cli({"gen", "--rows", "20", "--test-rows", "5", "--out", locked + "/data"});
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find("the folder " + locked + " is not writable"), std::string::npos) << Describe(r);
    fs::permissions(locked, fs::perms::owner_all);
  }
  // Folders that do not exist yet are made, as before.
  const CliResult nested = Cli({"gen", "--rows", "20", "--test-rows", "5", "--out", d.dir.File("new/deeper")});
  EXPECT_EQ(nested.code, 0) << Describe(nested);
  EXPECT_TRUE(fs::exists(d.dir.File("new/deeper/train.txt")));
}

// Issue: reliability, fifth round, row 8. --model and --metrics on one FIFO were taken, and the
// model's bytes and the JSON lines went down one pipe together; as with one regular file, it is
// refused before training. One character device (/dev/null) may still take both.
TEST(OutputNodes, TwoOutputsOnOneFifoAreRefused) {
  Data d;
  const std::string fifo = d.dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("pipe", d.dir.File("pipe-link"));
  // A reader holds the FIFO open, so that a run that takes it writes into it rather than waiting.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  for (const std::string& other : {fifo, d.dir.File("pipe-link")}) {
    const CliResult r = Cli(TrainArgs(d, {"--model", fifo, "--metrics", other}));
    EXPECT_EQ(r.code, 2) << Describe(r);
    EXPECT_NE(r.err.find("are the same file"), std::string::npos) << Describe(r);
    EXPECT_TRUE(r.out.empty()) << "trained before refusing: " << Describe(r);
  }
  ::close(reader);
  EXPECT_TRUE(fs::is_fifo(fifo));
  const CliResult discarded = Cli(TrainArgs(d, {"--model", "/dev/null", "--metrics", "/dev/null"}));
  EXPECT_EQ(discarded.code, 0) << Describe(discarded);
}

// Issue: reliability, fifth round, row 6. `convert -o FIFO` exited 1 with "cannot seek in the
// temporary file", and the reader got a cache without its header's checksum. The cache is written
// front to back, so a FIFO receives it whole, as the promise for FIFO outputs says.
TEST(OutputNodes, ConvertWritesAWholeCacheIntoAFifo) {
  Data d;
  const std::string fifo = d.dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const CliResult r = Cli({"convert", d.train, "-o", fifo});
  reader.join();
  EXPECT_EQ(r.code, 0) << Describe(r);
  EXPECT_TRUE(fs::is_fifo(fifo));
  // What came through the pipe is the cache a file would hold: info reads it, every row.
  const std::string copy = d.dir.File("received.xmlb");
  WriteFile(copy, received);
  const CliResult info = Cli({"info", copy});
  EXPECT_EQ(info.code, 0) << Describe(info);
  EXPECT_NE(info.out.find(std::to_string(Data::kTrainRows)), std::string::npos) << Describe(info);
  const std::string file = d.dir.File("file.xmlb");
  ASSERT_EQ(Cli({"convert", d.train, "-o", file}).code, 0);
  EXPECT_EQ(ReadFile(file), received);
}

}  // namespace
}  // namespace xmlt::apps
