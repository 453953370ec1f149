// common/version.h: the version written into every trace and result is the
// project's (CMakeLists.txt's project(... VERSION X.Y.Z)).

#include "common/version.h"

#include <gtest/gtest.h>

#include <regex>

#include "common/file_io.h"

namespace clustertwin {
namespace {

TEST(VersionTest, IsTheProjectsVersion) {
  auto cmake = read_file(std::string(CT_SOURCE_DIR) + "/CMakeLists.txt");
  ASSERT_TRUE(cmake.is_ok()) << cmake.status().message();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*cmake, m, std::regex(R"(project\(clustertwin VERSION ([0-9]+\.[0-9]+\.[0-9]+))")));
  EXPECT_EQ(version(), m[1].str());
}

}  // namespace
}  // namespace clustertwin
