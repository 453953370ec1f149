#pragma once

// A FlexMARL workload as the plans and the twin see it
// (../shared/papers/flexmarl.md): the agents, how an episode flows between
// them, the batch, and how long each agent's responses are.
//
//   episode of one query (the MA workload: analysis, then marketing and
//   after-sales, which do not depend on each other)
//
//       query ──► [analysis] ──┬──► [marketing]     (turn 1, branch 0)
//                  (turn 0)    └──► [after-sales]   (turn 1, branch 1)
//
// Agents of one turn run as independent branches (intra-query parallelism);
// a turn waits for the turn before it. Every agent answers `group` times per
// query (GRPO's group), so a global batch of B samples per agent takes
// B / group queries.
//
// The paper's workloads are proprietary: the response lengths below are our
// reconstruction, set so that agents differ widely and each is heavy-tailed
// (log-normal, cut at the paper's 8,192-token limit). Plain C++.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/spec/llm.h"

namespace clustertwin::models::flexmarl {

struct AgentRole {
  std::string name;
  spec::LlmSpec model;
  int turn = 0;                          // agents of one turn are independent branches
  int prompt_tokens = 1024;              // the context it reads before answering
  double median_response_tokens = 1024;  // log-normal median
  double sigma = 1.0;                    // log-normal shape: the tail's weight
};

struct Workload {
  std::string name;
  std::vector<AgentRole> agents;
  int global_batch = 64;  // samples per agent per step (the paper's)
  int micro_batch = 16;   // the paper's
  /// GRPO's samples per query and agent: the paper's intra-query parallelism
  /// of 16 (the requests of one query in flight together), so the paper's
  /// batch of 64 is 4 queries, its inter-query parallelism (reconstruction:
  /// the paper gives the three figures, not how they relate).
  int group = 16;
  int max_response_tokens = 8192;
  int inter_query = 4;  // queries in flight under FlexMARL (the paper's inter-query parallelism)
};

/// The paper's MA workload: analysis, marketing and after-sales agents, all
/// Qwen2.5-14B size.
Workload ma_workload();

/// The paper's CA workload (category assistant: order, pricing and inventory
/// roles on Qwen2.5-14B and 32B): the order agent first, then pricing (32B)
/// and inventory (14B) as independent branches. Which role is 32B and the
/// response lengths are our reconstruction (the paper names the roles and
/// the two sizes only).
Workload ca_workload();

/// The paper's workload named `name` ("ma" or "ca", either case);
/// InvalidArgument naming the value and the allowed names.
StatusOr<Workload> paper_workload(const std::string& name);

/// A workload for the agents of `--agents` (models/flexmarl/agents.h): the
/// first agent is turn 0 and every other answers in turn 1, each with its
/// own response-length median (1,024 to 4,096 tokens in turn).
Workload workload_for(const std::vector<spec::LlmSpec>& agents);

/// InvalidArgument naming the field: a micro-batch larger than the global
/// batch or not dividing it, a group not dividing the global batch, no
/// agents, a non-positive length or sigma.
Status validate(const Workload& workload);

/// The response lengths (tokens, 1 to max_response_tokens) of one step's
/// samples: [agent][sample], global_batch each, from `seed` and `step`.
/// The same on every platform (our own generator, not <random>'s
/// distributions).
std::vector<std::vector<int>> response_lengths(const Workload& workload, uint64_t seed, int64_t step);

}  // namespace clustertwin::models::flexmarl
