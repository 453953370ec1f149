#include "real/igsp/evaluate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "real/igsp/corpus_manifest.h"
#include "real/igsp/model_pruner.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::models::igsp::Domain;

at::Tensor windows_of(const std::string& text, int64_t length, int max_windows) {
  const int64_t n = std::min<int64_t>(max_windows, static_cast<int64_t>(text.size()) / length);
  at::Tensor out = at::empty({std::max<int64_t>(n, 0), length}, at::TensorOptions().dtype(at::kLong));
  for (int64_t w = 0; w < n; ++w) {
    for (int64_t t = 0; t < length; ++t)
      out[w][t] = static_cast<unsigned char>(text[static_cast<size_t>(w * length + t)]);
  }
  return out;
}

// The last `context` bytes of `text` (all of it when shorter).
std::string window_of(const std::string& text, int64_t context) {
  return text.size() > static_cast<size_t>(context) ? text.substr(text.size() - static_cast<size_t>(context)) : text;
}

// Runs `texts` through the model in batches of texts of one length, so no row
// is padded and each row's logits are those of its own forward, bit for bit
// (the Linears' GEMMs and the per-row norms and softmaxes do not mix rows).
// `use(i, logits)` gets text i's logits [length, vocab], in no fixed order.
template <typename Use>
void forward_by_length(models::nets::ByteLm& model, const std::vector<std::string>& texts, const Use& use) {
  constexpr size_t kBatch = 64;  // rows per forward: enough to amortise the per-op overhead
  std::map<size_t, std::vector<size_t>> by_length;
  for (size_t i = 0; i < texts.size(); ++i)
    by_length[texts[i].size()].push_back(i);
  for (const auto& [length, members] : by_length) {
    for (size_t first = 0; first < members.size(); first += kBatch) {
      const size_t rows = std::min(kBatch, members.size() - first);
      at::Tensor bytes = at::empty({static_cast<int64_t>(rows), static_cast<int64_t>(length)}, at::kLong);
      int64_t* data = bytes.data_ptr<int64_t>();
      for (size_t r = 0; r < rows; ++r) {
        for (size_t t = 0; t < length; ++t)
          data[r * length + t] = static_cast<unsigned char>(texts[members[first + r]][t]);
      }
      const at::Tensor logits = model->forward(bytes);
      for (size_t r = 0; r < rows; ++r)
        use(members[first + r], logits[static_cast<int64_t>(r)]);
    }
  }
}

// The distinct texts of `texts` in order of first appearance; `distinct_of[i]` is text i's index among them.
std::vector<std::string> distinct_texts(const std::vector<std::string>& texts, std::vector<size_t>& distinct_of) {
  std::vector<std::string> distinct;
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(texts.size());
  distinct_of.resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto [it, added] = index.try_emplace(texts[i], distinct.size());
    if (added) distinct.push_back(texts[i]);
    distinct_of[i] = it->second;
  }
  return distinct;
}

}  // namespace

std::vector<std::string> greedy_continuations(models::nets::ByteLm& model, const std::vector<std::string>& prompts,
                                              int max_bytes) {
  at::NoGradGuard no_grad;
  const int64_t context = model->options().context;
  // Equal prompts have equal answers, so each distinct prompt is decoded once: the study's 600 held-out
  // arithmetic prompts hold 440 distinct ones. (Batches of fewer rows: an answer does not depend on its batch.)
  std::vector<size_t> distinct_of;
  const std::vector<std::string> distinct = distinct_texts(prompts, distinct_of);
  if (distinct.size() < prompts.size()) {
    const std::vector<std::string> answers = greedy_continuations(model, distinct, max_bytes);
    std::vector<std::string> out;
    out.reserve(prompts.size());
    for (size_t d : distinct_of)
      out.push_back(answers[d]);
    return out;
  }
  std::vector<std::string> texts = prompts, out(prompts.size());
  std::vector<size_t> active(prompts.size());
  for (size_t i = 0; i < active.size(); ++i)
    active[i] = i;
  for (int step = 0; step < max_bytes && !active.empty(); ++step) {
    std::vector<std::string> windows;
    for (size_t i : active)
      windows.push_back(window_of(texts[i], context));
    std::vector<int> next(active.size());
    forward_by_length(model, windows, [&](size_t a, const at::Tensor& logits) {
      next[a] = static_cast<int>(logits[logits.size(0) - 1].argmax().item<int64_t>());
    });
    std::vector<size_t> still;
    for (size_t a = 0; a < active.size(); ++a) {
      if (next[a] == '\n') continue;
      out[active[a]].push_back(static_cast<char>(next[a]));
      texts[active[a]].push_back(static_cast<char>(next[a]));
      still.push_back(active[a]);
    }
    active = std::move(still);
  }
  return out;
}

