#include "cli/command.h"

#include <cstdio>

#include "common/file_io.h"

namespace clustertwin::cli {

Status in_flag_words(const Status& status,
                     std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  return with_leading_word_replaced(status, fields);
}

Status in_sim_option_words(const Status& status) {
  return in_flag_words(
      status,
      {{"steps", "--steps"}, {"warmup_steps", "--warmup"}, {"drain_steps", "--drain"}, {"workers", "--workers"}});
}

Status write_output(const std::string& path, const std::string& text) {
  return path == "-" ? write_stdout(text) : write_file_atomically(path, text);
}

std::string system_names() {
  std::string names;
#define CT_SYSTEM(name, title) names += (names.empty() ? "" : ", ") + std::string(#name);
#include "common/systems.def"
#undef CT_SYSTEM
  return names;
}

}  // namespace clustertwin::cli
