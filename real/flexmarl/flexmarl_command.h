#pragma once

// `clustertwin run flexmarl`: FlexMARL's real executor, one rank per process.
// No torch in this header: cli/real_command.cpp includes it.
//
// Rank 0 is the controller: it holds the experience store, the load
// balancer, the agents' published weights and the host copies of swapped-out
// trainer state, and decides what every worker does next. Ranks 1..W are
// workers ("devices"): each runs whatever job the controller sends it (a
// rollout batch for an agent, a micro-batch's forward and backward, an
// optimizer step, a weight load, a state swap) and answers. The frameworks
// differ only in the controller's decisions (models/flexmarl/frameworks.h):
//
//   sync      colocated: each agent's engine on every worker (loaded when
//             its turn starts); agents answer turn by turn (a barrier
//             after each), then each agent trains in turn on all workers
//   marti     a rollout pool and a training pool (the last --trainers
//             workers): the pool rolls out turn by turn, then the agents
//             train side by side on their trainers
//   flexmarl  workers split into rollout instances (one or more per agent,
//             hierarchically load-balanced) and trainers bound to whichever
//             agent has a ready micro-batch (state swapped through the
//             controller); a micro-batch trains as soon as it is rewarded,
//             the optimizer step waits for the agent's whole batch
//   flexmarl-nobalance, flexmarl-noasync   the ablations
//
// Every framework trains on the same samples (a response depends only on the
// seed, the sample's key and the policy version), so one step's parameters
// agree across frameworks up to rounding; the store refuses any row written
// by a policy version other than the published one.
//
// On a GPU (--device cuda) the workers' policies, rollout engines, trainers
// and optimizer states are on it; a state swap is a copy between pinned host
// memory and the device, timed (the report's swap seconds, the trace's
// swap-in and swap-out events). The controller stays a host process.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "real/flexmarl/run_args.h"

namespace clustertwin::real::flexmarl {

/// This rank's part of a FlexMARL run; rank 0 prints the table (or JSON).
/// InvalidArgument (exit 2) naming the field of FlexMarlArgs and its value
/// ("load_gap 0: must be > 0 ...") before any rendezvous; Internal
/// (exit 1) when the experience store catches a version violation.
Status run_flexmarl(const FlexMarlArgs& args);

}  // namespace clustertwin::real::flexmarl
