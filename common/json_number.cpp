#include "common/json_number.h"

#include <charconv>
#include <cmath>

#include "common/check.h"

namespace clustertwin {

void append_json_number(std::string* out, double value) {
  CT_CHECK(std::isfinite(value)) << "a JSON number must be finite, got " << value;
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  CT_CHECK(ec == std::errc()) << "to_chars failed for " << value;
  out->append(buffer, end);
}

std::string json_number(double value) {
  std::string out;
  append_json_number(&out, value);
  return out;
}

}  // namespace clustertwin
