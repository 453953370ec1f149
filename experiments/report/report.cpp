// ct_report: the demo's one page. Reads what each system's headline study
// wrote into OUT_DIR/<system>/ (scripts/demo.sh runs them) and writes
// OUT_DIR/report/index.html, each system's figures beside its paper's.
//
//   OUT_DIR/nestpipe/  scaling.json, gpu128.json, *.png  --+
//   OUT_DIR/flexmarl/  frameworks.json, *.png               |
//   OUT_DIR/flowtrain/ study.json, *.png                    +--> OUT_DIR/report/index.html
//   OUT_DIR/igsp/      study.json, *.png                    |    (PNGs linked as ../<system>/*.png)
//   OUT_DIR/sis/       estimators.json, stability.json  ----+
//
// Exit codes: 0 written; 2 a bad command line or a missing or malformed
// input (one line on stderr naming the file and the field); 1 the page
// could not be written.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/report/report_html.h"
#include "experiments/report/report_input.h"
#include "experiments/report/report_sections.h"

namespace {

namespace fs = std::filesystem;
using namespace clustertwin::report;

constexpr const char* kUsage =
    "usage: ct_report OUT_DIR\n"
    "\n"
    "Writes OUT_DIR/report/index.html: for each of the five systems (NestPipe, FlexMARL, FlowTrain, IGSP, SIS)\n"
    "a table 'figure | paper | clustertwin | difference' and the study's plots, from the files its study wrote\n"
    "into OUT_DIR/<system>/ (scripts/demo.sh runs the studies, then this):\n"
    "\n"
    "  nestpipe/scaling.json, gpu128.json      build/experiments/ct_nestpipe_study OUT_DIR/nestpipe\n"
    "  flexmarl/frameworks.json                build/experiments/ct_flexmarl_study OUT_DIR/flexmarl\n"
    "  flowtrain/study.json                    build/experiments/ct_flowtrain_study OUT_DIR/flowtrain\n"
    "  igsp/study.json                         build/experiments/ct_igsp_study --out OUT_DIR/igsp\n"
    "  sis/estimators.json, stability.json     clustertwin sis study|stability --out OUT_DIR/sis\n"
    "\n"
    "PNG plots (drawn by the studies when gnuplot is installed) are linked, not copied. The page is written\n"
    "atomically (a temporary file in OUT_DIR/report, then renamed).\n"
    "\n"
    "Exit status: 0 written; 2 bad arguments, or an input missing or malformed (stderr names the file and the\n"
    "field); 1 the page could not be written.\n";

/// The page could not be written; what() names the path and the reason.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `text` to a temporary file beside `path`, then renames it over
// `path`: a reader sees the old page or the new one, never half of one.
void write_atomically(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw OutputError(path.parent_path().string() + ": cannot create the folder (" + ec.message() + ")");
  const fs::path temp = path.parent_path() / ("." + path.filename().string() + ".tmp");
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) throw OutputError(temp.string() + ": cannot open for writing (" + std::strerror(errno) + ")");
    file << text;
    file.flush();
    if (!file) {
      fs::remove(temp, ec);
      throw OutputError(temp.string() + ": cannot write (" + std::strerror(errno) + ")");
    }
  }
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw OutputError(path.string() + ": cannot rename " + temp.filename().string() + " to it (" + ec.message() + ")");
  }
}

std::string introduction(const std::vector<Section>& sections) {
  std::string html =
      "<h1>clustertwin: five ML-systems papers, reproduced</h1>\n"
      "<p>clustertwin implements five recent ML-systems papers. NestPipe, FlexMARL and FlowTrain run in a "
      "<em>twin</em>: SimGrid executes each system's step plan on a modelled cluster (a <em>cluster profile</em>: "
      "devices, links, collectives) of any size, so a study at 1,536 workers takes seconds on a laptop; each twin is "
      "calibrated as its section says, and real libtorch executors check it against recorded runs. IGSP and SIS "
      "run as real numerical kernels on this machine's CPU.</p>\n"
      "<p>Each section puts the paper's published figures beside what clustertwin computed in this run. Every "
      "clustertwin number on this page is read from the files the studies wrote next to this report; the paper's "
      "figures come from the papers' abstracts and published tables.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const Section& s : sections) {
    std::string platforms;
    for (const std::string& p : s.platforms)
      platforms += (platforms.empty() ? "" : ", ") + p;
    rows.push_back({s.title, platforms.empty() ? "this machine" : platforms, s.basis});
  }
  html += table({"system", "cluster profile", "how the figures are obtained"}, rows);
  html += "<p>Sections:";
  for (const Section& s : sections)
    html += " <a href=\"#" + escape(s.id) + "\">" + escape(s.id) + "</a>";
  return html + "</p>\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    const std::string why = args.empty()      ? "give OUT_DIR"
                            : args.size() > 1 ? "expected one argument (OUT_DIR), got " + std::to_string(args.size())
                            : args[0].empty() ? "OUT_DIR is empty"
                                              : "unknown option " + args[0];
    std::fprintf(stderr, "ct_report: %s (usage: ct_report OUT_DIR; --help explains)\n", why.c_str());
    return 2;
  }
  const fs::path out = args[0];
  std::error_code ec;
  if (!fs::is_directory(out, ec)) {
    std::fprintf(stderr, "ct_report: %s: not a folder (run scripts/demo.sh, or the studies, into it first)\n",
                 out.c_str());
    return 2;
  }
  try {
    std::vector<Section> sections;
#define CT_SYSTEM(name, title) sections.push_back(name##_section(out));
#include "common/systems.def"
#undef CT_SYSTEM
    sections.push_back(igsp_section(out));
    sections.push_back(sis_section(out));
    std::string body = introduction(sections);
    for (const Section& s : sections)
      body += s.html + provenance_html(s);
    const fs::path page_path = out / "report" / "index.html";
    write_atomically(page_path, page("clustertwin: the papers' figures and the reproduction", body));
    std::printf("%s\n", page_path.c_str());
  } catch (const InputError& e) {
    std::fprintf(stderr, "ct_report: %s\n", e.what());
    return 2;
  } catch (const OutputError& e) {
    std::fprintf(stderr, "ct_report: %s\n", e.what());
    return 1;
  }
  return 0;
}