std::vector<std::vector<double>> option_scores(models::nets::ByteLm& model,
                                               const std::vector<clustertwin::models::igsp::ChoiceItem>& items) {
  at::NoGradGuard no_grad;
  const int64_t context = model->options().context;
  struct Option {
    size_t item, index;
    std::string text;  // question + option, its last `context` bytes
    int64_t option_start = 0;
  };
  std::vector<Option> options;
  std::vector<std::vector<double>> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    out[i].assign(items[i].options.size(), 0.0);
    for (size_t o = 0; o < items[i].options.size(); ++o) {
      Option option{i, o, window_of(items[i].question + items[i].options[o], context)};
      option.option_start = static_cast<int64_t>(option.text.size() - items[i].options[o].size());
      options.push_back(std::move(option));
    }
  }
  // The model reads every byte but the last, and predicts every byte but the first. Equal inputs have equal
  // logits, so each distinct input goes through the model once for every option that reads it: the study's
  // items ask about a small world: its 2,400 options hold 457 distinct texts.
  std::vector<std::string> inputs;
  for (const Option& option : options)
    inputs.push_back(option.text.substr(0, option.text.empty() ? 0 : option.text.size() - 1));
  std::vector<size_t> distinct_of;
  const std::vector<std::string> distinct = distinct_texts(inputs, distinct_of);
  std::vector<std::vector<size_t>> readers(distinct.size());
  for (size_t k = 0; k < options.size(); ++k)
    readers[distinct_of[k]].push_back(k);
  forward_by_length(model, distinct, [&](size_t d, const at::Tensor& logits) {
    const at::Tensor logp = at::log_softmax(logits, -1).contiguous();
    const auto p = logp.accessor<float, 2>();
    for (size_t k : readers[d]) {
      const Option& option = options[k];
      double sum = 0;
      for (int64_t t = std::max<int64_t>(option.option_start, 1); t < static_cast<int64_t>(option.text.size()); ++t)
        sum += static_cast<double>(p[t - 1][static_cast<unsigned char>(option.text[static_cast<size_t>(t)])]);
      out[option.item][option.index] = sum / static_cast<double>(items[option.item].options[option.index].size());
    }
  });
  return out;
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
  set.arithmetic = clustertwin::models::igsp::arithmetic_items(seed, items);
  set.facts = clustertwin::models::igsp::commonsense_items(seed, items);
  return set;
}

std::vector<DimensionScore> evaluate(models::nets::ByteLm& model, const EvalSet& set, int max_windows) {
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
  std::vector<std::string> prompts;
  for (const auto& item : set.arithmetic)
    prompts.push_back(item.prompt);
  const std::vector<std::string> answers = greedy_continuations(model, prompts, 6);
  int right = 0;
  for (size_t i = 0; i < set.arithmetic.size(); ++i) {
    std::string digits;
    for (char c : answers[i]) {
      if (std::isdigit(static_cast<unsigned char>(c)))
        digits.push_back(c);
      else if (!digits.empty())
        break;
    }
    right += digits == set.arithmetic[i].answer;
  }
  out.push_back({Domain::kMath, "accuracy",
                 set.arithmetic.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(set.arithmetic.size()),
                 static_cast<int64_t>(set.arithmetic.size())});
  right = 0;
  const std::vector<std::vector<double>> scores = option_scores(model, set.facts);
  for (size_t i = 0; i < set.facts.size(); ++i) {
    int best = 0;
    double best_score = -1e300;
    for (size_t o = 0; o < scores[i].size(); ++o) {
      if (scores[i][o] > best_score) {
        best_score = scores[i][o];
        best = static_cast<int>(o);
      }
    }
    right += best == set.facts[i].answer;
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
