// The gnuplot helpers: a PNG appears whole or not at all.

#include "common/gnuplot.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/file_io.h"

namespace clustertwin {
namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

size_t entries(const std::string& dir) {
  return static_cast<size_t>(
      std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

TEST(GnuplotTest, DrawsAPngThroughATemporaryFile) {
  ASSERT_TRUE(gnuplot_installed()) << "gnuplot is a dependency (scripts/install-deps.sh)";
  const std::string dir = fresh_dir("ct_gnuplot_draw");
  const std::string png = dir + "/line.png";
  std::string output_seen;
  const Status s = draw_png_with_gnuplot(png, [&](const std::string& output) {
    output_seen = output;
    return "set terminal pngcairo size 200,100\nset output '" + output + "'\nplot x\n";
  });
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_NE(output_seen, png);  // drawn elsewhere, then renamed
  std::ifstream in(png, std::ios::binary);
  std::string head(4, '\0');
  in.read(head.data(), 4);
  EXPECT_EQ(head, "\x89PNG");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(GnuplotTest, AFailingScriptLeavesNothingAndNamesThePng) {
  const std::string dir = fresh_dir("ct_gnuplot_fail");
  const std::string png = dir + "/broken.png";
  const Status s = draw_png_with_gnuplot(png, [](const std::string& output) {
    return "set terminal pngcairo\nset output '" + output + "'\nplot no_such_function(x)\n";
  });
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(png + ": gnuplot failed"), std::string::npos) << s.message();
  EXPECT_EQ(entries(dir), 0u);

  // A script file: true when it draws, false when it fails.
  ASSERT_TRUE(write_file_atomically(dir + "/ok.gp", "set terminal pngcairo\nset output '" + dir + "/ok.png'\nplot x\n")
                  .is_ok());
  EXPECT_TRUE(run_gnuplot_file(dir + "/ok.gp"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ok.png"));
  ASSERT_TRUE(write_file_atomically(dir + "/bad.gp", "plot no_such_function(x)\n").is_ok());
  EXPECT_FALSE(run_gnuplot_file(dir + "/bad.gp"));
}

}  // namespace
}  // namespace clustertwin
