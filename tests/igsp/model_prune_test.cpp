// Pruning a whole ByteLm layer by layer: every block Linear reaches the
// sparsity asked for, nothing else changes, SparseGPT keeps the model's
// output closer to the dense one than magnitude does, and bad calibration
// sets are one line.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "real/igsp/model_pruner.h"

namespace clustertwin::real::igsp {
namespace {

models::nets::ByteLmOptions tiny() {
  models::nets::ByteLmOptions o;
  o.context = 32;
  o.d_model = 64;
  o.layers = 2;
  o.heads = 4;
  o.d_ff = 128;
  return o;
}

models::nets::ByteLm model(uint64_t seed = 3) {
  auto m = models::nets::make_byte_lm(tiny(), seed);
  EXPECT_TRUE(m.is_ok());
  return *m;
}

// Text-like calibration bytes: a repeated phrase with a varying offset, so inputs are correlated.
at::Tensor calibration(int64_t sequences, int64_t length) {
  const std::string text = "the quick brown fox jumps over the lazy dog; 12 + 30 = 42. int main() { return 0; } ";
  at::Tensor out = at::empty({sequences, length}, at::TensorOptions().dtype(at::kLong));
  for (int64_t s = 0; s < sequences; ++s) {
    for (int64_t t = 0; t < length; ++t)
      out[s][t] = static_cast<unsigned char>(text[(s * 7 + t) % text.size()]);
  }
  return out;
}

std::vector<at::Tensor> untouched(models::nets::ByteLm& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m->named_parameters()) {
    const std::string& name = p.key();
    const bool block_linear_weight = name.rfind("block", 0) == 0 && name.find("ln") == std::string::npos &&
                                     name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (!block_linear_weight) out.push_back(p.value().clone());
  }
  return out;
}

TEST(ModelPruneTest, EveryBlockLinearReachesTheSparsityAndNothingElseChanges) {
  for (PruneMethod method : {PruneMethod::kSparseGpt, PruneMethod::kWanda, PruneMethod::kMagnitude}) {
    models::nets::ByteLm m = model();
    const std::vector<at::Tensor> before = untouched(m);
    ModelPruneOptions o;
    o.method = method;
    o.layer.sparsity = 0.5;
    o.batch_size = 5;
    auto reports = prune_byte_lm(m, calibration(12, 32), o);
    ASSERT_TRUE(reports.is_ok()) << reports.status().message();
    ASSERT_EQ(reports->size(), 12u) << prune_method_name(method);  // 2 blocks x 6 Linears
    EXPECT_EQ((*reports)[0].name, "block0.q");
    EXPECT_EQ((*reports)[11].name, "block1.fc2");
    for (const LinearReport& r : *reports)
      EXPECT_EQ(r.pruned * 2, r.rows * r.columns) << r.name;
    for (size_t b = 0; b < m->blocks().size(); ++b) {
      for (const auto& [name, linear] : m->blocks()[b]->linears())
        EXPECT_EQ((linear->weight == 0).sum().item<int64_t>() * 2, linear->weight.numel()) << b << name;
    }
    const std::vector<at::Tensor> after = untouched(m);
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i)
      EXPECT_TRUE(at::equal(before[i], after[i])) << prune_method_name(method) << " changed parameter " << i;
  }
}

