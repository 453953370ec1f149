#pragma once

// The agents of a FlexMARL workload as the command line names them:
// "3x14B" (three agents of Qwen2.5-14B size), "3x32B+7x14B", "14B" (one).

#include <string>
#include <vector>

#include "common/status.h"
#include "models/flexmarl/workload.h"
#include "models/spec/llm.h"

namespace clustertwin::models::flexmarl {

/// One spec per agent, in the order written. InvalidArgument naming the text
/// (the caller names its field or flag)
/// and the bad part: an unknown model size, a count below 1, more than
/// kMaxAgents agents, or a malformed term.
StatusOr<std::vector<spec::LlmSpec>> parse_agents(const std::string& text);

constexpr int kMaxAgents = 64;

/// The workload the command line asks for: `agents` as parse_agents reads
/// it (named after the text), or the paper's MA workload when it is "".
StatusOr<Workload> workload_from_agents(const std::string& agents);

}  // namespace clustertwin::models::flexmarl
