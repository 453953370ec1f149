// The LLM twin's section of the demo report (report_sections.h; its entry in common/systems.def).

#include "experiments/report/report_sections.h"

namespace clustertwin::report {

Section llm_section(const std::filesystem::path&) {
  Section s;
  s.id = "llm";
  s.title = "Dense transformer training at scale";
  s.basis = "no study in the demo yet";
  s.html = "<p>The LLM twin's validation against published measurements: experiments/llm/README.md.</p>";
  return s;
}

}  // namespace clustertwin::report
