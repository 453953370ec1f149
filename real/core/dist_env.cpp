#include "real/core/dist_env.h"

#include <charconv>
#include <string_view>

namespace clustertwin::real {
namespace {

using Getenv = std::function<const char*(const char*)>;

// The four variables that say where a process sits, as one launcher names them.
struct Names {
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;
};

constexpr Names kTorchrun = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
constexpr Names kSlurm = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"};
constexpr int kDefaultPort = 29500;

Status invalid(std::string_view name, std::string_view value, std::string_view why) {
  return Status::invalid_argument(std::string(name) + "=" + std::string(value) + ": " + std::string(why));
}

// "4" -> 4. Signs, spaces and trailing text are errors: a launcher never writes them.
Status parse_number(const char* name, std::string_view text, int minimum, int* out) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text[0] < '0' || text[0] > '9' || end != text.data() + text.size()) {
    return invalid(name, text, "not a non-negative integer");
  }
  if (error != std::errc()) return invalid(name, text, "too large");
  if (value < minimum) return invalid(name, text, "must be at least " + std::to_string(minimum));
  *out = value;
  return Status::ok();
}

// The value of `name`, which must be set because `cause` is.
Status require(const Getenv& getenv, const char* name, const char* cause, const char** out) {
  *out = getenv(name);
  if (*out == nullptr) {
    return Status::invalid_argument(std::string(cause) + "=" + getenv(cause) + " is set but " + name + " is not");
  }
  return Status::ok();
}

// Slurm writes the tasks per node as "4", "4(x2)" (4 on each of 2 nodes) or
// "4,3" (node by node). The first number is this node's count when every
// node runs the same number of tasks, the only layout a training job uses.
Status parse_tasks_per_node(const char* name, std::string_view text, int* out) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0 || (digits < text.size() && text[digits] != '(' && text[digits] != ',')) {
    return invalid(name, text, "not a task count (like 4, 4(x2) or 4,4)");
  }
  Status status = parse_number(name, text.substr(0, digits), 1, out);
  return status.is_ok() ? status : invalid(name, text, "not a task count (like 4, 4(x2) or 4,4)");
}

Status check_ranges(const DistEnv& env, const Names& names, const char* const texts[4]) {
  if (env.rank >= env.world_size) {
    return invalid(names.rank, texts[0], std::string("not below ") + names.world_size + "=" + texts[1]);
  }
  if (env.local_rank >= env.local_world_size) {
    return invalid(names.local_rank, texts[2], std::string("not below ") + names.local_world_size + "=" + texts[3]);
  }
  if (env.local_world_size > env.world_size) {
    return invalid(names.local_world_size, texts[3], std::string("above ") + names.world_size + "=" + texts[1]);
  }
  return Status::ok();
}

// MASTER_ADDR and MASTER_PORT, whichever launcher set the rest.
Status read_master(const Getenv& getenv, bool addr_required, DistEnv* env) {
  if (const char* addr = getenv("MASTER_ADDR")) {
    if (*addr == '\0') return Status::invalid_argument("MASTER_ADDR is empty (give a host name or an IP address)");
    env->master_addr = addr;
  } else if (addr_required) {
    return Status::invalid_argument(
        std::string("MASTER_ADDR is not set: under Slurm (SLURM_PROCID=") + getenv("SLURM_PROCID") +
        ") it must name the first host of SLURM_JOB_NODELIST, which clustertwin does not parse; set it, e.g. "
        "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)");
  }
  env->master_port = kDefaultPort;
  if (const char* port = getenv("MASTER_PORT")) {
    int value = 0;
    if (!parse_number("MASTER_PORT", port, 1, &value).is_ok() || value > 65535) {
      return invalid("MASTER_PORT", port, "not a port number (1..65535)");
    }
    env->master_port = value;
  }
  return Status::ok();
}

