#pragma once

// The commands that need libtorch (the real executors and the IGSP and SIS
// kernels) live in a second program, clustertwin-torch, installed beside
// clustertwin: loading libtorch and the ~280 libraries it pulls in takes
// ~1.7 s on a laptop, which every twin, plan, trace and calibrate command
// would otherwise pay. `clustertwin` lists these commands in its help and,
// when one is asked for, executes clustertwin-torch with the same arguments
// (same process, same exit code). Their one-line descriptions live here,
// used by both programs.

#include <string_view>

namespace clustertwin::cli {

struct TorchCommand {
  const char* name;
  const char* description;
};

inline constexpr TorchCommand kTorchCommands[] = {
    {"eval",
     "Score a ByteLm checkpoint per capability dimension: General and Code perplexity on held-out text, Math "
     "exact match on held-out arithmetic, Commonsense multiple-choice accuracy"},
    {"igsp", "The IGSP study: calibration data for SparseGPT pruning, per capability"},
    {"prune",
     "Prune a ByteLm checkpoint (from `clustertwin igsp train`) layer by layer with SparseGPT, Wanda or magnitude "
     "on a calibration set drawn from its training domains, and write the pruned checkpoint"},
    {"run",
     "Run for real, one rank per process: start with 'clustertwin launch --nproc N -- run ...', torchrun or srun "
     "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT or the SLURM_* variables)"},
    {"sis", "SIS, selective importance sampling: the exact-gradient estimator study and the GRPO stability study"},
};

/// The description of torch command `name` ("" if it is not one).
constexpr const char* torch_command_description(std::string_view name) {
  for (const TorchCommand& c : kTorchCommands) {
    if (name == c.name) return c.description;
  }
  return "";
}

/// The program that runs the torch commands: clustertwin-torch in the
/// directory of the running clustertwin (CT_TORCH_PROGRAM overrides it).
inline constexpr char kTorchProgramName[] = "clustertwin-torch";

}  // namespace clustertwin::cli
