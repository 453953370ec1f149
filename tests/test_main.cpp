// The main of every test program. ctest runs each test of a program as its own
// process, two at a time, and many tests write files under
// ::testing::TempDir() with fixed names: two tests of one program sharing
// /tmp/ raced (one removed the corpus the other was building). Each process
// gets a directory of its own instead, made here and exported as TEST_TMPDIR,
// which TempDir() reads and the clustertwin processes a test starts inherit.
// It is removed when every test passed and kept, with its path printed, when
// one failed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  std::string dir = (std::filesystem::temp_directory_path() / "ct_test.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    std::perror(("test main: cannot make a temporary directory from " + dir).c_str());
    return 2;
  }
  ::setenv("TEST_TMPDIR", dir.c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  } else {
    std::fprintf(stderr, "test files kept in %s\n", dir.c_str());
  }
  return rc;
}
