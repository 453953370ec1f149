#include "real/igsp/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/file_io.h"
#include "common/hash.h"
#include "real/igsp/evaluate.h"

namespace clustertwin::real::igsp {
namespace {

using clustertwin::models::igsp::Domain;
using clustertwin::models::igsp::DomainText;

// The windows of step `step`: [batch, context + 1] bytes, each from a domain drawn uniformly.
at::Tensor batch_of(const std::vector<DomainText>& corpus, uint64_t seed, int64_t step, int64_t batch, int64_t length) {
  std::mt19937_64 engine(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(step) + 1)));
  at::Tensor out = at::empty({batch, length}, at::TensorOptions().dtype(at::kLong));
  int64_t* data = out.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const std::string& text = corpus[engine() % corpus.size()].train;
    const uint64_t start = engine() % (text.size() - static_cast<uint64_t>(length) + 1);
    for (int64_t t = 0; t < length; ++t)
      data[b * length + t] = static_cast<unsigned char>(text[start + static_cast<uint64_t>(t)]);
  }
  return out;
}

double learning_rate(const TrainOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  if (o.max_steps <= 0) return o.lr;
  const double progress = static_cast<double>(step - o.warmup_steps) /
                          static_cast<double>(std::max<int64_t>(1, o.max_steps - o.warmup_steps));
  return o.lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * std::min(1.0, progress))));  // cosine to 10%
}

nlohmann::ordered_json options_json(const models::nets::ByteLmOptions& m) {
  return {{"vocab", m.vocab},   {"context", m.context}, {"d_model", m.d_model},
          {"layers", m.layers}, {"heads", m.heads},     {"d_ff", m.d_ff}};
}

// A pack's path as a manifest keeps it: relative to the checkpoint's folder, so that the two move together.
std::string pack_from_checkpoint(const std::string& pack, const std::string& checkpoint) {
  const std::filesystem::path folder =
      std::filesystem::weakly_canonical(std::filesystem::absolute(checkpoint)).parent_path();
  return std::filesystem::weakly_canonical(std::filesystem::absolute(pack)).lexically_relative(folder).string();
}

// One domain's entry of the manifest: generated from the seed, or the files it was read from (a domain read
// from one pack names it once).
nlohmann::ordered_json domain_json(const DomainText& d, uint64_t seed, const std::string& checkpoint) {
  nlohmann::ordered_json dj;
  dj["domain"] = clustertwin::models::igsp::domain_name(d.domain);
  dj["train_bytes"] = d.train.size();
  dj["heldout_bytes"] = d.heldout.size();
  if (d.files.empty()) {
    dj["generated_from_seed"] = seed;
    return dj;
  }
  const bool one_pack =
      !d.files.front().pack.empty() &&
      std::all_of(d.files.begin(), d.files.end(), [&](const auto& f) { return f.pack == d.files.front().pack; });
  if (one_pack) dj["pack"] = pack_from_checkpoint(d.files.front().pack, checkpoint);
  dj["files"] = nlohmann::ordered_json::array();
  for (const auto& f : d.files) {
    nlohmann::ordered_json fj;
    if (!one_pack && !f.pack.empty()) fj["pack"] = pack_from_checkpoint(f.pack, checkpoint);
    fj["path"] = f.path;
    fj["bytes"] = f.bytes;
    fj["crc32"] = f.crc32;
    dj["files"].push_back(fj);
  }
  return dj;
}

std::string manifest(const TrainOptions& o, const std::vector<DomainText>& corpus, int64_t step, double loss) {
  nlohmann::ordered_json j;
  j["model"] = options_json(o.model);
  j["seed"] = o.seed;
  j["batch"] = o.batch;
  j["lr"] = o.lr;
  j["weight_decay"] = o.weight_decay;
  j["warmup_steps"] = o.warmup_steps;
  j["max_steps"] = o.max_steps;
  j["domain_bytes"] = o.domain_bytes;
  j["step"] = step;
  j["loss"] = loss;
  j["corpus"] = nlohmann::ordered_json::array();
  for (const DomainText& d : corpus)
    j["corpus"].push_back(domain_json(d, o.seed, o.out));
  return j.dump(2);
}

Status save_state(torch::optim::AdamW& optimizer, int64_t step, const std::string& path) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write("clustertwin_train_step", torch::tensor(step, torch::TensorOptions().dtype(torch::kLong)));
  std::ostringstream bytes;
  archive.save_to(bytes);
  return write_file_atomically(path, bytes.str());
}

StatusOr<int64_t> load_state(torch::optim::AdamW& optimizer, const std::string& path) {
  StatusOr<std::string> bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(*bytes);
    archive.load_from(in);
    optimizer.load(archive);
    torch::Tensor step;
    archive.read("clustertwin_train_step", step);
    return step.item<int64_t>();
  } catch (const c10::Error& e) {
    return Status::invalid_argument(
        path + ": not the training state of a clustertwin checkpoint: " + e.what_without_backtrace());
  }
}

}  // namespace

