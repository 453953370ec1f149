#include "common/file_io.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

namespace clustertwin {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ct_file_io_" + name;
}

TEST(AtomicOutputFileTest, NothingAppearsBeforeCommit) {
  const std::string path = temp_path("pending.txt");
  std::filesystem::remove(path);
  auto out = AtomicOutputFile::create(path);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  (*out)->write("hello");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists((*out)->temp_path()));
  ASSERT_TRUE((*out)->commit().is_ok());
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists((*out)->temp_path()));
  EXPECT_EQ(*read_file(path), "hello");
}

TEST(AtomicOutputFileTest, AbandonedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string path = temp_path("keep.txt");
  ASSERT_TRUE(write_file_atomically(path, "old").is_ok());
  std::string temp;
  {
    auto out = AtomicOutputFile::create(path);
    ASSERT_TRUE(out.is_ok());
    (*out)->write("new but never committed");
    temp = (*out)->temp_path();
  }
  EXPECT_EQ(*read_file(path), "old");
  EXPECT_FALSE(std::filesystem::exists(temp));
}

TEST(AtomicOutputFileTest, GzSuffixCompressesAndReadingDecompresses) {
  const std::string path = temp_path("data.txt.gz");
  std::string big(3 << 20, 'a');  // larger than the 1 MiB write buffer
  big[12345] = 'b';
  ASSERT_TRUE(write_file_atomically(path, big).is_ok());
  EXPECT_LT(std::filesystem::file_size(path), big.size() / 10);  // runs of 'a' compress well
  EXPECT_EQ(*read_file(path), big);
}

TEST(AtomicOutputFileTest, MissingDirectoryIsNamed) {
  auto out = AtomicOutputFile::create(temp_path("no_such_dir/x.json"));
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), Status::Code::kNotFound);
  EXPECT_NE(out.status().message().find("output directory"), std::string::npos) << out.status().message();
}

// The rename would replace whatever the target is: a directory or a device is refused before anything is
// written, and left as it was (as root, /dev/null would otherwise become a regular file).
TEST(AtomicOutputFileTest, ADirectoryOrADeviceIsNotAnOutput) {
  const std::string dir = temp_path("a_folder");
  std::filesystem::create_directories(dir);
  const Status to_dir = write_file_atomically(dir, "x");
  EXPECT_EQ(to_dir.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(to_dir.message(), dir + ": not a regular file (a directory); an output must be a file path");
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  const Status to_device = write_file_atomically("/dev/null", "x");
  EXPECT_EQ(to_device.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(to_device.message(),
            "/dev/null: not a regular file (a device or special file); an output must be a file path");
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  // A regular file is replaced, as before.
  const std::string file = temp_path("regular.txt");
  ASSERT_TRUE(write_file_atomically(file, "old").is_ok());
  ASSERT_TRUE(write_file_atomically(file, "new").is_ok());
  EXPECT_EQ(*read_file(file), "new");
}

TEST(MakeDirectoriesTest, CreatesParentsAcceptsAnExistingFolderAndNamesOneItCannotMake) {
  const std::string root = temp_path("dirs");
  std::filesystem::remove_all(root);
  ASSERT_TRUE(make_directories(root + "/a/b").is_ok());
  EXPECT_TRUE(std::filesystem::is_directory(root + "/a/b"));
  EXPECT_TRUE(make_directories(root + "/a/b").is_ok());
  ASSERT_TRUE(write_file_atomically(root + "/file", "x").is_ok());
  const Status under_a_file = make_directories(root + "/file/c");
  EXPECT_EQ(under_a_file.code(), Status::Code::kIoError);
  EXPECT_EQ(under_a_file.message().rfind(root + "/file/c: ", 0), 0u) << under_a_file.message();
}

TEST(InputFileTest, MissingFileIsNotFound) {
  auto in = InputFile::open(temp_path("does_not_exist.json"));
  ASSERT_FALSE(in.is_ok());
  EXPECT_EQ(in.status().code(), Status::Code::kNotFound);
  EXPECT_NE(in.status().message().find("does_not_exist.json: no such file"), std::string::npos);
}

TEST(InputFileTest, TruncatedGzipIsReported) {
  const std::string whole = temp_path("whole.gz");
  std::string text;
  for (int i = 0; i < 100000; ++i)
    text += std::to_string(i * 7919 % 10007) + ",";
  ASSERT_TRUE(write_file_atomically(whole, text).is_ok());
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = temp_path("cut.gz");
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  auto contents = read_file(cut);
  ASSERT_FALSE(contents.is_ok());
  EXPECT_EQ(contents.status().exit_code(), 2);
  EXPECT_NE(contents.status().message().find("cut.gz: "), std::string::npos) << contents.status().message();
}

}  // namespace
}  // namespace clustertwin
