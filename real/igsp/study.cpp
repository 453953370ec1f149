#include "real/igsp/study.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "models/torch/byte_lm.h"

namespace clustertwin::real::igsp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status check(const StudyOptions& o) {
  if (o.seeds < 1) return Status::invalid_argument("--seeds " + std::to_string(o.seeds) + ": must be >= 1");
  if (o.jobs < 1) return Status::invalid_argument("--jobs " + std::to_string(o.jobs) + ": must be >= 1");
  if (o.eval_items < 1) return Status::invalid_argument("--items " + std::to_string(o.eval_items) + ": must be >= 1");
  if (o.eval_windows < 1)
    return Status::invalid_argument("--windows " + std::to_string(o.eval_windows) + ": must be >= 1");
  if (!(o.prune.layer.sparsity >= 0 && o.prune.layer.sparsity < 1))
    return Status::invalid_argument("--sparsity " + std::to_string(o.prune.layer.sparsity) + ": must be in [0, 1)");
  if (o.calibration.samples < 1)
    return Status::invalid_argument("--samples " + std::to_string(o.calibration.samples) + ": must be >= 1");
  return Status::ok();
}

}  // namespace

std::vector<std::string> default_study_sets() {
  std::vector<std::string> sets = study_source_names();
  for (const char* s : {"random", "selfcal", "sgs", "igsp", "igsp-unique"})
    sets.emplace_back(s);
  return sets;
}

StatusOr<StudyResult> run_study(const StudyOptions& options,
                                const std::function<void(const StudyRun& run, int done, int total)>& progress) {
  CT_RETURN_IF_ERROR(check(options));
  const auto start = Clock::now();
  const std::vector<std::string> sets = options.sets.empty() ? default_study_sets() : options.sets;

  // What every run shares, read once: the corpus, the evaluation set and the dense scores.
  auto dense = torch_models::load_byte_lm(options.checkpoint);
  if (!dense.is_ok()) return dense.status();
  auto corpus = corpus_for(dense->meta_json, options.checkpoint);
  if (!corpus.is_ok()) return corpus.status();
  auto eval_set = eval_set_for(dense->meta_json, options.checkpoint, options.eval_items);
  if (!eval_set.is_ok()) return eval_set.status();
  CalibrationSetOptions calibration = options.calibration;
  if (calibration.length == 0) calibration.length = dense->model->options().context;
  // Bad set names fail here, before any run: build each once, cheaply, with one sample.
  for (const std::string& name : sets) {
    if (name == "selfcal" || name == "sgs" || name == "igsp" || name == "igsp-repeated" || name == "igsp-unique")
      continue;  // generated: their only input is the model
    CalibrationSetOptions probe = calibration;
    probe.samples = 1;
    auto set = make_calibration_set(name, dense->model, *corpus, probe);
    if (!set.is_ok()) return set.status();
  }

  StudyResult result;
  const int threads_before = at::get_num_threads();
  at::set_num_threads(1);
  result.dense = evaluate(dense->model, *eval_set, options.eval_windows);
  for (const DimensionScore& s : result.dense) {
    if (options.require_dense_scores && (s.items == 0 || s.value <= 0)) {
      at::set_num_threads(threads_before);
      const std::string dimension = clustertwin::igsp::domain_name(s.domain);
      return Status::invalid_argument(
          options.checkpoint + ": " +
          (s.items == 0 ? "nothing held out to score " + dimension + " on"
                        : "the dense model scores 0 on " + dimension + " (" + std::to_string(s.items) + " items)") +
          ": retention is undefined; train it further or raise --items");
    }
  }

  struct Job {
    std::string set;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  IgspPoolCache igsp_pools;  // "igsp" and "igsp-unique" with one seed share their candidates
  for (const std::string& name : sets) {
    for (int s = 0; s < options.seeds; ++s)
      jobs.push_back({name, options.first_seed + static_cast<uint64_t>(s)});
  }
  result.runs.resize(jobs.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards first_error, done and progress
  Status first_error = Status::ok();
  int done = 0;

  auto work = [&] {
    at::set_num_threads(1);  // this thread's OpenMP (and so OpenBLAS) width as well as the process's
    for (size_t i = next++; i < jobs.size() && !failed; i = next++) {
      const auto run_start = Clock::now();
      StudyRun run;
      run.set = jobs[i].set;
      run.seed = jobs[i].seed;
      Status status = [&]() -> Status {
        auto copy = torch_models::load_byte_lm(options.checkpoint);
        if (!copy.is_ok()) return copy.status();
        CalibrationSetOptions c = calibration;
        c.seed = run.seed;
        auto set = make_calibration_set(run.set, copy->model, *corpus, c, &igsp_pools);
        if (!set.is_ok()) return set.status();
        run.kind = set->kind;
        auto info = clustertwin::igsp::information_metrics(sample_texts(set->bytes));
        if (!info.is_ok())
          return Status::invalid_argument("calibration set " + run.set + ": " + info.status().message());
        run.information = *info;
        run.dense_perplexity = byte_perplexity(copy->model, set->bytes);
        auto pruned = prune_byte_lm(copy->model, set->bytes, options.prune);
        if (!pruned.is_ok()) return pruned.status();
        run.scores = evaluate(copy->model, *eval_set, options.eval_windows);
        run.retention = retention(run.scores, result.dense);
        return Status::ok();
      }();
      run.seconds = seconds_since(run_start);
      std::lock_guard<std::mutex> lock(mutex);
      if (!status.is_ok()) {
        if (!failed.exchange(true)) first_error = status;
        return;
      }
      result.runs[i] = run;
      ++done;
      if (progress) progress(result.runs[i], done, static_cast<int>(jobs.size()));
    }
  };
  std::vector<std::thread> workers;
  const int n = std::min<int>(options.jobs, static_cast<int>(jobs.size()));
  for (int w = 0; w < n; ++w)
    workers.emplace_back(work);
  for (std::thread& t : workers)
    t.join();
  at::set_num_threads(threads_before);
  if (failed) return first_error;
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace clustertwin::real::igsp