StatusOr<std::vector<DomainText>> training_corpus(const TrainOptions& o) {
  std::vector<DomainText> corpus;
  for (Domain d : clustertwin::models::igsp::kDomains) {
    switch (d) {
      case Domain::kGeneral:
      case Domain::kCode: {
        const std::vector<std::string>& roots = d == Domain::kGeneral ? o.general_roots : o.code_roots;
        auto text = clustertwin::models::igsp::system_text(
            d, roots.empty() ? clustertwin::models::igsp::default_roots(d) : roots, o.domain_bytes);
        if (!text.is_ok()) return text.status();
        corpus.push_back(std::move(*text));
        break;
      }
      case Domain::kMath:
        corpus.push_back(clustertwin::models::igsp::math_text(o.seed, o.domain_bytes));
        break;
      case Domain::kCommonsense:
        corpus.push_back(clustertwin::models::igsp::commonsense_text(o.seed, o.domain_bytes));
        break;
    }
    if (corpus.back().train.size() < static_cast<size_t>(o.model.context + 1)) {
      return Status::invalid_argument(std::string(clustertwin::models::igsp::domain_name(d)) +
                                      " corpus: " + std::to_string(corpus.back().train.size()) +
                                      " training bytes, fewer than one window of " +
                                      std::to_string(o.model.context + 1));
    }
  }
  return corpus;
}

Status relocate_corpus(const std::string& checkpoint, const std::vector<std::string>& general_roots,
                       const std::vector<std::string>& code_roots) {
  auto c = models::nets::load_byte_lm(checkpoint);
  if (!c.is_ok()) return c.status();
  auto old = corpus_for(c->meta_json, checkpoint);  // the text as the manifest names it, checked
  if (!old.is_ok()) return old.status();
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(c->meta_json);
  const uint64_t seed = m.at("seed").get<uint64_t>(), domain_bytes = m.at("domain_bytes").get<uint64_t>();
  for (auto& dj : m.at("corpus")) {
    const DomainText* was = nullptr;
    for (const DomainText& d : *old) {
      if (clustertwin::models::igsp::domain_name(d.domain) == dj.at("domain").get<std::string>()) was = &d;
    }
    if (was == nullptr || (was->domain != Domain::kGeneral && was->domain != Domain::kCode)) continue;
    const std::vector<std::string>& roots = was->domain == Domain::kGeneral ? general_roots : code_roots;
    if (roots.empty()) continue;
    auto now = clustertwin::models::igsp::system_text(was->domain, roots, domain_bytes);
    if (!now.is_ok()) return now.status().with_context(checkpoint);
    if (now->train != was->train || now->heldout != was->heldout) {
      std::string list;
      for (const std::string& r : roots)
        list += (list.empty() ? "" : ", ") + r;
      return Status::invalid_argument(
          checkpoint + ": the " + clustertwin::models::igsp::domain_name(was->domain) + " text of " + list + " (" +
          std::to_string(now->train.size()) + " + " + std::to_string(now->heldout.size()) + " bytes, " +
          std::to_string(now->files.size()) + " files) is not the text its manifest names (" +
          std::to_string(was->train.size()) + " + " + std::to_string(was->heldout.size()) + " bytes, " +
          std::to_string(was->files.size()) + " files)");
    }
    dj = domain_json(*now, seed, checkpoint);
  }
  CT_RETURN_IF_ERROR(models::nets::save_byte_lm(c->model, m.dump(2), checkpoint));
  auto written = models::nets::load_byte_lm(checkpoint);
  if (!written.is_ok()) return written.status();
  auto same_bits = [](const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor x = a.contiguous(), y = b.contiguous();
    return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() &&
           std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
  };
  const auto before = c->model->named_parameters(), after = written->model->named_parameters();
  if (before.size() != after.size()) return Status::internal(checkpoint + ": parameters lost when rewritten");
  for (const auto& p : before) {
    const at::Tensor* q = after.find(p.key());
    if (q == nullptr || !same_bits(p.value(), *q)) {
      return Status::internal(checkpoint + ": parameter " + p.key() + " changed when the checkpoint was rewritten");
    }
  }
  return Status::ok();
}

