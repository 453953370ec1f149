#include "models/flexmarl/schedule.h"

#include <algorithm>

namespace clustertwin::models::flexmarl {

std::string describe(const Decision& d) {
  switch (d.kind) {
    case Decision::Kind::kPhase:
      return "phase " + std::to_string(d.size) + ": agent " + std::to_string(d.agent);
    case Decision::Kind::kMicroBatch:
      return "micro-batch agent " + std::to_string(d.agent) + ": " + std::to_string(d.size) + " samples";
    case Decision::Kind::kPublish:
      return "publish agent " + std::to_string(d.agent) + " (" + std::to_string(d.size) + " samples)";
  }
  return "?";
}

StatusOr<Schedule> Schedule::create(Framework framework, std::vector<int> turns, int batch, int group,
                                    int micro_batch) {
  if (turns.empty()) return Status::invalid_argument("schedule: no agents");
  for (int t : turns) {
    if (t < 0) return Status::invalid_argument("schedule: turn " + std::to_string(t) + " must be >= 0");
  }
  if (batch < 1 || group < 1 || batch % group != 0) {
    return Status::invalid_argument("schedule: group " + std::to_string(group) + " does not divide the batch " +
                                    std::to_string(batch));
  }
  if (micro_batch < 1) {
    return Status::invalid_argument("schedule: micro-batch " + std::to_string(micro_batch) + " must be >= 1");
  }
  Schedule s;
  s.framework_ = framework;
  s.turns_ = std::move(turns);
  s.batch_ = batch;
  s.group_ = group;
  s.micro_batch_ = micro_batch;
  if (framework == Framework::kSync || framework == Framework::kMarti) {
    for (int t = 0; t <= s.last_turn(); ++t) {
      std::vector<int> turn = s.agents_of_turn(t);
      if (turn.empty()) continue;
      if (framework == Framework::kSync) {
        for (int a : turn)
          s.phases_.push_back({a});
      } else {
        s.phases_.push_back(turn);
      }
    }
  }
  return s;
}

int Schedule::queries_in_flight(int inter_query) const {
  switch (framework_) {
    case Framework::kSync:
      return 1;
    case Framework::kMarti:
      return queries();
    default:
      return std::clamp(inter_query, 1, queries());
  }
}

std::vector<int> Schedule::agents_of_turn(int turn) const {
  std::vector<int> out;
  for (size_t a = 0; a < turns_.size(); ++a) {
    if (turns_[a] == turn) out.push_back(static_cast<int>(a));
  }
  return out;
}

int Schedule::last_turn() const {
  return *std::max_element(turns_.begin(), turns_.end());
}

bool Schedule::sample_ready(int agent, int sample, const std::vector<std::vector<bool>>& done) const {
  const int turn = turns_[static_cast<size_t>(agent)];
  // The nearest earlier turn that has agents (turns may skip numbers).
  for (int t = turn - 1; t >= 0; --t) {
    const std::vector<int> before = agents_of_turn(t);
    if (before.empty()) continue;
    return std::all_of(before.begin(), before.end(),
                       [&](int a) { return done[static_cast<size_t>(a)][static_cast<size_t>(sample)]; });
  }
  return true;
}

int Schedule::complete_rows(const std::vector<bool>& done) const {
  int complete = 0;
  for (int g = 0; g < batch_ / group_; ++g) {
    bool whole = true;
    for (int s = g * group_; s < (g + 1) * group_; ++s)
      whole = whole && done[static_cast<size_t>(s)];
    if (whole) complete += group_;
  }
  return complete;
}

int Schedule::next_micro_batch(int complete, int taken, bool rollout_done) const {
  const int untaken = complete - taken;
  if (untaken <= 0) return 0;
  const bool all_complete = complete == batch_;
  switch (framework_) {
    case Framework::kSync:
    case Framework::kMarti:
      return rollout_done && all_complete && taken == 0 ? batch_ : 0;
    case Framework::kNoAsync:
      return all_complete ? std::min(untaken, micro_batch_) : 0;
    default:
      return untaken >= micro_batch_ || all_complete ? std::min(untaken, micro_batch_) : 0;
  }
}

}  // namespace clustertwin::models::flexmarl
