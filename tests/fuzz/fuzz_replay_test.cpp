// Every fuzz target's seeds and saved crashers (tests/fuzz/corpora.txt,
// tests/fuzz/crashers/TARGET/) through the target's function, in the
// ordinary build: a finding that was fixed stays fixed. A target's checks
// abort on a failure, which fails this test.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/fuzz/fuzz_targets.h"

namespace clustertwin::fuzz {
namespace {

using Target = int (*)(const uint8_t*, size_t);

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> all{
      {"trace", fuzz_trace},
      {"plan_json", fuzz_plan_json},
      {"profile_yaml", fuzz_profile_yaml},
      {"device_yaml", fuzz_device_yaml},
      {"chakra_et", fuzz_chakra_et},
      {"kernel_trace", fuzz_kernel_trace},
      {"state_dump", fuzz_state_dump},
      {"checkpoint_manifest", fuzz_checkpoint_manifest},
  };
  return all;
}

const std::filesystem::path kRoot(CT_SOURCE_DIR);

// The files of a glob whose last component is "*" or "*SUFFIX".
std::vector<std::filesystem::path> expand(const std::string& glob) {
  const std::filesystem::path pattern = kRoot / glob;
  const std::string last = pattern.filename().string();
  const std::string suffix = last.substr(last.find('*') + 1);
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pattern.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// corpora.txt: target -> its seed files, then its crashers.
std::map<std::string, std::vector<std::filesystem::path>> inputs() {
  std::map<std::string, std::vector<std::filesystem::path>> out;
  std::ifstream in(kRoot / "tests/fuzz/corpora.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string target, glob;
    words >> target;
    while (words >> glob)
      for (const auto& p : expand(glob))
        out[target].push_back(p);
    for (const auto& p : expand("tests/fuzz/crashers/" + target + "/*"))
      out[target].push_back(p);
  }
  return out;
}

TEST(FuzzReplayTest, EveryTargetHasSeedsAndEveryListedTargetExists) {
  const auto all = inputs();
  for (const auto& [name, target] : targets()) {
    ASSERT_TRUE(all.count(name)) << name << " has no line in corpora.txt";
    EXPECT_FALSE(all.at(name).empty()) << name << ": no seed file matches";
  }
  for (const auto& [name, files] : all)
    EXPECT_TRUE(targets().count(name)) << "corpora.txt names an unknown target " << name;
}

TEST(FuzzReplayTest, SeedsAndCrashersPassEveryTarget) {
  for (const auto& [name, files] : inputs()) {
    const auto target = targets().find(name);
    if (target == targets().end()) continue;
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      const std::string data = bytes.str();
      SCOPED_TRACE(name + ": " + file.string());
      EXPECT_EQ(target->second(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0);
    }
  }
}

}  // namespace
}  // namespace clustertwin::fuzz