namespace {

// The options train_byte_lm checks before reading the corpus.
Status check_train_options(const TrainOptions& o) {
  CT_RETURN_IF_ERROR(models::nets::check_byte_lm_options(o.model));
  if (o.out.empty()) return Status::invalid_argument("--out: give the checkpoint to write");
  if (o.batch < 1) return Status::invalid_argument("--batch " + std::to_string(o.batch) + ": must be >= 1");
  if (!(o.lr > 0)) return Status::invalid_argument("--lr " + std::to_string(o.lr) + ": must be > 0");
  if (o.max_steps < 0 || o.max_minutes < 0 || (o.max_steps == 0 && o.max_minutes == 0)) {
    return Status::invalid_argument("--steps " + std::to_string(o.max_steps) + " --minutes " +
                                    std::to_string(o.max_minutes) + ": give a positive step count or time limit");
  }
  if (!(o.checkpoint_minutes > 0))
    return Status::invalid_argument("--checkpoint-minutes " + std::to_string(o.checkpoint_minutes) + ": must be > 0");
  return Status::ok();
}

// The model to train: the checkpoint at --out when resuming (the model asked for), else a fresh one.
StatusOr<models::nets::ByteLm> starting_model(const TrainOptions& o) {
  if (o.resume) {
    auto checkpoint = models::nets::load_byte_lm(o.out);
    if (!checkpoint.is_ok()) return checkpoint.status().with_context("--resume");
    if (options_json(checkpoint->model->options()) != options_json(o.model)) {
      return Status::invalid_argument(o.out + ": its model " + options_json(checkpoint->model->options()).dump() +
                                      " is not the one asked for " + options_json(o.model).dump());
    }
    return checkpoint->model;
  }
  return models::nets::make_byte_lm(o.model, o.seed);
}

// One optimiser step on the batch of `step`; its loss before the update.
double train_step(models::nets::ByteLm& model, torch::optim::AdamW& optimizer,
                  const std::vector<clustertwin::models::igsp::DomainText>& corpus, const TrainOptions& o,
                  int64_t step) {
  const at::Tensor windows = batch_of(corpus, o.seed, step, o.batch, o.model.context + 1);
  const at::Tensor inputs = windows.slice(1, 0, o.model.context), targets = windows.slice(1, 1);
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(learning_rate(o, step));
  optimizer.zero_grad();
  const at::Tensor logits = model->forward(inputs);
  const at::Tensor loss =
      torch::nn::functional::cross_entropy(logits.reshape({-1, o.model.vocab}), targets.reshape({-1}));
  loss.backward();
  optimizer.step();
  return loss.item<double>();
}

// The progress since the last report: its steps' mean loss and tokens per second.
TrainProgress progress_since(const TrainOptions& o, int64_t step, double loss_sum, int64_t loss_count,
                             std::chrono::steady_clock::time_point last_report,
                             std::chrono::steady_clock::time_point start, bool checkpointed) {
  using Clock = std::chrono::steady_clock;
  TrainProgress p;
  p.step = step;
  p.loss = loss_sum / static_cast<double>(loss_count);
  const double since = std::chrono::duration<double>(Clock::now() - last_report).count();
  p.tokens_per_s = since > 0 ? static_cast<double>(loss_count * o.batch * o.model.context) / since : 0;
  p.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  p.checkpointed = checkpointed;
  return p;
}

}  // namespace

StatusOr<TrainReport> train_byte_lm(const TrainOptions& o, const std::function<void(const TrainProgress&)>& progress,
                                    int report_every) {
  CT_RETURN_IF_ERROR(check_train_options(o));
  auto corpus = training_corpus(o);
  if (!corpus.is_ok()) return corpus.status();

  TrainReport report;
  auto model = starting_model(o);
  if (!model.is_ok()) return model.status();
  torch::optim::AdamW optimizer((*model)->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  if (o.resume) {
    auto step = load_state(optimizer, o.out + ".state");
    if (!step.is_ok()) return step.status();
    report.first_step = *step;
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_checkpoint = start;
  auto last_report = start;
  auto minutes_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count() / 60.0;
  };
  double loss_sum = 0;
  int64_t loss_count = 0;
  int64_t step = report.first_step;
  auto checkpoint = [&](double loss) -> Status {
    CT_RETURN_IF_ERROR(models::nets::save_byte_lm(*model, manifest(o, *corpus, step, loss), o.out));
    CT_RETURN_IF_ERROR(save_state(optimizer, step, o.out + ".state"));
    ++report.checkpoints;
    last_checkpoint = Clock::now();
    return Status::ok();
  };
  (*model)->train();
  while ((o.max_steps == 0 || step < o.max_steps) && (o.stop_at <= 0 || step < o.stop_at) &&
         (o.max_minutes == 0 || minutes_since(start) < o.max_minutes)) {
    report.last_loss = train_step(*model, optimizer, *corpus, o, step);
    ++step;
    loss_sum += report.last_loss;
    ++loss_count;
    const bool due = minutes_since(last_checkpoint) >= o.checkpoint_minutes;
    if (due) CT_RETURN_IF_ERROR(checkpoint(report.last_loss));
    if (progress && (step % report_every == 0 || due)) {
      progress(progress_since(o, step, loss_sum, loss_count, last_report, start, due));
      loss_sum = 0;
      loss_count = 0;
      last_report = Clock::now();
    }
  }
  CT_RETURN_IF_ERROR(checkpoint(report.last_loss));
  report.steps = step;
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace clustertwin::real::igsp
