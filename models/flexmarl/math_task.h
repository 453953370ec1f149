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

#include "common/status.h"

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

/// The agents' names in turn order, whatever the task's size: planner, solver, checker.
const std::string& task_agent_name(int agent);

struct TaskAgent {
  int max_new_tokens = 0;    // the cap of its length budget
  bool stops_at_end = true;  // generation ends at kEnd (the planner's does not)
};
constexpr int kTaskTurns = 3;

/// Each agent's policy, a small byte-level GPT (models/torch/byte_lm.h):
/// the planner, the long writer, is the largest.
struct TaskModelDims {
  int d_model = 0, layers = 0, heads = 0, d_ff = 0;
};

/// One size of the task: what its agents may write and the policies that
/// write it. A run holds one and passes it down (the orchestrator's options,
/// the workers'); nothing reads a size from anywhere else.
///
///            planner                              solver    checker   context
///   small    64 x 2,   budget cap 64,  median ~10  48 x 2    32 x 1    96
///   large    512 x 12, budget cap 512, median ~80  384 x 8   256 x 4   528
///            (d_model x layers; the solver writes 8 tokens at most, the checker 2)
///
/// small is the shipped traces' task, the one the process twin and its
/// calibration know; large is for a GPU, where a step's time is generation's.
struct TaskSpec {
  std::string size;                          // "small" or "large"
  std::array<TaskAgent, kTaskTurns> agents;  // planner, solver, checker
  std::array<TaskModelDims, kTaskTurns> dims;
  int context = 0;  // positions: the longest prompt and response fit
  /// The planner's length budget: Pareto(scale, shape), capped at its max_new_tokens.
  double planner_scale = 0, planner_shape = 0;
};

/// The task of size `size`; InvalidArgument "task 'huge': unknown (allowed:
/// small, large)" for any other name.
StatusOr<TaskSpec> task_spec(const std::string& size);
/// The small task: the default, the shipped traces' and the process twin's.
TaskSpec small_task();

/// The parameters a token's forward pass multiplies by (the blocks' and
/// the head's; the embedding tables are lookups): a job's FLOPs are 2x
/// (inference) or 6x (forward and backward) this per position.
int64_t task_linear_params(const TaskSpec& task, int agent);
/// All of its parameters, the embedding tables included.
int64_t task_params(const TaskSpec& task, int agent);

/// Turn `turn`'s length budget for trajectory `trajectory` of `input`: the
/// planner's is Pareto (the task's scale and shape) capped at its max, the
/// others' their max.
int task_budget(const TaskSpec& task, uint64_t seed, int turn, int64_t input, int trajectory);

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
