// clustertwin sis: SIS's two studies (experiments/sis/README.md) from the
// command line. Tables go to stdout (or JSON with --json), progress to stderr,
// and CSV, JSON and PNG plots (with gnuplot) into --out, written atomically.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/torch_commands.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "common/text.h"
#include "experiments/sis/estimator_study.h"
#include "experiments/sis/stability_study.h"

namespace clustertwin::cli {
namespace {

namespace study = clustertwin::experiments::sis;

// A flag's comma-separated numbers; InvalidArgument naming the flag and the item.
template <typename T>
StatusOr<std::vector<T>> parse_list(const char* command, const char* flag, const std::string& text) {
  std::vector<T> out;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const T value = std::is_integral_v<T> ? static_cast<T>(std::strtoll(item.c_str(), &end, 10))
                                          : static_cast<T>(std::strtod(item.c_str(), &end));
    if (item.empty() || end == nullptr || *end != '\0') {
      return Status::invalid_argument(std::string(command) + ": " + flag + " " + quote_for_message(item) +
                                      (std::is_integral_v<T> ? " is not an integer" : " is not a number"));
    }
    out.push_back(value);
  }
  return out;
}

void progress(const char* what, int done, int total, std::chrono::steady_clock::time_point start) {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  show_progress(done == total, "  %s [%d/%d] %.0f s", what, done, total, s);
}

Status make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return ec ? Status::io_error(dir + ": " + ec.message()) : Status::ok();
}

// Writes `script` beside the CSVs and runs gnuplot on it when it is installed.
bool plot(const std::string& dir, const std::string& name, const std::string& script) {
  if (!write_output(dir + "/" + name, script).is_ok()) return false;
  return run_gnuplot_file(dir + "/" + name);
}

// A flag the user gave (an option left out keeps the study's default; a given one is validated, never replaced).
bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

struct StudyArgs {
  CLI::Option *lengths_flag = nullptr, *drifts_flag = nullptr, *replicates_flag = nullptr, *batch_flag = nullptr,
              *top_k_flag = nullptr;
  bool quick = false, json = false, no_baseline = false;
  std::string out = "out/sis";
  std::string lengths, drifts;
  int64_t replicates = 0, batch = 0, top_k = 0;
  uint64_t seed = 0;
};

Status run_study(const StudyArgs& a) {
  study::EstimatorStudyOptions o = a.quick ? study::quick_estimator_options() : study::EstimatorStudyOptions{};
  if (given(a.lengths_flag)) {
    auto v = parse_list<int64_t>("sis study", "--lengths", a.lengths);
    if (!v.is_ok()) return v.status();
    o.lengths = *v;
  }
  if (given(a.drifts_flag)) {
    auto v = parse_list<double>("sis study", "--drifts", a.drifts);
    if (!v.is_ok()) return v.status();
    o.drifts = *v;
  }
  if (given(a.replicates_flag)) o.replicates = a.replicates;
  if (given(a.batch_flag)) o.batch = a.batch;
  if (given(a.top_k_flag)) o.top_k = a.top_k;
  o.seed = a.seed;
  o.baseline = !a.no_baseline;
  CT_RETURN_IF_ERROR(study::validate(o));
  CT_RETURN_IF_ERROR(make_dir(a.out));
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "sis study -> %s: %zu lengths x %zu drifts, %lld replicates of %lld sequences\n", a.out.c_str(),
               o.lengths.size(), o.drifts.size(), static_cast<long long>(o.replicates),
               static_cast<long long>(o.batch));
  auto result = study::run_estimator_study(o, [&](int done, int total) { progress("cells", done, total, start); });
  if (!result.is_ok()) return result.status();
  const std::string csv = a.out + "/estimators.csv";
  const nlohmann::json json = study::estimator_json(*result);
  CT_RETURN_IF_ERROR(write_output(csv, study::estimator_csv(*result)));
  CT_RETURN_IF_ERROR(write_output(a.out + "/estimators.json", json.dump(2) + "\n"));
  const bool plotted = plot(a.out, "estimators.gp", study::estimator_gnuplot(*result, a.out));
  CT_RETURN_IF_ERROR(write_output("-", a.json ? json.dump(2) + "\n" : study::estimator_tables(*result)));
  std::fprintf(stderr, "sis study: %.0f s; wrote %s/estimators.{csv,json}%s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), a.out.c_str(),
               plotted ? ", estimators_mse.png, estimators_bias.png" : " (no gnuplot: no PNGs)");
  return Status::ok();
}

