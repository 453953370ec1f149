// The shipped checkpoint (models/igsp/data/byte_lm.pt): its embedded manifest
// is the one shipped beside it, and the corpus it names reads back from the
// repository's packs, checked file by file, on any machine.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "real/igsp/corpus_manifest.h"
#include "real/igsp/evaluate.h"

namespace clustertwin::real::igsp {
namespace {

const std::string kData = std::string(CT_SOURCE_DIR) + "/models/igsp/data";

TEST(ShippedModelTest, EmbeddedManifestIsTheShippedOneAndItsCorpusReadsBack) {
  auto c = models::nets::load_byte_lm(kData + "/byte_lm.pt");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  auto shipped = read_file(kData + "/byte_lm.manifest.json");
  ASSERT_TRUE(shipped.is_ok()) << shipped.status().message();
  EXPECT_EQ(nlohmann::json::parse(c->meta_json), nlohmann::json::parse(*shipped))
      << "regenerate it: clustertwin igsp manifest --model models/igsp/data/byte_lm.pt";
  auto corpus = corpus_for(c->meta_json, kData + "/byte_lm.pt");
  ASSERT_TRUE(corpus.is_ok()) << corpus.status().message();
  ASSERT_EQ(corpus->size(), 4u);
  EXPECT_EQ((*corpus)[0].files.size(), 140u);  // General: 11 licence texts and 129 READMEs
  EXPECT_EQ((*corpus)[1].files.size(), 70u);   // Code: ATen headers
}

}  // namespace
}  // namespace clustertwin::real::igsp
