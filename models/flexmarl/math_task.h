#pragma once

// The real FlexMARL executor's multi-agent task: three agents answer an
// arithmetic problem in turn, and a program decides every reward.
//
//   problem  "a+b*c="                      digits a, b, c from the input's seed
//   turn 0   planner  "a+b*c=" -> scratchpad          its length budget is heavy-tailed
//   turn 1   solver   "a+b*c=" scratchpad ";" -> digits E
//   turn 2   checker  "a+b*c=" digits "?" -> verdict E  an odd digit accepts, an even one rejects
//
// Rewards: the solver scores the digits it got right (1 for the exact
// answer); the planner shares the solver's score (its scratchpad only helps
// or hurts the solver); the checker scores 1 when its verdict matches the
// solver's exactness (any other first token: no verdict, 0). Verdicts by
// parity rather than '1'/'0' alone keep an untrained checker's rewards
// varied within a GRPO group, so its gradient is not zero from the start.
//
// The agents are deliberately skewed, as in FlexMARL's workloads: the planner
// writes long, heavy-tailed responses (a Pareto budget per trajectory, no
// early stop), the solver a few digits, the checker one verdict. Turns of
// one trajectory depend on each other; trajectories (GRPO's group) and
// inputs are independent. Plain C++: the executor, its tests and the twin's
// calibration share it.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace clustertwin::models::flexmarl {

/// The task's 16 tokens: the digits 0-9 are themselves.
enum TaskToken : int64_t { kPlus = 10, kTimes = 11, kEquals = 12, kSep = 13, kEnd = 14, kQuery = 15 };
constexpr int64_t kTaskVocab = 16;

/// "3+4*5=" for a token sequence, E for kEnd.
std::string task_text(const std::vector<int64_t>& tokens);

struct Problem {
  int a = 0, b = 0, c = 0;
  int answer() const { return a + b * c; }
  std::vector<int64_t> tokens() const;  // a + b * c =
};

/// The problem of input `input` under `seed`: the same pair, the same problem.
Problem make_problem(uint64_t seed, int64_t input);

struct TaskAgent {
  std::string name;
  int max_new_tokens = 0;    // the cap of its length budget
  bool stops_at_end = true;  // generation ends at kEnd (the planner's does not)
};

/// The three agents, in turn order: planner, solver, checker.
const std::vector<TaskAgent>& task_agents();
constexpr int kTaskTurns = 3;

/// Each agent's policy, a small byte-level GPT (models/torch/byte_lm.h):
/// the planner, the long writer, is the largest.
struct TaskModelDims {
  int d_model = 0, layers = 0, heads = 0, d_ff = 0;
  int context = 96;  // positions: the longest prompt and response fit
};
TaskModelDims task_model_dims(int agent);
/// The parameters a token's forward pass multiplies by (the blocks' and
/// the head's; the embedding tables are lookups): a job's FLOPs are 2x
/// (inference) or 6x (forward and backward) this per position.
int64_t task_linear_params(int agent);
/// All of its parameters, the embedding tables included.
int64_t task_params(int agent);

/// Turn `turn`'s length budget for trajectory `trajectory` of `input`: the
/// planner's is Pareto (scale 6, shape 1.2) capped at its max, the others'
/// their max.
int task_budget(uint64_t seed, int turn, int64_t input, int trajectory);

/// Turn `turn`'s prompt given the responses of the earlier turns
/// (`earlier[t]`, t < turn; each may end with kEnd).
std::vector<int64_t> task_prompt(const Problem& problem, int turn, const std::vector<std::vector<int64_t>>& earlier);

/// The solver's number: its leading digits (none: -1).
int64_t solver_answer(const std::vector<int64_t>& response);

/// Every agent's reward once all three turns answered, by turn.
std::array<double, kTaskTurns> task_rewards(const Problem& problem, const std::vector<std::vector<int64_t>>& responses);

/// The solver's reward alone (what the planner shares): 1 for the exact
/// answer, otherwise half the share of the answer's digits it got right in
/// place.
double solver_reward(const Problem& problem, const std::vector<int64_t>& response);

}  // namespace clustertwin::models::flexmarl
