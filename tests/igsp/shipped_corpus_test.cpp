// What the repository ships for the IGSP study refers only to files in the
// repository: every manifest's packs and files, and the default General and
// Code inputs, are relative paths (or, for the defaults, paths) inside it
// that exist; and the shipped packs hold exactly the text the shipped
// manifest names. A fresh machine needs nothing else.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/file_io.h"
#include "models/igsp/corpus.h"

namespace clustertwin::models::igsp {
namespace {

namespace fs = std::filesystem;

const fs::path kRepository = fs::weakly_canonical(CT_SOURCE_DIR);
const fs::path kData = kRepository / "models/igsp/data";

// Empty when `path` is a file inside the repository; else what is wrong with it.
std::string outside_repository(const fs::path& path) {
  const fs::path resolved = fs::weakly_canonical(path);
  const fs::path inside = resolved.lexically_relative(kRepository);
  if (inside.empty() || *inside.begin() == "..") return resolved.string() + " is outside " + kRepository.string();
  if (!fs::is_regular_file(resolved)) return resolved.string() + " does not exist";
  return "";
}

// A path a manifest names must be relative and stay below the folder it is relative to.
std::string not_relative_and_below(const std::string& path) {
  const fs::path p(path);
  if (p.empty()) return "an empty path";
  if (p.is_absolute()) return "'" + path + "' is absolute";
  for (const fs::path& part : p.lexically_normal()) {
    if (part == "..") return "'" + path + "' climbs out with ..";
  }
  return "";
}

std::vector<fs::path> shipped_manifests() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(kData)) {
    if (ends_with(entry.path().filename().string(), ".manifest.json")) out.push_back(entry.path());
  }
  return out;
}

TEST(ShippedCorpusTest, DefaultInputsAreFilesInTheRepository) {
  for (Domain d : {Domain::kGeneral, Domain::kCode}) {
    const std::vector<std::string> roots = default_roots(d);
    ASSERT_FALSE(roots.empty()) << domain_name(d);
    for (const std::string& root : roots)
      EXPECT_EQ(outside_repository(root), "") << domain_name(d);
  }
}

TEST(ShippedCorpusTest, ManifestsReferOnlyToFilesInTheRepository) {
  const std::vector<fs::path> manifests = shipped_manifests();
  ASSERT_FALSE(manifests.empty()) << kData;
  for (const fs::path& manifest : manifests) {
    SCOPED_TRACE(manifest.string());
    const auto m = nlohmann::json::parse(*read_file(manifest.string()));
    int files = 0;
    for (const auto& d : m.at("corpus")) {
      const std::string domain_pack = d.value("pack", std::string());
      for (const auto& f : d.value("files", nlohmann::json::array())) {
        ++files;
        const std::string path = f.at("path").get<std::string>(), pack = f.value("pack", domain_pack);
        SCOPED_TRACE(path);
        EXPECT_EQ(not_relative_and_below(path), "");  // a pack's entry name, or a file beside the checkpoint
        if (pack.empty()) {
          EXPECT_EQ(outside_repository(manifest.parent_path() / path), "");
        } else {
          EXPECT_EQ(not_relative_and_below(pack), "");
          EXPECT_EQ(outside_repository(manifest.parent_path() / pack), "");
        }
      }
    }
    EXPECT_GT(files, 0);
  }
}

TEST(ShippedCorpusTest, PacksHoldTheTextTheManifestNames) {
  const auto m = nlohmann::json::parse(*read_file((kData / "byte_lm.manifest.json").string()));
  int domains = 0;
  for (const auto& d : m.at("corpus")) {
    if (!d.contains("files")) continue;
    ++domains;
    const Domain domain = d.at("domain") == "code" ? Domain::kCode : Domain::kGeneral;
    auto text =
        system_text(domain, {(kData / d.at("pack").get<std::string>()).string()}, m.at("domain_bytes").get<uint64_t>());
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    EXPECT_EQ(text->train.size(), d.at("train_bytes").get<size_t>());
    EXPECT_EQ(text->heldout.size(), d.at("heldout_bytes").get<size_t>());
    ASSERT_EQ(text->files.size(), d.at("files").size());
    for (size_t i = 0; i < text->files.size(); ++i) {
      const auto& f = d.at("files")[i];
      EXPECT_EQ(text->files[i].path, f.at("path").get<std::string>());
      EXPECT_EQ(text->files[i].bytes, f.at("bytes").get<uint64_t>()) << text->files[i].path;
      EXPECT_EQ(text->files[i].crc32, f.at("crc32").get<uint32_t>()) << text->files[i].path;
    }
  }
  EXPECT_EQ(domains, 2);  // General and Code
}

}  // namespace
}  // namespace clustertwin::models::igsp