struct StabilityArgs {
  CLI::Option *lags_flag = nullptr, *conditions_flag = nullptr, *seeds_flag = nullptr, *steps_flag = nullptr,
              *engine_noise_flag = nullptr, *lr_flag = nullptr, *length_flag = nullptr, *vocab_flag = nullptr,
              *states_flag = nullptr;
  bool quick = false, json = false;
  std::string out = "out/sis";
  std::string lags, conditions;
  int64_t seeds = 0, steps = 0, length = 0, vocab = 0, states = 0;
  double engine_noise = 0, lr = 0;
  uint64_t seed = 0;
};

Status run_stability(const StabilityArgs& a) {
  study::StabilityOptions o = a.quick ? study::quick_stability_options() : study::StabilityOptions{};
  if (given(a.lags_flag)) {
    auto v = parse_list<int64_t>("sis stability", "--lags", a.lags);
    if (!v.is_ok()) return v.status();
    o.lags = *v;
  }
  if (given(a.conditions_flag)) o.conditions = split_commas(a.conditions);
  if (given(a.seeds_flag)) o.seeds = a.seeds;
  if (given(a.steps_flag)) o.steps = a.steps;
  if (given(a.engine_noise_flag)) o.engine_noise = a.engine_noise;
  if (given(a.lr_flag)) o.lr = a.lr;
  if (given(a.length_flag)) o.length = a.length;
  if (given(a.vocab_flag)) o.vocab = a.vocab;
  if (given(a.states_flag)) o.states = a.states;
  o.seed = a.seed;
  CT_RETURN_IF_ERROR(study::validate(o));
  CT_RETURN_IF_ERROR(make_dir(a.out));
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "sis stability -> %s: %zu lags x %zu conditions x %lld seeds, %lld steps each\n", a.out.c_str(),
               o.lags.size(), o.conditions.size(), static_cast<long long>(o.seeds), static_cast<long long>(o.steps));
  auto result = study::run_stability_study(o, [&](int done, int total) { progress("runs", done, total, start); });
  if (!result.is_ok()) return result.status();
  const std::string mean_csv = a.out + "/stability_mean.csv";
  const nlohmann::json json = study::stability_json(*result);
  CT_RETURN_IF_ERROR(write_output(a.out + "/stability_curves.csv", study::stability_curves_csv(*result)));
  CT_RETURN_IF_ERROR(write_output(mean_csv, study::stability_mean_csv(*result)));
  CT_RETURN_IF_ERROR(write_output(a.out + "/stability_summary.csv", study::stability_summary_csv(*result)));
  CT_RETURN_IF_ERROR(write_output(a.out + "/stability.json", json.dump(2) + "\n"));
  const bool plotted = plot(a.out, "stability.gp", study::stability_gnuplot(*result, mean_csv, a.out));
  CT_RETURN_IF_ERROR(write_output("-", a.json ? json.dump(2) + "\n" : study::stability_table(*result)));
  std::fprintf(stderr, "sis stability: %.0f s; wrote %s/stability_{curves,mean,summary}.csv, stability.json%s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), a.out.c_str(),
               plotted ? ", stability_success.png" : " (no gnuplot: no PNGs)");
  return Status::ok();
}

}  // namespace

