#include "tests/fuzz/fuzz_targets.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string_view>

#include "common/check.h"
#include "common/file_io.h"
#include "common/state_dump.h"
#include "common/text.h"
#include "models/cluster/cluster_profile.h"
#include "models/cluster/device_profile.h"
#include "models/plan/import/chakra_plan.h"
#include "models/plan/plan_json.h"
#include "models/plan/plan_validator.h"
#include "real/core/checkpoint.h"
#include "traces/chakra/chakra_trace.h"
#include "traces/json_cursor.h"
#include "traces/kernel_trace.h"
#include "traces/validator.h"

namespace clustertwin::fuzz {
namespace {

std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own for the targets that read files.
const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::temp_directory_path() / ("ct_fuzz_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

void check_user_error(const Status& status, const char* target) {
  if (status.is_ok()) return;
  // The message may hold a newline of the input (a key, a name): the command line prints every message through
  // on_one_line (cli/main.cpp, OnOneLineTest), so the user reads one line whatever it holds.
  CT_CHECK(status.exit_code() == 2) << target
                                    << ": bad input must be a user error (exit 2): " << on_one_line(status.message());
}

int fuzz_trace(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  traces::JsonCursor cursor(text, "fuzz.json");
  for (int guard = 0; guard < (1 << 22); ++guard) {
    const traces::JsonCursor::Token t = cursor.next();
    if (t == traces::JsonCursor::Token::kEnd || t == traces::JsonCursor::Token::kError) break;
  }
  check_user_error(traces::validate_trace_text(text, "fuzz.json", nullptr), "trace");
  return 0;
}

int fuzz_plan_json(const uint8_t* data, size_t size) {
  auto plan = models::plan_from_json(text_of(data, size), "fuzz.json");
  check_user_error(plan.status(), "plan json");
  if (plan.is_ok()) check_user_error(models::validate_plan_for_world(*plan, "fuzz.json", 8, 8), "plan json (world)");
  return 0;
}

int fuzz_profile_yaml(const uint8_t* data, size_t size) {
  check_user_error(cluster::parse_cluster_profile(text_of(data, size), "fuzz.yaml").status(), "profile yaml");
  return 0;
}

int fuzz_device_yaml(const uint8_t* data, size_t size) {
  check_user_error(cluster::parse_device_profile(text_of(data, size), "fuzz.yaml").status(), "device yaml");
  return 0;
}

int fuzz_chakra_et(const uint8_t* data, size_t size) {
  const std::string bytes = text_of(data, size);
  auto et = traces::chakra::parse_et(bytes, "fuzz.0.et");
  check_user_error(et.status(), "chakra et");
  if (et.is_ok()) {
    std::vector<models::ChakraInput> inputs{{"fuzz.0.et", std::move(*et)}};
    check_user_error(models::plan_from_chakra(inputs, {}).status(), "chakra et (plan)");
  }
  // The same bytes as --comm-groups' JSON.
  check_user_error(models::parse_comm_groups(bytes, "fuzz.json").status(), "chakra comm groups");
  return 0;
}

int fuzz_kernel_trace(const uint8_t* data, size_t size) {
  check_user_error(traces::parse_kernel_trace(text_of(data, size), "fuzz.json").status(), "kernel trace");
  return 0;
}

int fuzz_state_dump(const uint8_t* data, size_t size) {
  check_user_error(decode_state_dump(text_of(data, size), "rank-0.bin").status(), "state dump");
  return 0;
}

// The bytes as the manifest of DIR/step-000006 beside a one-rank file, resumed by a run of its identity.
int fuzz_checkpoint_manifest(const uint8_t* data, size_t size) {
  static std::atomic<int> calls{0};
  const std::string dir = scratch_dir() + "/ckpt" + std::to_string(calls++ % 4);
  const std::string step_dir = real::checkpoint_step_dir(dir, 6);
  std::filesystem::create_directories(step_dir);
  CT_CHECK(write_file_atomically(step_dir + "/rank-0.bin", "state").is_ok());
  CT_CHECK(write_file_atomically(step_dir + "/manifest.json", text_of(data, size)).is_ok());
  real::CheckpointIdentity identity;
  identity.system = "nestpipe";
  identity.world_size = 1;
  identity.kind_field = "variant";
  identity.kind = "dbp";
  identity.config = {{"model", "dlrm-small"}, {"lr", "0.1"}};
  auto resume = real::find_resume_point(dir, identity, 0);
  if (!resume.is_ok() && resume.status().code() != Status::Code::kNotFound)
    check_user_error(resume.status(), "checkpoint manifest");
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace clustertwin::fuzz
