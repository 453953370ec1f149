#include "real/igsp/study.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "models/torch/byte_lm.h"
#include "real/igsp/corpus_manifest.h"

namespace clustertwin::real::igsp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status check(const StudyOptions& o) {
  if (o.seeds < 1) return Status::invalid_argument("seeds " + std::to_string(o.seeds) + ": must be >= 1");
  if (o.jobs < 1) return Status::invalid_argument("jobs " + std::to_string(o.jobs) + ": must be >= 1");
  if (o.eval_items < 1)
    return Status::invalid_argument("eval_items " + std::to_string(o.eval_items) + ": must be >= 1");
  if (o.eval_windows < 1)
    return Status::invalid_argument("eval_windows " + std::to_string(o.eval_windows) + ": must be >= 1");
  if (!(o.prune.layer.sparsity >= 0 && o.prune.layer.sparsity < 1))
    return Status::invalid_argument("sparsity " + std::to_string(o.prune.layer.sparsity) + ": must be in [0, 1)");
  if (o.calibration.samples < 1)
    return Status::invalid_argument("samples " + std::to_string(o.calibration.samples) + ": must be >= 1");
  return Status::ok();
}

// Bad set names fail here, before any run: build each once, cheaply, with one sample.
Status check_set_names(const std::vector<std::string>& sets, models::nets::ByteLm& model,
                       const std::vector<clustertwin::models::igsp::DomainText>& corpus,
                       const CalibrationSetOptions& calibration) {
  for (const std::string& name : sets) {
    if (name == "selfcal" || name == "sgs" || name == "igsp" || name == "igsp-repeated" || name == "igsp-unique")
      continue;  // generated: their only input is the model
    CalibrationSetOptions probe = calibration;
    probe.samples = 1;
    auto set = make_calibration_set(name, model, corpus, probe);
    if (!set.is_ok()) return set.status();
  }
  return Status::ok();
}

// Retention divides by the dense scores: each must be measured and above 0.
Status check_dense_scores(const StudyOptions& options, const std::vector<DimensionScore>& dense) {
  for (const DimensionScore& s : dense) {
    if (options.require_dense_scores && (s.items == 0 || s.value <= 0)) {
      const std::string dimension = clustertwin::models::igsp::domain_name(s.domain);
      return Status::invalid_argument(
          options.checkpoint + ": " +
          (s.items == 0 ? "nothing held out to score " + dimension + " on"
                        : "the dense model scores 0 on " + dimension + " (" + std::to_string(s.items) + " items)") +
          ": retention is undefined; train it further or raise eval_items");
    }
  }
  return Status::ok();
}

// What every run shares, read once.
struct StudyInputs {
  const StudyOptions& options;
  const std::vector<clustertwin::models::igsp::DomainText>& corpus;
  const EvalSet& eval_set;
  const CalibrationSetOptions& calibration;
  const std::vector<DimensionScore>& dense;
};

// One run: a fresh copy of the model, calibrated on run.set with run.seed,
// pruned and scored against the dense model.
Status calibrate_prune_score(const StudyInputs& in, IgspPoolCache& igsp_pools, StudyRun& run) {
  auto copy = models::nets::load_byte_lm(in.options.checkpoint);
  if (!copy.is_ok()) return copy.status();
  CalibrationSetOptions c = in.calibration;
  c.seed = run.seed;
  auto set = make_calibration_set(run.set, copy->model, in.corpus, c, &igsp_pools);
  if (!set.is_ok()) return set.status();
  run.kind = set->kind;
  auto info = clustertwin::models::igsp::information_metrics(sample_texts(set->bytes));
  if (!info.is_ok()) return Status::invalid_argument("calibration set " + run.set + ": " + info.status().message());
  run.information = *info;
  run.dense_perplexity = byte_perplexity(copy->model, set->bytes);
  auto pruned = prune_byte_lm(copy->model, set->bytes, in.options.prune);
  if (!pruned.is_ok()) return pruned.status();
  run.scores = evaluate(copy->model, in.eval_set, in.options.eval_windows);
  run.retention = retention(run.scores, in.dense);
  return Status::ok();
}

// Every set with every seed, on up to options.jobs threads; the first error
// stops the others and is returned.
Status run_all(const StudyInputs& in, const std::vector<std::string>& sets, std::vector<StudyRun>& runs,
               const std::function<void(const StudyRun& run, int done, int total)>& progress) {
  struct Job {
    std::string set;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  IgspPoolCache igsp_pools;  // "igsp" and "igsp-unique" with one seed share their candidates
  for (const std::string& name : sets) {
    for (int s = 0; s < in.options.seeds; ++s)
      jobs.push_back({name, in.options.first_seed + static_cast<uint64_t>(s)});
  }
  runs.resize(jobs.size());
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
      Status status = calibrate_prune_score(in, igsp_pools, run);
      run.seconds = seconds_since(run_start);
      std::lock_guard<std::mutex> lock(mutex);
      if (!status.is_ok()) {
        if (!failed.exchange(true)) first_error = status;
        return;
      }
      runs[i] = run;
      ++done;
      if (progress) progress(runs[i], done, static_cast<int>(jobs.size()));
    }
  };
  std::vector<std::thread> workers;
  const int n = std::min<int>(in.options.jobs, static_cast<int>(jobs.size()));
  for (int w = 0; w < n; ++w)
    workers.emplace_back(work);
  for (std::thread& t : workers)
    t.join();
  return failed ? first_error : Status::ok();
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
  auto dense = models::nets::load_byte_lm(options.checkpoint);
  if (!dense.is_ok()) return dense.status();
  auto corpus = corpus_for(dense->meta_json, options.checkpoint);
  if (!corpus.is_ok()) return corpus.status();
  auto eval_set = eval_set_for(dense->meta_json, options.checkpoint, options.eval_items);
  if (!eval_set.is_ok()) return eval_set.status();
  CalibrationSetOptions calibration = options.calibration;
  if (calibration.length == 0) calibration.length = dense->model->options().context;
  CT_RETURN_IF_ERROR(check_set_names(sets, dense->model, *corpus, calibration));

  StudyResult result;
  const int threads_before = at::get_num_threads();
  at::set_num_threads(1);
  result.dense = evaluate(dense->model, *eval_set, options.eval_windows);
  Status status = check_dense_scores(options, result.dense);
  if (status.is_ok()) {
    status = run_all(StudyInputs{options, *corpus, *eval_set, calibration, result.dense}, sets, result.runs, progress);
  }
  at::set_num_threads(threads_before);
  if (!status.is_ok()) return status;
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace clustertwin::real::igsp
