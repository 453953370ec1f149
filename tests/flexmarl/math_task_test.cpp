// The real executor's arithmetic task: problems, prompts, budgets, rewards.

#include "models/flexmarl/math_task.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace clustertwin::models::flexmarl {
namespace {

TEST(MathTaskTest, ProblemsAreSeededAndVaried) {
  std::set<int> answers;
  for (int64_t i = 0; i < 200; ++i) {
    const Problem p = make_problem(7, i);
    const Problem q = make_problem(7, i);
    EXPECT_EQ(p.tokens(), q.tokens());
    EXPECT_GE(p.a, 0);
    EXPECT_LE(p.c, 9);
    answers.insert(p.answer());
  }
  EXPECT_GT(answers.size(), 30u);
  EXPECT_NE(make_problem(7, 0).tokens(), make_problem(8, 0).tokens()) << "another seed, another problem (here)";
  EXPECT_EQ(task_text(Problem{3, 4, 5}.tokens()), "3+4*5=");
}

TEST(MathTaskTest, PromptsCarryTheEarlierTurns) {
  const Problem p{3, 4, 5};
  const std::vector<int64_t> plan = {1, 2, kEnd, 3};
  const std::vector<int64_t> answer = {2, 3, kEnd, 9};
  EXPECT_EQ(task_text(task_prompt(p, 0, {})), "3+4*5=");
  EXPECT_EQ(task_text(task_prompt(p, 1, {plan})), "3+4*5=12E3;");
  EXPECT_EQ(task_text(task_prompt(p, 2, {plan, answer})), "3+4*5=23?");
  EXPECT_EQ(task_text(task_prompt(p, 2, {plan, {kPlus}})), "3+4*5=?") << "no digits: no answer";
}

TEST(MathTaskTest, RewardsScoreTheSolverAndTheChecker) {
  const Problem p{3, 4, 5};  // 23
  EXPECT_EQ(solver_answer({2, 3, kEnd}), 23);
  EXPECT_EQ(solver_answer({kEnd, 2}), -1);
  EXPECT_DOUBLE_EQ(solver_reward(p, {2, 3, kEnd}), 1.0);
  EXPECT_DOUBLE_EQ(solver_reward(p, {2, 4, kEnd}), 0.25);
  EXPECT_DOUBLE_EQ(solver_reward(p, {2, 3, 1}), 0.5 * 2 / 3);
  EXPECT_DOUBLE_EQ(solver_reward(p, {kEnd}), 0.0);
  auto r = task_rewards(p, {{1}, {2, 3, kEnd}, {1, kEnd}});
  EXPECT_DOUBLE_EQ(r[0], 1.0);
  EXPECT_DOUBLE_EQ(r[1], 1.0);
  EXPECT_DOUBLE_EQ(r[2], 1.0) << "accepted an exact answer";
  r = task_rewards(p, {{1}, {2, 4}, {1, kEnd}});
  EXPECT_DOUBLE_EQ(r[0], 0.25);
  EXPECT_DOUBLE_EQ(r[2], 0.0) << "accepted a wrong answer";
  EXPECT_DOUBLE_EQ(task_rewards(p, {{1}, {2, 4}, {0}})[2], 1.0) << "rejected a wrong answer";
  EXPECT_DOUBLE_EQ(task_rewards(p, {{1}, {2, 4}, {8, kEnd}})[2], 1.0) << "an even digit rejects";
  EXPECT_DOUBLE_EQ(task_rewards(p, {{1}, {2, 3}, {7, kEnd}})[2], 1.0) << "an odd digit accepts";
  EXPECT_DOUBLE_EQ(task_rewards(p, {{1}, {2, 3}, {4, kEnd}})[2], 0.0) << "rejected the exact answer";
  EXPECT_DOUBLE_EQ(task_rewards(p, {{1}, {2, 4}, {kQuery}})[2], 0.0) << "no verdict";
}

// The planner's budgets over 400 inputs x 4 trajectories, sorted.
std::vector<int> planner_budgets(const TaskSpec& task) {
  std::vector<int> budgets;
  for (int64_t i = 0; i < 400; ++i) {
    for (int j = 0; j < 4; ++j) {
      budgets.push_back(task_budget(task, 1, 0, i, j));
      EXPECT_EQ(task_budget(task, 1, 0, i, j), budgets.back()) << "seeded";
      EXPECT_EQ(task_budget(task, 1, 1, i, j), task.agents[1].max_new_tokens);
      EXPECT_EQ(task_budget(task, 1, 2, i, j), task.agents[2].max_new_tokens);
    }
  }
  std::sort(budgets.begin(), budgets.end());
  return budgets;
}

TEST(MathTaskTest, ThePlannersBudgetIsHeavyTailedTheOthersFixed) {
  const std::vector<int> budgets = planner_budgets(small_task());
  const int median = budgets[budgets.size() / 2];
  EXPECT_GE(budgets.front(), 6);
  EXPECT_GE(median, 8);
  EXPECT_LE(median, 14);
  EXPECT_EQ(budgets.back(), small_task().agents[0].max_new_tokens) << "the cap is reached";
  const size_t capped = std::count(budgets.begin(), budgets.end(), budgets.back());
  EXPECT_GT(capped, 10u);
  EXPECT_LT(capped, budgets.size() / 5);
}

// The large planner's budget is the small one's Pareto at scale 45: every
// draw's uniform is the same, so each budget is the small one's x 45 / 6
// before rounding up and capping, with median 45 x 2^(1/1.2) ~ 80 and
// P(cap) = (45 / 512)^1.2 ~ 5.4%.
TEST(MathTaskTest, TheLargePlannersBudgetIsTheSameShapeAtALargerScale) {
  auto large = task_spec("large");
  ASSERT_TRUE(large.is_ok()) << large.status().message();
  const std::vector<int> budgets = planner_budgets(*large);
  const int median = budgets[budgets.size() / 2];
  EXPECT_GE(budgets.front(), 45) << "Pareto's minimum is its scale";
  EXPECT_GE(median, 70);
  EXPECT_LE(median, 92);
  EXPECT_EQ(budgets.back(), 512) << "the cap is reached";
  const size_t capped = std::count(budgets.begin(), budgets.end(), 512);
  EXPECT_GT(capped, budgets.size() / 40) << "~5.4% of 1,600: ~86";
  EXPECT_LT(capped, budgets.size() / 10);
  for (int64_t i = 0; i < 50; ++i) {
    const int small = task_budget(small_task(), 1, 0, i, 0), big = task_budget(*large, 1, 0, i, 0);
    if (small < 64 && big < 512) {
      EXPECT_GE(big, (small - 1) * 45 / 6) << i << ": ceil(x) = " << small << " so x > " << small - 1;
      EXPECT_LE(big, small * 45 / 6 + 1) << i;
    }
  }
}

// Every turn's prompt plus its longest response fits the context: the
// planner's after the problem; the solver's after the problem, the
// planner's whole scratchpad and ";"; the checker's after the problem, the
// solver's longest number and "?".
TEST(MathTaskTest, TheContextHoldsTheLongestPromptAndResponse) {
  for (const std::string size : {"small", "large"}) {
    auto task = task_spec(size);
    ASSERT_TRUE(task.is_ok()) << task.status().message();
    const Problem p{9, 9, 9};
    const std::vector<int64_t> scratchpad(static_cast<size_t>(task->agents[0].max_new_tokens), kEnd);
    const std::vector<int64_t> number(static_cast<size_t>(task->agents[1].max_new_tokens), 9);
    const std::vector<std::vector<int64_t>> earlier = {scratchpad, number};
    for (int turn = 0; turn < kTaskTurns; ++turn) {
      const size_t longest =
          task_prompt(p, turn, earlier).size() + task->agents[static_cast<size_t>(turn)].max_new_tokens;
      EXPECT_LE(longest, static_cast<size_t>(task->context)) << size << ", turn " << turn;
    }
  }
  // large: the solver's 6 + 512 + 1 + 8 = 527 of 528.
  auto large = task_spec("large");
  ASSERT_TRUE(large.is_ok());
  EXPECT_EQ(task_prompt(Problem{}, 1, {std::vector<int64_t>(512, 1)}).size() + 8, 527u);
  EXPECT_EQ(large->context, 528);
  EXPECT_EQ(large->agents[0].max_new_tokens, 512);
}

// small is what the shipped traces ran: its shapes, caps and context are pinned.
TEST(MathTaskTest, TheSmallTaskIsTheShippedOne) {
  const TaskSpec s = small_task();
  EXPECT_EQ(s.size, "small");
  EXPECT_EQ(s.context, 96);
  const int caps[kTaskTurns] = {64, 8, 2};
  const int dims[kTaskTurns][4] = {{64, 2, 4, 256}, {48, 2, 4, 192}, {32, 1, 2, 128}};
  for (size_t a = 0; a < kTaskTurns; ++a) {
    EXPECT_EQ(s.agents[a].max_new_tokens, caps[a]) << a;
    EXPECT_EQ(s.agents[a].stops_at_end, a != 0) << a;
    EXPECT_EQ(s.dims[a].d_model, dims[a][0]) << a;
    EXPECT_EQ(s.dims[a].layers, dims[a][1]) << a;
    EXPECT_EQ(s.dims[a].heads, dims[a][2]) << a;
    EXPECT_EQ(s.dims[a].d_ff, dims[a][3]) << a;
  }
  // The planner: a block 4d + 4(d^2 + d) + (d f + f) + (f d + d) = 256 + 16,640 + 16,640 + 16,448 = 49,984 at
  // d 64, f 256; two blocks, the final LayerNorm (128) and the head (64 x 16 + 16): 101,136; the tables
  // (16 + 96) x 64 = 7,168 more.
  EXPECT_EQ(task_linear_params(s, 0), 101136);
  EXPECT_EQ(task_params(s, 0), 108304);
  auto named = task_spec("small");
  ASSERT_TRUE(named.is_ok());
  EXPECT_EQ(named->size, "small");
  EXPECT_EQ(task_params(*named, 1), task_params(s, 1));
  EXPECT_EQ(task_agent_name(0), "planner");
  EXPECT_EQ(task_agent_name(2), "checker");
}

TEST(MathTaskTest, AnUnknownSizeIsNamedWithTheAllowedOnes) {
  auto huge = task_spec("huge");
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(huge.status().message(), "task 'huge': unknown (allowed: small, large)");
  EXPECT_FALSE(task_spec("").is_ok());
  EXPECT_FALSE(task_spec("Large").is_ok()) << "names are exact";
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
