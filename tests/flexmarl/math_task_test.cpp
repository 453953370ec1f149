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

TEST(MathTaskTest, ThePlannersBudgetIsHeavyTailedTheOthersFixed) {
  std::vector<int> budgets;
  for (int64_t i = 0; i < 400; ++i) {
    for (int j = 0; j < 4; ++j) {
      budgets.push_back(task_budget(1, 0, i, j));
      EXPECT_EQ(task_budget(1, 0, i, j), budgets.back());
      EXPECT_EQ(task_budget(1, 1, i, j), task_agents()[1].max_new_tokens);
      EXPECT_EQ(task_budget(1, 2, i, j), task_agents()[2].max_new_tokens);
    }
  }
  std::sort(budgets.begin(), budgets.end());
  const int median = budgets[budgets.size() / 2];
  EXPECT_GE(budgets.front(), 6);
  EXPECT_GE(median, 8);
  EXPECT_LE(median, 14);
  EXPECT_EQ(budgets.back(), task_agents()[0].max_new_tokens) << "the cap is reached";
  const size_t capped = std::count(budgets.begin(), budgets.end(), budgets.back());
  EXPECT_GT(capped, 10u);
  EXPECT_LT(capped, budgets.size() / 5);
}

}  // namespace
}  // namespace clustertwin::models::flexmarl