void add_sis_command(CLI::App& app, Action* action) {
  CLI::App* sis = app.add_subcommand("sis", torch_command_description("sis"));
  sis->require_subcommand(1, 1);

  auto s = std::make_shared<StudyArgs>();
  CLI::App* est = sis->add_subcommand(
      "study",
      "Off-policy gradient estimators against the exact gradient. A policy over a small vocabulary whose next-token "
      "distribution depends on the position and an automaton's state, on a task the automaton scores, so that J and "
      "grad J are exact (a dynamic programme, differentiated by autograd). For each sequence length and policy "
      "drift, batches drawn from the drifted behaviour policy feed on-policy (the reference), naive (no correction), "
      "sequence IS, token IS, "
      "truncated IS, masked IS, IcePop, GSPO, and SIS with the exact and the top-K envelope; printed: bias, "
      "variance, MSE and cosine to grad J, effective sample size, SIS's acceptance rate, and whether SIS lands "
      "between token IS and sequence IS. Full grid about 3 min, --quick 30 s on 2 cores");
  est->add_flag("--quick", s->quick, "Three drifts and 200 replicates");
  est->add_flag("--json", s->json, "Print JSON instead of the tables");
  est->add_option("--out", s->out, "Folder for estimators.{csv,json} and the PNG plots")->capture_default_str();
  s->lengths_flag = est->add_option("--lengths", s->lengths, "Sequence lengths (default 4,16,64,256)");
  s->drifts_flag =
      est->add_option("--drifts", s->drifts,
                      "Behaviour-policy drifts: the s.d. of the noise added to the parameters (default 0.05,0.2,0.5,1; "
                      "--quick 0.05,0.3,1)");
  s->replicates_flag = est->add_option("--replicates", s->replicates, "Batches per cell (default 1000; --quick 200)");
  s->batch_flag = est->add_option("--batch", s->batch, "Sequences per batch (default 32)");
  s->top_k_flag = est->add_option("--top-k", s->top_k, "K of SIS's top-K envelope, of a vocabulary of 8 (default 3)");
  est->add_flag("--no-baseline", s->no_baseline,
                "Weight scores by the raw reward R instead of R - E[R] (the exact mean reward of the policy that drew "
                "the batch, as GRPO's group mean estimates it)");
  est->add_option("--seed", s->seed, "Seed of the policy, the drift and every draw")->capture_default_str();
  est->callback([s, action] { *action = [s] { return run_study(*s); }; });

  auto t = std::make_shared<StabilityArgs>();
  CLI::App* stab = sis->add_subcommand(
      "stability",
      "GRPO with stale rollouts and engine noise, with and without SIS. Rollouts come from the weights k updates old "
      "through an engine whose logits carry noise; the trainer's pi_old is its own recomputation. Conditions: grpo, "
      "grpo+sis (SIS tests pi_theta/pi_old), grpo+sis-engine (SIS tests pi_theta/engine). After every step the "
      "success rate P(R >= 0.75) is computed exactly; printed: final success with a 95% t-interval over seeds, "
      "steps to 50% success, collapse rate (final below half the run's best). About 2 min, --quick 40 s on 2 cores");
  stab->add_flag("--quick", t->quick, "Lags 0,2,8 and 120 steps");
  stab->add_flag("--json", t->json, "Print JSON instead of the table");
  stab->add_option("--out", t->out, "Folder for the CSVs, stability.json and stability_success.png")
      ->capture_default_str();
  t->lags_flag =
      stab->add_option("--lags", t->lags, "Rollout staleness k in updates (default 0,1,2,4,8; --quick 0,2,8)");
  t->conditions_flag =
      stab->add_option("--conditions", t->conditions, "grpo, grpo+sis, grpo+sis-engine (default all three)");
  t->seeds_flag = stab->add_option("--seeds", t->seeds, "Seeds per (k, condition) (default 5)");
  t->steps_flag = stab->add_option("--steps", t->steps, "Training steps per run (default 300; --quick 120)");
  t->engine_noise_flag =
      stab->add_option("--engine-noise", t->engine_noise, "S.d. of the engine's logit noise (default 0.5)");
  t->lr_flag = stab->add_option("--lr", t->lr, "Adam learning rate (default 0.05)");
  t->length_flag = stab->add_option("--length", t->length, "Tokens per sequence (default 32)");
  t->vocab_flag = stab->add_option("--vocab", t->vocab, "Vocabulary (default 16)");
  t->states_flag = stab->add_option("--states", t->states, "Automaton states, one prompt each (default 8)");
  stab->add_option("--seed", t->seed, "Base seed")->capture_default_str();
  stab->callback([t, action] { *action = [t] { return run_stability(*t); }; });
}

}  // namespace clustertwin::cli
