// The ustar reader: regular files come back in stored order with their
// prefix/name, directories are skipped, gzipped archives read the same, and
// each malformed archive is refused with a message naming the entry and the
// field.

#include "common/tar.h"

#include <gtest/gtest.h>

#include <string>

#include "common/file_io.h"
#include "tests/common/tar_writer.h"

namespace clustertwin {
namespace {

using testing::tar_end;
using testing::tar_file;
using testing::tar_header;
using testing::tar_header_sum;

const std::string kEnd = tar_end();

TEST(TarTest, RegularFilesInStoredOrderWithPrefixAndDirectoriesSkipped) {
  const std::string archive = tar_header("doc/", 0, '5') + tar_file("doc/b", "bee\n") +
                              tar_file("a", std::string(512, 'x'), "long/prefix") + tar_file("empty", "") +
                              tar_file("doc/c", std::string(513, 'y')) + kEnd;
  auto entries = parse_tar(archive, "t.tar");
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].name, "doc/b");
  EXPECT_EQ((*entries)[0].data, "bee\n");
  EXPECT_EQ((*entries)[1].name, "long/prefix/a");
  EXPECT_EQ((*entries)[1].data, std::string(512, 'x'));  // exactly one block: no padding
  EXPECT_EQ((*entries)[2].data, "");
  EXPECT_EQ((*entries)[3].data, std::string(513, 'y'));  // padded to two blocks
}

TEST(TarTest, GzippedArchiveReadsTheSame) {
  const std::string archive = tar_file("x/README", "text\n") + kEnd;
  const std::string path = ::testing::TempDir() + "ct_tar_test.tar.gz";
  ASSERT_TRUE(write_file_atomically(path, archive).is_ok());  // .gz: compressed
  auto entries = read_tar(path);
  ASSERT_TRUE(entries.is_ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].name, "x/README");
  EXPECT_EQ((*entries)[0].data, "text\n");
  EXPECT_EQ(read_tar(path + ".missing").status().message(), path + ".missing: no such file");
  EXPECT_TRUE(is_tar_name(path));
  EXPECT_TRUE(is_tar_name("a.tar"));
  EXPECT_FALSE(is_tar_name("a.tar.gz.txt"));
}

TEST(TarTest, MalformedArchivesNameTheEntryAndTheField) {
  const std::string good = tar_file("doc/a", "abc");
  std::string corrupt = good;
  corrupt[4] = 'c';  // the name's last byte 'a' -> 'c' after the checksum was written
  const unsigned sum = tar_header_sum(good);
  std::string not_ustar = good;
  not_ustar.replace(257, 5, "gnu\x01x");
  struct Case {
    std::string what, archive, message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "t.tar: empty (not even an end-of-archive block)"},
      {"no magic", not_ustar + kEnd,
       "t.tar: entry 1 (header at byte 0): magic 'gnu\\x01x' is not 'ustar' (not a ustar archive)"},
      {"checksum", good + corrupt + kEnd,
       // 'c' - 'a' = 2 more than the sum the header was written with
       "t.tar: entry 2 (doc/c): header checksum " + std::to_string(sum) + " stored, " + std::to_string(sum + 2) +
           " computed (a corrupt header)"},
      {"size not octal", tar_header("doc/a", 0, '0', "", std::string("0000000009\0", 12)) + kEnd,
       "t.tar: entry 1 (doc/a): size field '0000000009\\x00\\x00' is not octal"},
      {"base-256 size", tar_header("big", 0, '0', "", std::string("\x80\0\0\0\0\0\0\x02\0\0\0\0", 12)) + kEnd,
       "t.tar: entry 1 (big): size field in base-256 (a file of 8 GiB or more): not read here"},
      {"symlink", tar_header("doc/link", 0, '2') + kEnd,
       "t.tar: entry 1 (doc/link): type '2' is not a regular file or a directory (only those are read)"},
      {"GNU long name", tar_header("././@LongLink", 0, 'L') + kEnd,
       "t.tar: entry 1 (././@LongLink): type 'L' is not a regular file or a directory (only those are read)"},
      {"empty name", tar_header("", 0) + kEnd, "t.tar: entry 1: empty name"},
      {"twice", good + good + kEnd, "t.tar: entry 2 (doc/a): the name appears twice"},
      {"data cut", tar_header("doc/a", 100) + std::string(10, 'z'),
       "t.tar: entry 1 (doc/a): its 100 bytes of data run past the end (10 left): truncated"},
      {"header cut", good + std::string(300, '\0'),
       "t.tar: entry 2: the archive ends inside its header, at byte 1324: truncated"},  // entry 1: 2 blocks (1024
                                                                                        // bytes), then 300
      {"no end block", good, "t.tar: ends after entry 1 without the end-of-archive block: truncated"},
  };
  for (const Case& c : cases) {
    auto entries = parse_tar(c.archive, "t.tar");
    ASSERT_FALSE(entries.is_ok()) << c.what;
    EXPECT_EQ(entries.status().code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_EQ(entries.status().message(), c.message) << c.what;
  }
}

}  // namespace
}  // namespace clustertwin
