#include "real/igsp/evaluate.h"

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "real/igsp/model_pruner.h"
#include "real/igsp/train.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::igsp::Domain;

at::Tensor windows_of(const std::string& text, int64_t length, int max_windows) {
  const int64_t n = std::min<int64_t>(max_windows, static_cast<int64_t>(text.size()) / length);
  at::Tensor out = at::empty({std::max<int64_t>(n, 0), length}, at::TensorOptions().dtype(at::kLong));
  for (int64_t w = 0; w < n; ++w) {
    for (int64_t t = 0; t < length; ++t)
      out[w][t] = static_cast<unsigned char>(text[static_cast<size_t>(w * length + t)]);
  }
  return out;
}

at::Tensor bytes_of(const std::string& text) {
  at::Tensor out = at::empty({1, static_cast<int64_t>(text.size())}, at::TensorOptions().dtype(at::kLong));
  for (size_t i = 0; i < text.size(); ++i)
    out[0][static_cast<int64_t>(i)] = static_cast<unsigned char>(text[i]);
  return out;
}

// Greedy continuation of `prompt` up to `max_bytes` bytes or a newline.
std::string greedy(torch_models::ByteLm& model, std::string text, int max_bytes) {
  std::string out;
  const int64_t context = model->options().context;
  for (int i = 0; i < max_bytes; ++i) {
    const std::string window = text.size() > static_cast<size_t>(context) ? text.substr(text.size() - context) : text;
    const at::Tensor logits = model->forward(bytes_of(window));
    const int next = static_cast<int>(logits[0][logits.size(1) - 1].argmax().item<int64_t>());
    if (next == '\n') break;
    out.push_back(static_cast<char>(next));
    text.push_back(static_cast<char>(next));
  }
  return out;
}

// Mean log-probability per byte of `option` after `question`.
double option_score(torch_models::ByteLm& model, const std::string& question, const std::string& option) {
  std::string text = question + option;
  const int64_t context = model->options().context;
  size_t first = text.size() > static_cast<size_t>(context) ? text.size() - context : 0;
  text = text.substr(first);
  const int64_t option_start = static_cast<int64_t>(text.size() - option.size());
  const at::Tensor bytes = bytes_of(text);
  const at::Tensor logp = at::log_softmax(model->forward(bytes.slice(1, 0, bytes.size(1) - 1)), -1);
  double sum = 0;
  for (int64_t t = std::max<int64_t>(option_start, 1); t < bytes.size(1); ++t)
    sum += logp[0][t - 1][bytes[0][t].item<int64_t>()].item<double>();
  return sum / static_cast<double>(option.size());
}

}  // namespace

StatusOr<std::vector<clustertwin::igsp::DomainText>> corpus_for(const std::string& manifest_json,
                                                                const std::string& checkpoint) {
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(manifest_json);
  } catch (const nlohmann::json::exception&) {
    return Status::invalid_argument(checkpoint + ": its manifest is not JSON");
  }
  if (!m.contains("seed") || !m.contains("domain_bytes") || !m.contains("corpus") || !m["corpus"].is_array()) {
    return Status::invalid_argument(checkpoint +
                                    ": its manifest lacks seed, domain_bytes or corpus (not trained by "
                                    "clustertwin igsp train)");
  }
  TrainOptions o;
  o.seed = m["seed"].get<uint64_t>();
  o.domain_bytes = m["domain_bytes"].get<uint64_t>();
  if (m.contains("model") && m["model"].contains("context")) o.model.context = m["model"]["context"].get<int64_t>();
  // The files the manifest names, read again and checked.
  for (const auto& d : m["corpus"]) {
    if (!d.contains("files")) continue;
    std::vector<std::string>& roots = d["domain"] == "code" ? o.code_roots : o.general_roots;
    for (const auto& f : d["files"]) {
      const std::string path = f["path"].get<std::string>();
      roots.push_back(path);
    }
  }
  auto corpus = training_corpus(o);
  if (!corpus.is_ok()) return corpus.status().with_context(checkpoint);
  for (const auto& d : m["corpus"]) {
    if (!d.contains("files")) continue;
    for (const auto& have : *corpus) {
      if (clustertwin::igsp::domain_name(have.domain) != d["domain"].get<std::string>()) continue;
      size_t i = 0;
      for (const auto& f : d["files"]) {
        const std::string path = f["path"].get<std::string>();
        if (i >= have.files.size() || have.files[i].path != path || have.files[i].crc32 != f["crc32"].get<uint32_t>()) {
          return Status::invalid_argument(checkpoint + ": corpus file " + path +
                                          " is missing here or differs from the one trained on (size or CRC-32)");
        }
        ++i;
      }
    }
  }
  return corpus;
}

