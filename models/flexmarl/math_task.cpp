#include "models/flexmarl/math_task.h"

#include <algorithm>
#include <cmath>

#include "common/hash.h"

namespace clustertwin::models::flexmarl {
namespace {

// A uniform in (0, 1) from a 64-bit word.
double unit(uint64_t word) {
  return (static_cast<double>(word >> 11) + 0.5) / 9007199254740992.0;  // 2^53
}

std::string digits_of(int64_t n) {
  return std::to_string(n);
}

}  // namespace

std::string task_text(const std::vector<int64_t>& tokens) {
  static const char kChars[] = "0123456789+*=;E?";
  std::string out;
  for (int64_t t : tokens)
    out += (t >= 0 && t < kTaskVocab) ? kChars[t] : '#';
  return out;
}

std::vector<int64_t> Problem::tokens() const {
  return {a, kPlus, b, kTimes, c, kEquals};
}

Problem make_problem(uint64_t seed, int64_t input) {
  const uint64_t h = mix64(splitmix64(seed) ^ mix64(static_cast<uint64_t>(input) + 1));
  Problem p;
  p.a = static_cast<int>(h % 10);
  p.b = static_cast<int>((h >> 8) % 10);
  p.c = static_cast<int>((h >> 16) % 10);
  return p;
}

const std::string& task_agent_name(int agent) {
  static const std::array<std::string, kTaskTurns> kNames = {"planner", "solver", "checker"};
  return kNames.at(static_cast<size_t>(agent));
}

TaskSpec small_task() {
  TaskSpec t;
  t.size = "small";
  t.agents = {TaskAgent{64, false}, TaskAgent{8, true}, TaskAgent{2, true}};
  t.dims = {TaskModelDims{64, 2, 4, 256}, TaskModelDims{48, 2, 4, 192}, TaskModelDims{32, 1, 2, 128}};
  t.context = 96;
  // Pareto(x_m = 6, alpha = 1.2): median 6 x 2^(1/1.2) ~ 10.7.
  t.planner_scale = 6.0;
  t.planner_shape = 1.2;
  return t;
}

namespace {

// Policies for a GPU, where decoding is latency-bound: a token costs a pass
// through every layer one after another, so depth sets generation's time and
// width mostly sets training's FLOPs and the state's bytes (float64 weights,
// gradients and two Adam moments: 32 bytes a parameter, copied whole at every
// swap and kept by the controller for every agent). Hence deep and narrow:
// 12, 8 and 4 layers at widths 512, 384 and 256 (heads of 64), ~55M
// parameters in all, whose states (1.8 GB) fit the CPU test's machine too.
TaskSpec large_task() {
  TaskSpec t;
  t.size = "large";
  t.agents = {TaskAgent{512, false}, TaskAgent{8, true}, TaskAgent{2, true}};
  t.dims = {TaskModelDims{512, 12, 8, 2048}, TaskModelDims{384, 8, 6, 1536}, TaskModelDims{256, 4, 4, 1024}};
  // The longest sequence is the solver's: the problem (6), the planner's
  // whole scratchpad (512), ";" (1), then its 8 tokens: 527, rounded up to 528.
  t.context = 528;
  // The small task's shape at a larger scale: median 45 x 2^(1/1.2) ~ 80; P(budget >= 512) = (45/512)^1.2 ~ 5%.
  t.planner_scale = 45.0;
  t.planner_shape = 1.2;
  return t;
}

}  // namespace

StatusOr<TaskSpec> task_spec(const std::string& size) {
  if (size == "small") return small_task();
  if (size == "large") return large_task();
  return Status::invalid_argument("task '" + size + "': unknown (allowed: small, large)");
}

int64_t task_linear_params(const TaskSpec& task, int agent) {
  const TaskModelDims m = task.dims.at(static_cast<size_t>(agent));
  const int64_t d = m.d_model;
  // A block: two LayerNorms, Q, K, V and the output projection, the MLP's two Linears.
  const int64_t block = 2 * (2 * d) + 4 * (d * d + d) + (d * m.d_ff + m.d_ff) + (m.d_ff * d + d);
  return m.layers * block + 2 * d + (d * kTaskVocab + kTaskVocab);  // the final LayerNorm, the head
}

int64_t task_params(const TaskSpec& task, int agent) {
  const TaskModelDims m = task.dims.at(static_cast<size_t>(agent));
  return task_linear_params(task, agent) + (kTaskVocab + task.context) * m.d_model;
}

int task_budget(const TaskSpec& task, uint64_t seed, int turn, int64_t input, int trajectory) {
  const TaskAgent& agent = task.agents.at(static_cast<size_t>(turn));
  if (turn != 0) return agent.max_new_tokens;
  // Pareto(x_m, alpha) by inversion: x_m u^(-1/alpha), capped by the max.
  const uint64_t h = mix64(splitmix64(seed ^ 0x9b1a7e5d3c2f4a61ull) ^
                           mix64((static_cast<uint64_t>(input) << 20) + static_cast<uint64_t>(trajectory) + 1));
  const double x = task.planner_scale * std::pow(unit(h), -1.0 / task.planner_shape);
  return static_cast<int>(std::min<double>(agent.max_new_tokens, std::ceil(x)));
}

std::vector<int64_t> task_prompt(const Problem& problem, int turn, const std::vector<std::vector<int64_t>>& earlier) {
  std::vector<int64_t> p = problem.tokens();
  if (turn == 1) {
    p.insert(p.end(), earlier.at(0).begin(), earlier.at(0).end());
    p.push_back(kSep);
  } else if (turn == 2) {
    const int64_t answer = solver_answer(earlier.at(1));
    if (answer >= 0) {
      for (char d : digits_of(answer))
        p.push_back(d - '0');
    }
    p.push_back(kQuery);
  }
  return p;
}

int64_t solver_answer(const std::vector<int64_t>& response) {
  int64_t n = -1;
  for (int64_t t : response) {
    if (t < 0 || t > 9) break;
    n = (n < 0 ? 0 : n * 10) + t;
    if (n > 1000000000) break;  // far past any answer (at most 90)
  }
  return n;
}

double solver_reward(const Problem& problem, const std::vector<int64_t>& response) {
  const std::string want = digits_of(problem.answer());
  std::string got;
  for (int64_t t : response) {
    if (t < 0 || t > 9) break;
    got += static_cast<char>('0' + t);
  }
  if (got == want) return 1.0;
  size_t right = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    right += got[i] == want[i] ? 1 : 0;
  return 0.5 * static_cast<double>(right) / static_cast<double>(std::max(got.size(), want.size()));
}

std::array<double, kTaskTurns> task_rewards(const Problem& problem,
                                            const std::vector<std::vector<int64_t>>& responses) {
  const double solver = solver_reward(problem, responses.at(1));
  const bool exact = solver == 1.0;
  const std::vector<int64_t>& verdict = responses.at(2);
  double checker = 0;
  if (!verdict.empty() && verdict[0] >= 0 && verdict[0] <= 9) checker = (verdict[0] % 2 == 1) == exact ? 1.0 : 0.0;
  return {solver, solver, checker};
}

}  // namespace clustertwin::models::flexmarl
