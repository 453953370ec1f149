// The stub system's section of the demo report: it has no study.

#include "experiments/report/report_sections.h"

namespace clustertwin::report {

Section stub_section(const std::filesystem::path&) {
  Section s;
  s.id = "stub";
  s.title = "Stub: a system of one registry line";
  s.basis = "no study";
  s.html = "<p>The stub system has no study.</p>";
  return s;
}

}  // namespace clustertwin::report
