#include "real/igsp/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "common/file_io.h"
#include "common/hash.h"
#include "models/torch/byte_lm.h"
#include "real/igsp/corpus_manifest.h"

namespace clustertwin::real::igsp {
namespace {

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

// The options train_byte_lm checks before reading the corpus.
Status check_train_options(const TrainOptions& o) {
  CT_RETURN_IF_ERROR(models::nets::check_byte_lm_options(o.model));
  if (o.out.empty()) return Status::invalid_argument("out: give the checkpoint to write");
  if (o.batch < 1) return Status::invalid_argument("batch " + std::to_string(o.batch) + ": must be >= 1");
  if (!(o.lr > 0)) return Status::invalid_argument("lr " + std::to_string(o.lr) + ": must be > 0");
  if (o.max_steps < 0 || o.max_minutes < 0 || (o.max_steps == 0 && o.max_minutes == 0)) {
    return Status::invalid_argument("max_steps " + std::to_string(o.max_steps) + " max_minutes " +
                                    std::to_string(o.max_minutes) + ": give a positive step count or time limit");
  }
  if (!(o.checkpoint_minutes > 0))
    return Status::invalid_argument("checkpoint_minutes " + std::to_string(o.checkpoint_minutes) + ": must be > 0");
  return Status::ok();
}

// The model to train: the checkpoint at `out` when resuming (the model asked for), else a fresh one.
StatusOr<models::nets::ByteLm> starting_model(const TrainOptions& o) {
  if (o.resume) {
    auto checkpoint = models::nets::load_byte_lm(o.out);
    if (!checkpoint.is_ok()) return checkpoint.status().with_context("resume");
    const std::string found = byte_lm_options_json(checkpoint->model->options()), asked = byte_lm_options_json(o.model);
    if (found != asked) {
      return Status::invalid_argument(o.out + ": its model " + found + " is not the one asked for " + asked);
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
    CT_RETURN_IF_ERROR(models::nets::save_byte_lm(*model, checkpoint_manifest(o, *corpus, step, loss), o.out));
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