StatusOr<EvalSet> eval_set_for(const std::string& manifest_json, const std::string& checkpoint, int items) {
  auto corpus = corpus_for(manifest_json, checkpoint);
  if (!corpus.is_ok()) return corpus.status();
  const uint64_t seed = nlohmann::json::parse(manifest_json)["seed"].get<uint64_t>();
  EvalSet set;
  for (const auto& d : *corpus) {
    if (d.domain == Domain::kGeneral) set.general_heldout = d.heldout;
    if (d.domain == Domain::kCode) set.code_heldout = d.heldout;
  }
  set.arithmetic = clustertwin::igsp::arithmetic_items(seed, items);
  set.facts = clustertwin::igsp::commonsense_items(seed, items);
  return set;
}

std::vector<DimensionScore> evaluate(torch_models::ByteLm& model, const EvalSet& set, int max_windows) {
  at::NoGradGuard no_grad;
  model->eval();
  std::vector<DimensionScore> out;
  const int64_t context = model->options().context;
  for (Domain d : {Domain::kGeneral, Domain::kCode}) {
    const at::Tensor w =
        windows_of(d == Domain::kGeneral ? set.general_heldout : set.code_heldout, context, max_windows);
    DimensionScore s{d, "perplexity", w.size(0) > 0 ? byte_perplexity(model, w) : 0.0, w.numel()};
    out.push_back(s);
  }
  int right = 0;
  for (const auto& item : set.arithmetic) {
    std::string answer = greedy(model, item.prompt, 6);
    std::string digits;
    for (char c : answer) {
      if (std::isdigit(static_cast<unsigned char>(c)))
        digits.push_back(c);
      else if (!digits.empty())
        break;
    }
    right += digits == item.answer;
  }
  out.push_back({Domain::kMath, "accuracy",
                 set.arithmetic.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(set.arithmetic.size()),
                 static_cast<int64_t>(set.arithmetic.size())});
  right = 0;
  for (const auto& item : set.facts) {
    int best = 0;
    double best_score = -1e300;
    for (size_t i = 0; i < item.options.size(); ++i) {
      const double s = option_score(model, item.question, item.options[i]);
      if (s > best_score) {
        best_score = s;
        best = static_cast<int>(i);
      }
    }
    right += best == item.answer;
  }
  out.push_back({Domain::kCommonsense, "accuracy",
                 set.facts.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(set.facts.size()),
                 static_cast<int64_t>(set.facts.size())});
  return out;
}

std::vector<double> retention(const std::vector<DimensionScore>& pruned, const std::vector<DimensionScore>& dense) {
  std::vector<double> out;
  double sum = 0;
  for (size_t i = 0; i < pruned.size() && i < dense.size(); ++i) {
    double r = 0;
    if (pruned[i].metric == "perplexity") {
      r = pruned[i].value > 0 ? 100 * dense[i].value / pruned[i].value : 0;
    } else {
      r = dense[i].value > 0 ? 100 * pruned[i].value / dense[i].value : 0;
    }
    out.push_back(r);
    sum += r;
  }
  out.push_back(out.empty() ? 0 : sum / static_cast<double>(out.size()));
  return out;
}

}  // namespace clustertwin::real::igsp
