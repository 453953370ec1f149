// clustertwin sis: SIS's two studies (experiments/sis/README.md) from the
// command line: their flags. What they run is real/sis/sis_command.h.

#include "real/sis/sis_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <type_traits>

#include "cli/command.h"
#include "cli/torch_commands.h"
#include "common/text.h"

namespace clustertwin::cli {
namespace {

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

// A flag the user gave (an option left out keeps the study's default; a given one is validated, never replaced).
bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

// `value` when its flag was given, else none.
template <typename T>
std::optional<T> if_given(const CLI::Option* option, const T& value) {
  return given(option) ? std::optional<T>(value) : std::nullopt;
}

struct StudyFlags {
  CLI::Option *lengths_flag = nullptr, *drifts_flag = nullptr, *replicates_flag = nullptr, *batch_flag = nullptr,
              *top_k_flag = nullptr;
  real::sis::SisStudyArgs args;
  std::string lengths, drifts;
  int64_t replicates = 0, batch = 0, top_k = 0;
};

Status run_study(const StudyFlags& f) {
  real::sis::SisStudyArgs a = f.args;
  if (given(f.lengths_flag)) {
    auto v = parse_list<int64_t>("sis study", "--lengths", f.lengths);
    if (!v.is_ok()) return v.status();
    a.lengths = *v;
  }
  if (given(f.drifts_flag)) {
    auto v = parse_list<double>("sis study", "--drifts", f.drifts);
    if (!v.is_ok()) return v.status();
    a.drifts = *v;
  }
  a.replicates = if_given(f.replicates_flag, f.replicates);
  a.batch = if_given(f.batch_flag, f.batch);
  a.top_k = if_given(f.top_k_flag, f.top_k);
  // The study names its options' fields; these are the flags that set them.
  return in_flag_words(real::sis::run_sis_study(a), {{"lengths", "--lengths"},
                                                     {"drifts", "--drifts"},
                                                     {"replicates", "--replicates"},
                                                     {"batch", "--batch"},
                                                     {"top_k", "--top-k"}})
      .with_context("sis study");
}

struct StabilityFlags {
  CLI::Option *lags_flag = nullptr, *conditions_flag = nullptr, *seeds_flag = nullptr, *steps_flag = nullptr,
              *engine_noise_flag = nullptr, *lr_flag = nullptr, *length_flag = nullptr, *vocab_flag = nullptr,
              *states_flag = nullptr;
  real::sis::SisStabilityArgs args;
  std::string lags, conditions;
  int64_t seeds = 0, steps = 0, length = 0, vocab = 0, states = 0;
  double engine_noise = 0, lr = 0;
};

Status run_stability(const StabilityFlags& f) {
  real::sis::SisStabilityArgs a = f.args;
  if (given(f.lags_flag)) {
    auto v = parse_list<int64_t>("sis stability", "--lags", f.lags);
    if (!v.is_ok()) return v.status();
    a.lags = *v;
  }
  if (given(f.conditions_flag)) a.conditions = split_commas(f.conditions);
  a.seeds = if_given(f.seeds_flag, f.seeds);
  a.steps = if_given(f.steps_flag, f.steps);
  a.engine_noise = if_given(f.engine_noise_flag, f.engine_noise);
  a.lr = if_given(f.lr_flag, f.lr);
  a.length = if_given(f.length_flag, f.length);
  a.vocab = if_given(f.vocab_flag, f.vocab);
  a.states = if_given(f.states_flag, f.states);
  return in_flag_words(real::sis::run_sis_stability(a), {{"lags", "--lags"},
                                                         {"conditions", "--conditions"},
                                                         {"seeds", "--seeds"},
                                                         {"steps", "--steps"},
                                                         {"engine_noise", "--engine-noise"},
                                                         {"lr", "--lr"},
                                                         {"length", "--length"},
                                                         {"vocab", "--vocab"},
                                                         {"states", "--states"}})
      .with_context("sis stability");
}

}  // namespace

void add_sis_command(CLI::App& app, Action* action) {
  CLI::App* sis = app.add_subcommand("sis", torch_command_description("sis"));
  sis->require_subcommand(1, 1);

  auto s = std::make_shared<StudyFlags>();
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
  est->add_flag("--quick", s->args.quick, "Three drifts and 200 replicates");
  est->add_flag("--json", s->args.json, "Print JSON instead of the tables");
  est->add_option("--out", s->args.out, "Folder for estimators.{csv,json} and the PNG plots")->capture_default_str();
  s->lengths_flag = est->add_option("--lengths", s->lengths, "Sequence lengths (default 4,16,64,256)");
  s->drifts_flag =
      est->add_option("--drifts", s->drifts,
                      "Behaviour-policy drifts: the s.d. of the noise added to the parameters (default 0.05,0.2,0.5,1; "
                      "--quick 0.05,0.3,1)");
  s->replicates_flag = est->add_option("--replicates", s->replicates, "Batches per cell (default 1000; --quick 200)");
  s->batch_flag = est->add_option("--batch", s->batch, "Sequences per batch (default 32)");
  s->top_k_flag = est->add_option("--top-k", s->top_k, "K of SIS's top-K envelope, of a vocabulary of 8 (default 3)");
  est->add_flag("--no-baseline", s->args.no_baseline,
                "Weight scores by the raw reward R instead of R - E[R] (the exact mean reward of the policy that drew "
                "the batch, as GRPO's group mean estimates it)");
  est->add_option("--seed", s->args.seed, "Seed of the policy, the drift and every draw")->capture_default_str();
  est->callback([s, action] { *action = [s] { return run_study(*s); }; });

  auto t = std::make_shared<StabilityFlags>();
  CLI::App* stab = sis->add_subcommand(
      "stability",
      "GRPO with stale rollouts and engine noise, with and without SIS. Rollouts come from the weights k updates old "
      "through an engine whose logits carry noise; the trainer's pi_old is its own recomputation. Conditions: grpo, "
      "grpo+sis (SIS tests pi_theta/pi_old), grpo+sis-engine (SIS tests pi_theta/engine). After every step the "
      "success rate P(R >= 0.75) is computed exactly; printed: final success with a 95% t-interval over seeds, "
      "steps to 50% success, collapse rate (final below half the run's best). About 2 min, --quick 40 s on 2 cores");
  stab->add_flag("--quick", t->args.quick, "Lags 0,2,8 and 120 steps");
  stab->add_flag("--json", t->args.json, "Print JSON instead of the table");
  stab->add_option("--out", t->args.out, "Folder for the CSVs, stability.json and stability_success.png")
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
  stab->add_option("--seed", t->args.seed, "Base seed")->capture_default_str();
  stab->callback([t, action] { *action = [t] { return run_stability(*t); }; });
}

}  // namespace clustertwin::cli
