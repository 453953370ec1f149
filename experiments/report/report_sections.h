#pragma once

// The demo report's sections, one per system, each built from the
// files its study wrote into OUT_DIR/<system>/ (experiments/*/README.md):
//
//   nestpipe   scaling.json, gpu128.json           ct_nestpipe_study
//   flexmarl   frameworks.json                     ct_flexmarl_study
//   flowtrain  study.json                          ct_flowtrain_study
//   llm        step.json, validation.json          clustertwin sim llm --json; ct_llm_study's study.json
//   igsp       study.json                          ct_igsp_study
//   sis        estimators.json, stability.json     clustertwin sis study / stability
//
// Every number in a section is read from those files; the only constants
// are the papers' published figures, each citing where it comes from. A
// missing or malformed file or field throws InputError (report_input.h).

#include <filesystem>
#include <string>
#include <vector>

namespace clustertwin::report {

/// One system's part of the page.
struct Section {
  std::string id;                      // the study's folder under OUT_DIR, and the section's anchor
  std::string title;                   // "NestPipe: nested pipelining for embedding training"
  std::vector<std::string> platforms;  // cluster profiles the study ran on, as its outputs name them
  std::string basis;                   // one line for the introduction: twin or real kernel, and its calibration
  std::string html;                    // the section's body
  /// What the section's figures rest on, each kind listed apart under the
  /// body (report.cpp): values fitted to a paper's figure, values measured
  /// (on which machine, with what), values assumed (with their reason).
  /// Plain text, one entry each.
  std::vector<std::string> fitted, measured, assumed;
};

/// The section's "what rests on what" lists (empty kinds say "none").
std::string provenance_html(const Section& section);

// The systems' sections (experiments/SYSTEM/SYSTEM_section.cpp), one per system of common/systems.def.
#define CT_SYSTEM(name, title) Section name##_section(const std::filesystem::path& out_dir);
#include "common/systems.def"
#undef CT_SYSTEM
// The numerical kernels' sections (experiments/report/igsp_section.cpp, sis_section.cpp).
Section igsp_section(const std::filesystem::path& out_dir);
Section sis_section(const std::filesystem::path& out_dir);

}  // namespace clustertwin::report