StatusOr<DistEnv> read_torchrun(const Getenv& getenv) {
  DistEnv env;
  env.source = "torchrun";
  const char* texts[4] = {getenv("RANK"), nullptr, nullptr, nullptr};
  CT_RETURN_IF_ERROR(parse_number("RANK", texts[0], 0, &env.rank));
  CT_RETURN_IF_ERROR(require(getenv, "WORLD_SIZE", "RANK", &texts[1]));
  CT_RETURN_IF_ERROR(parse_number("WORLD_SIZE", texts[1], 1, &env.world_size));
  texts[2] = getenv("LOCAL_RANK");
  texts[3] = getenv("LOCAL_WORLD_SIZE");
  if (texts[2] == nullptr && texts[3] == nullptr) {
    // Set by hand on one node: every process is local.
    texts[2] = texts[0];
    texts[3] = texts[1];
  } else if (texts[2] == nullptr) {
    CT_RETURN_IF_ERROR(require(getenv, "LOCAL_RANK", "LOCAL_WORLD_SIZE", &texts[2]));
  } else {
    CT_RETURN_IF_ERROR(require(getenv, "LOCAL_WORLD_SIZE", "LOCAL_RANK", &texts[3]));
  }
  CT_RETURN_IF_ERROR(parse_number("LOCAL_RANK", texts[2], 0, &env.local_rank));
  CT_RETURN_IF_ERROR(parse_number("LOCAL_WORLD_SIZE", texts[3], 1, &env.local_world_size));
  CT_RETURN_IF_ERROR(check_ranges(env, kTorchrun, texts));
  CT_RETURN_IF_ERROR(read_master(getenv, /*addr_required=*/false, &env));
  return env;
}

StatusOr<DistEnv> read_slurm(const Getenv& getenv) {
  DistEnv env;
  env.source = "slurm";
  const char* texts[4] = {getenv("SLURM_PROCID"), nullptr, nullptr, nullptr};
  CT_RETURN_IF_ERROR(parse_number("SLURM_PROCID", texts[0], 0, &env.rank));
  CT_RETURN_IF_ERROR(require(getenv, "SLURM_NTASKS", "SLURM_PROCID", &texts[1]));
  CT_RETURN_IF_ERROR(parse_number("SLURM_NTASKS", texts[1], 1, &env.world_size));
  CT_RETURN_IF_ERROR(require(getenv, "SLURM_LOCALID", "SLURM_PROCID", &texts[2]));
  CT_RETURN_IF_ERROR(parse_number("SLURM_LOCALID", texts[2], 0, &env.local_rank));
  CT_RETURN_IF_ERROR(require(getenv, "SLURM_NTASKS_PER_NODE", "SLURM_PROCID", &texts[3]));
  CT_RETURN_IF_ERROR(parse_tasks_per_node("SLURM_NTASKS_PER_NODE", texts[3], &env.local_world_size));
  CT_RETURN_IF_ERROR(check_ranges(env, kSlurm, texts));
  CT_RETURN_IF_ERROR(read_master(getenv, /*addr_required=*/true, &env));
  return env;
}

}  // namespace

StatusOr<DistEnv> read_dist_env(const std::function<const char*(const char*)>& getenv) {
  if (getenv("RANK") != nullptr) return read_torchrun(getenv);
  if (getenv("SLURM_PROCID") != nullptr) return read_slurm(getenv);
  // A single process; a stray WORLD_SIZE would mean a launcher we misread.
  for (const char* name : {kTorchrun.world_size, kTorchrun.local_rank, kTorchrun.local_world_size}) {
    if (const char* value = getenv(name)) {
      return Status::invalid_argument(std::string(name) + "=" + value +
                                      " is set but RANK is not (set both, or neither for a single process)");
    }
  }
  DistEnv env;
  CT_RETURN_IF_ERROR(read_master(getenv, /*addr_required=*/false, &env));
  return env;
}

}  // namespace clustertwin::real