// The pruner as the reference writes it, one accumulator per Linear fed every
// batch, the inputs re-run through every pruned block: prune_byte_lm gives the
// same bits, though q, k and v (which read one tensor) share one accumulation
// and the last block's outputs are never computed.
TEST(ModelPruneTest, SharedStatisticsGiveEachLinearItsOwnBits) {
  for (PruneMethod method : {PruneMethod::kSparseGpt, PruneMethod::kWanda}) {
    ModelPruneOptions o;
    o.method = method;
    o.layer.sparsity = 0.5;
    o.batch_size = 5;
    const at::Tensor bytes = calibration(12, 32);
    models::nets::ByteLm pruned = model(), reference = model();
    ASSERT_TRUE(prune_byte_lm(pruned, bytes, o).is_ok());
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> hidden;
    for (int64_t first = 0; first < 12; first += 5)
      hidden.push_back(reference->embed(bytes.slice(0, first, std::min<int64_t>(12, first + 5))));
    for (models::nets::ByteLmBlock& block : reference->blocks()) {
      std::map<std::string, HessianAccumulator> hessians;
      std::map<std::string, ColumnNormAccumulator> norms;
      for (const auto& [name, linear] : block->linears()) {
        hessians.emplace(name, HessianAccumulator(name, linear->weight.size(1)));
        norms.emplace(name, ColumnNormAccumulator(name, linear->weight.size(1)));
      }
      const models::nets::LinearTap tap = [&](const std::string& name, const torch::Tensor& input) {
        ASSERT_TRUE(hessians.at(name).add(input).is_ok());
        ASSERT_TRUE(norms.at(name).add(input).is_ok());
      };
      for (const at::Tensor& x : hidden)
        (void)block->forward(x, tap);
      for (const auto& [name, linear] : block->linears()) {
        auto r = method == PruneMethod::kSparseGpt
                     ? sparsegpt(linear->weight, hessians.at(name).hessian(), o.layer, name)
                     : wanda(linear->weight, norms.at(name).norms(), o.layer, name);
        ASSERT_TRUE(r.is_ok()) << r.status().message();
        linear->weight.copy_(r->weight);
      }
      for (at::Tensor& x : hidden)
        x = block->forward(x);
    }
    for (size_t b = 0; b < pruned->blocks().size(); ++b) {
      const auto mine = pruned->blocks()[b]->linears(), theirs = reference->blocks()[b]->linears();
      for (size_t l = 0; l < mine.size(); ++l)
        EXPECT_TRUE(at::equal(mine[l].second->weight, theirs[l].second->weight))
            << prune_method_name(method) << " block" << b << "." << mine[l].first;
    }
  }
}

// The model's logits on the calibration data stay closer to the dense model's with SparseGPT than with
// magnitude, at 50% and 2:4.
TEST(ModelPruneTest, SparseGptKeepsTheOutputCloserThanMagnitude) {
  const at::Tensor calib = calibration(16, 32);
  models::nets::ByteLm dense = model();
  at::NoGradGuard no_grad;
  const at::Tensor reference = dense->forward(calib);
  for (bool nm : {false, true}) {
    auto error = [&](PruneMethod method) {
      models::nets::ByteLm m = model();
      ModelPruneOptions o;
      o.method = method;
      o.layer.sparsity = 0.5;
      if (nm) {
        o.layer.n = 2;
        o.layer.m = 4;
      }
      auto r = prune_byte_lm(m, calib, o);
      EXPECT_TRUE(r.is_ok()) << r.status().message();
      return (m->forward(calib) - reference).norm().item<double>();
    };
    const double sparsegpt = error(PruneMethod::kSparseGpt), magnitude = error(PruneMethod::kMagnitude);
    EXPECT_LT(sparsegpt, magnitude) << (nm ? "2:4" : "50%");
  }
}

TEST(ModelPruneTest, PerplexityOfAnUntrainedModelIsNearTheVocabulary) {
  models::nets::ByteLm m = model();
  const double ppl = byte_perplexity(m, calibration(8, 32), 3);
  EXPECT_GT(ppl, 200);
  EXPECT_LT(ppl, 320);
}

TEST(ModelPruneTest, BadCalibrationSetsAreOneLine) {
  models::nets::ByteLm m = model();
  ModelPruneOptions o;
  auto message = [&](const at::Tensor& calib) {
    auto r = prune_byte_lm(m, calib, o);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(message(at::empty({0, 8}, at::TensorOptions().dtype(at::kLong))),
            "calibration set: empty, or not [sequences, length] (got 2 dimensions)");
  EXPECT_EQ(message(calibration(2, 33)),
            "calibration set: sequences of 33 bytes are longer than the model's context 32");
  EXPECT_EQ(message(calibration(2, 8).to(at::kFloat)), "calibration set: bytes must be int64");
  EXPECT_EQ(message(calibration(2, 8) + 300), "calibration set: values outside [0, 255]");
  o.layer.sparsity = 1.0;
  const std::string bad_sparsity = message(calibration(2, 8));
  EXPECT_NE(bad_sparsity.find("block0.q"), std::string::npos) << bad_sparsity;
  EXPECT_NE(bad_sparsity.find("sparsity"), std::string::npos) << bad_sparsity;
  EXPECT_EQ(prune_method_from_name("obs").status().message(),
            "method 'obs': unknown (allowed: sparsegpt, wanda, magnitude)");
}

}  // namespace
}  // namespace clustertwin::real::igsp
