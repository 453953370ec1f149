// One bad value per `clustertwin run` subcommand, through its library and
// through the command line: the library names the field of its arguments'
// struct and the value, the command says the flag that set it (issue 46:
// libraries speak their fields, cli/ maps them to flags). One process, no
// launcher: every value here is refused before any rendezvous.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "real/core/run_commands.h"
#include "real/flexmarl/flexmarl_command.h"
#include "real/flowtrain/flowtrain_command.h"
#include "real/nestpipe/nestpipe_command.h"
#include "tests/cli/run_command.h"

namespace clustertwin::real {
namespace {

using testing::CommandResult;
using testing::run_clustertwin;

struct Case {
  std::function<Status()> library;  // the library called with the bad value
  std::vector<std::string> flags;   // `clustertwin run ...` with the same value
  std::string field_words;          // how the library names it
  std::string flag_words;           // how the command line names it
  std::string why;                  // what both say after it
};

std::vector<Case> cases() {
  return {
      {[] {
         nestpipe::NestPipeArgs a;
         a.micro_batches = 3;  // the default batch is 64
         return nestpipe::run_nestpipe(a);
       },
       {"run", "nestpipe", "--micro-batches", "3"},
       "micro_batches 3: ",
       "--micro-batches 3: ",
       "must divide batch 64"},
      {[] {
         flexmarl::FlexMarlArgs a;
         a.load_gap = 0;
         return flexmarl::run_flexmarl(a);
       },
       {"run", "flexmarl", "--load-gap", "0"},
       "load_gap 0: ",
       "--load-gap 0: ",
       "must be > 0 (requests; with 0 every request would rebalance)"},
      {[] {
         flexmarl::FlexMarlArgs a;
         a.task = "huge";
         return flexmarl::run_flexmarl(a);
       },
       {"run", "flexmarl", "--task", "huge"},
       "task 'huge': ",
       "--task 'huge': ",
       "unknown (allowed: small, large)"},
      {[] {
         flowtrain::FlowTrainRunArgs a;
         a.global_batch = 0;
         return flowtrain::run_flowtrain(a);
       },
       {"run", "flowtrain", "--global-batch", "0"},
       "global_batch 0: ",
       "--global-batch 0: ",
       "must be >= 1"},
      // A field every run shares, named in one place (cli/run_options.h in_run_flag_words).
      {[] {
         flowtrain::FlowTrainRunArgs a;
         a.timeout_s = 0;
         return flowtrain::run_flowtrain(a);
       },
       {"run", "flowtrain", "--timeout", "0"},
       "timeout_s 0: ",
       "--timeout 0: ",
       "must be > 0"},
      {[] {
         RealArgs a;
         a.iters = 0;
         return run_collectives(a);
       },
       {"run", "collectives", "--iters", "0"},
       "iters 0: ",
       "--iters 0: ",
       "must be at least 1"},
  };
}

TEST(RunFieldWordsTest, ABadValueSpeaksItsCallersWords) {
  for (const Case& c : cases()) {
    const Status library = c.library();
    EXPECT_EQ(library.exit_code(), 2) << library.message();
    EXPECT_EQ(library.message(), c.field_words + c.why);
    const CommandResult cli = run_clustertwin(c.flags);
    EXPECT_EQ(cli.exit_code, 2) << cli.err;
    EXPECT_EQ(cli.err, "clustertwin: " + c.flag_words + c.why + "\n");
  }
}

}  // namespace
}  // namespace clustertwin::real
