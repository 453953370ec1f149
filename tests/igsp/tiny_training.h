#pragma once

// A tiny corpus on disk and training options for a one-block model on it,
// shared by the IGSP tests that train (train, evaluate, the CLI).

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/torch/byte_lm.h"
#include "real/igsp/train.h"

namespace clustertwin::real::igsp::testing {

/// TempDir()/name with `readmes` README files (doc/p10/README, doc/p11/README,
/// ...) and one header (include/x.h); replaced if it exists. Each test uses
/// its own name: ctest runs tests in parallel.
inline std::string tiny_corpus_root(const std::string& name, int readmes = 1) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  for (int i = 0; i < readmes; ++i) {
    const std::filesystem::path pkg = dir / "doc" / ("p" + std::to_string(10 + i));
    std::filesystem::create_directories(pkg);
    std::ofstream(pkg / "README") << "Package " << i
                                  << " provides a small library for reading and writing configuration files.\n";
  }
  std::filesystem::create_directories(dir / "include");
  std::ofstream(dir / "include" / "x.h") << "#pragma once\nint add(int a, int b);\nstruct point { int x, y; };\n";
  return dir.string();
}

/// An untrained 1-block, 32-wide model (context 24, 2 heads) initialised from `seed`.
inline models::nets::ByteLm tiny_byte_lm(uint64_t seed) {
  models::nets::ByteLmOptions o;
  o.context = 24;
  o.d_model = 32;
  o.layers = 1;
  o.heads = 2;
  o.d_ff = 64;
  auto m = models::nets::make_byte_lm(o, seed);
  EXPECT_TRUE(m.is_ok());
  return *m;
}

/// A 1-block, 32-wide model (context 16) trained 20 steps on `root`, written to `out`.
inline TrainOptions tiny_train_options(const std::string& root, const std::string& out) {
  TrainOptions o;
  o.model.context = 16;
  o.model.d_model = 32;
  o.model.layers = 1;
  o.model.heads = 2;
  o.model.d_ff = 64;
  o.seed = 4;
  o.batch = 8;
  o.lr = 3e-3;
  o.warmup_steps = 5;
  o.max_steps = 20;
  o.domain_bytes = 4096;
  o.general_roots = {root + "/doc"};
  o.code_roots = {root + "/include"};
  o.out = out;
  return o;
}

}  // namespace clustertwin::real::igsp::testing
