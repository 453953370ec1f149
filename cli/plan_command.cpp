// clustertwin plan SYSTEM: capacity planning with the twin. The smallest
// configuration (workers, variant or mode or framework, split) that meets a
// throughput target, found by a search per configuration
// (sim/core/capacity_search.h), with its predicted step time and efficiency
// and the runner-ups. The systems' sides: cli/nestpipe/plan.cpp,
// cli/flowtrain/plan.cpp, cli/flexmarl/plan.cpp.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "cli/plan.h"
#include "common/file_io.h"
#include "common/gnuplot.h"
#include "common/progress.h"
#include "common/text.h"

namespace clustertwin::cli {

void add_plan_options(CLI::App* cmd, PlanOptions* o, const std::string& target_help, const std::string& platform_help) {
  cmd->add_option("--target-throughput", o->target, target_help)->required();
  cmd->add_option("--min-efficiency", o->min_efficiency,
                  "Least per-worker throughput against the configuration's smallest count, in [0, 1] (0: no bound)")
      ->capture_default_str();
  cmd->add_option("--platform", o->platform, platform_help)->capture_default_str();
  cmd->add_option("--max-workers", o->max_workers, "Most workers (devices) to consider (default: the platform's)");
  cmd->add_option("--runner-ups", o->runner_ups, "Runner-up configurations to search to the end")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the answer as JSON");
  cmd->add_option("--parallel", o->parallel, "Simulations run at once (default: cores)")->check(CLI::Range(1, 256));
  cmd->add_option("--plot", o->plot,
                  "Also draw every simulated point to this PNG (with gnuplot): throughput against workers per "
                  "configuration, estimates hollow and exact runs filled, the target and the answer");
}

namespace {

// A string for a gnuplot double-quoted literal.
std::string gnuplot_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The --plot script: each configuration's simulated points (throughput against workers; estimates hollow, exact
// runs filled), the target and the answer, drawn to `png`.
std::string plan_gnuplot_script(const PlanOptions& o, const PlanSystem& s, const sim::CapacityAnswer& answer,
                                const std::string& png) {
  static constexpr const char* kColours[] = {"#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3",
                                             "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"};
  constexpr int kColourCount = sizeof(kColours) / sizeof(kColours[0]);
  std::string g = "set terminal pngcairo size 960,560 font 'sans,10'\n";
  g += "set output " + gnuplot_quoted(png) + "\n";
  g += "set termoption noenhanced\n";
  g += "set title " +
       gnuplot_quoted("clustertwin plan " + s.system + " on " + s.platform + ": target " + with_thousands(o.target) +
                      " " + s.unit + " (hollow: estimate, filled: exact run)") +
       "\n";
  g += "set xlabel " + gnuplot_quoted(s.noun) + "\nset ylabel " + gnuplot_quoted(s.unit) + "\n";
  g += "set grid\nset key inside right bottom box opaque\nset xrange [0:*]\nset yrange [0:*]\nset format y '%.0s%c'\n";
  // Per family: every point (workers, throughput, exact), and the line through one point per count, exact first.
  std::map<int, std::string> points, line;
  std::map<int, std::map<int, sim::CapacityPoint>> best;
  for (const sim::CapacityPoint& p : answer.points) {
    points[p.family] +=
        std::to_string(p.workers) + " " + format_number("%.17g", p.throughput) + " " + (p.exact ? "1" : "0") + "\n";
    auto& at = best[p.family];
    if (!at.count(p.workers) || p.exact) at[p.workers] = p;
  }
  for (const auto& [f, counts] : best) {
    for (const auto& [w, p] : counts)
      line[f] += std::to_string(w) + " " + format_number("%.17g", p.throughput) + "\n";
  }
  for (const auto& [f, text] : points) {
    g += "$points" + std::to_string(f) + " << EOD\n" + text + "EOD\n";
    g += "$line" + std::to_string(f) + " << EOD\n" + line[f] + "EOD\n";
  }
  if (answer.feasible()) {
    const sim::CapacityPoint& a = answer.families.front().answer;
    g += "set label 1 " +
         gnuplot_quoted("answer: " + s.families[a.family] + " at " + with_thousands(a.workers) + " " + s.noun) +
         " at " + std::to_string(a.workers) + "," + format_number("%.17g", a.throughput) +
         (2 * a.workers < s.ladder.back() ? " left point pt 4 ps 2.5 lc rgb 'black' offset 1.5,1.2\n"
                                          : " right point pt 4 ps 2.5 lc rgb 'black' offset -1.5,1.2\n");
  }
  std::string plot;
  for (const auto& [f, text] : points) {
    const std::string colour = std::string("lc rgb '") + kColours[f % kColourCount] + "'";
    const std::string n = std::to_string(f);
    if (!plot.empty()) plot += ", \\\n  ";
    plot += "$line" + n + " using 1:2 with lines " + colour + " title " + gnuplot_quoted(s.families[f]) + ", \\\n  ";
    plot += "$points" + n + " using 1:($3 == 0 ? $2 : NaN) with points pt 6 ps 1.2 " + colour + " notitle, \\\n  ";
    plot += "$points" + n + " using 1:($3 == 1 ? $2 : NaN) with points pt 7 ps 1.2 " + colour + " notitle";
  }
  if (!plot.empty()) plot += ", \\\n  ";
  plot += format_number("%.17g", o.target) + " with lines dt 2 lw 1.5 lc rgb 'black' title 'target'";
  g += "plot " + plot + "\n";
  return g;
}

// The search's question: the system's configurations and counts, the target and the progress line.
sim::CapacityQuery capacity_query(const PlanOptions& o, const PlanSystem& s,
                                  std::chrono::steady_clock::time_point started) {
  sim::CapacityQuery q;
  q.families = s.families;
  q.ladder = s.ladder;
  q.fits = s.fits;
  q.target_throughput = o.target;
  q.min_efficiency = o.min_efficiency;
  q.keep = 1 + o.runner_ups;
  q.noun = s.noun;
  const std::string system = s.system;
  q.progress = [started, system](int round, int evaluated) {
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    show_progress(false, "plan %s: round %d, %d points simulated, %.0f s", system.c_str(), round, evaluated, sec);
  };
  return q;
}

// The search's answer, as JSON or as the table: the answer, the runner-ups
// and the configurations that do not meet the target.
class PlanReport {
 public:
  PlanReport(const PlanOptions& o, const PlanSystem& s, const sim::CapacityAnswer& answer, double wall)
      : o_(o),
        s_(s),
        answer_(answer),
        families_(answer.families),
        wall_(wall),
        step_unit_(s.step_in_ms ? "ms" : "s"),
        step_scale_(s.step_in_ms ? 1e3 : 1) {}

  Status write_json() const {
    nlohmann::ordered_json j;
    j["system"] = s_.system;
    j["platform"] = s_.platform;
    for (const auto& [key, value] : s_.facts.items())
      j[key] = value;
    j["target_" + s_.unit_key] = o_.target;
    j["min_efficiency"] = o_.min_efficiency;
    j["efficiency_reference"] = s_.fits ? "each configuration's smallest count that fits" : "the first count";
    j[std::string(counted()) + "_counts"] = {
        {"first", s_.ladder.front()}, {"last", s_.ladder.back()}, {"count", s_.ladder.size()}};
    j["simulated"] = answer_.evaluated;
    j["exact_runs"] = answer_.exact;
    j["rounds"] = answer_.rounds;
    j["space"] = answer_.space;
    j["wall_s"] = wall_;
    if (!o_.plot.empty()) j["plot"] = o_.plot;
    j["answer"] = nullptr;
    j["runner_ups"] = nlohmann::ordered_json::array();
    j["not_meeting"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < families_.size(); ++i) {
      const sim::CapacityFamilyResult& r = families_[i];
      if (!r.feasible()) {
        j["not_meeting"].push_back(not_meeting_json(r));
        continue;
      }
      auto p = point_json(r.answer);
      if (i == 0) {
        if (r.has_below) p["below"] = point_json(r.below);
        p["confirm"] = s_.confirm(r.family, r.answer.workers);
        j["answer"] = p;
      } else {
        j["runner_ups"].push_back(p);
      }
    }
    j["points"] = nlohmann::ordered_json::array();
    for (const sim::CapacityPoint& p : answer_.points)
      j["points"].push_back(point_json(p));
    return write_output("-", j.dump(1) + "\n");
  }

  void print_table() const {
    print_header();
    print_answer();
    print_runner_ups();
    print_not_meeting();
    if (!o_.plot.empty()) std::printf("\nplot: %s (every simulated point)\n", o_.plot.c_str());
  }

 private:
  // "worker" or "device": what the ladder counts, singular.
  const char* counted() const { return s_.noun == "workers" ? "worker" : "device"; }

  nlohmann::ordered_json point_json(const sim::CapacityPoint& p) const {
    nlohmann::ordered_json j = {{"configuration", s_.families[p.family]}};
    if (s_.describe) s_.describe(p.family, j);
    if (!p.detail.empty()) j["detail"] = p.detail;
    j[s_.noun] = p.workers;
    j[std::string("step_") + step_unit_] = p.step_s * step_scale_;
    j[s_.unit_key] = p.throughput;
    j["efficiency"] = p.efficiency;
    j["exact"] = p.exact;
    return j;
  }

  nlohmann::ordered_json not_meeting_json(const sim::CapacityFamilyResult& r) const {
    static constexpr const char* kKinds[] = {"meets", "too_few", "efficiency_too_low", "outranked", "no_fit"};
    nlohmann::ordered_json p = {
        {"configuration", s_.families[r.family]}, {"reason", kKinds[static_cast<int>(r.kind)]}, {"why_not", r.why_not}};
    if (r.kind != sim::CapacityFamilyResult::Kind::kNoFit) p["last_simulated"] = point_json(r.answer);
    if (r.kind == sim::CapacityFamilyResult::Kind::kTooFew || r.kind == sim::CapacityFamilyResult::Kind::kOutranked)
      p["min_" + s_.noun] = r.min_workers;
    return p;
  }

  void print_header() const {
    std::printf("# clustertwin plan %s: %s\n", s_.system.c_str(), s_.title.c_str());
    std::printf("# target %s %s%s; efficiency: per-%s throughput against %s\n", with_thousands(o_.target).c_str(),
                s_.unit.c_str(),
                o_.min_efficiency > 0
                    ? (", efficiency at least " + format_number("%.1f", 100 * o_.min_efficiency) + "%").c_str()
                    : "",
                counted(),
                s_.fits
                    ? "the same configuration at its smallest count that fits"
                    : ("one node (" + std::to_string(s_.ladder.front()) + " " + s_.noun + ") of the same configuration")
                          .c_str());
    std::printf(
        "# searched %zu configurations x %zu %s counts (%s to %s, one node apart): %d of %d points "
        "simulated in %d rounds, %.1f s\n\n",
        s_.families.size(), s_.ladder.size(), counted(), with_thousands(s_.ladder.front()).c_str(),
        with_thousands(s_.ladder.back()).c_str(), answer_.evaluated, answer_.space, answer_.rounds, wall_);
  }

  void print_answer() const {
    if (!answer_.feasible()) {
      std::printf("no configuration meets the target within %s %s\n", with_thousands(s_.ladder.back()).c_str(),
                  s_.noun.c_str());
      return;
    }
    const sim::CapacityFamilyResult& best = families_.front();
    std::printf("answer: %s at %s %s%s\n", s_.families[best.family].c_str(),
                with_thousands(best.answer.workers).c_str(), s_.noun.c_str(),
                best.answer.detail.empty() ? "" : (" (" + best.answer.detail + ")").c_str());
    std::printf("  step %.1f %s, %s %s, efficiency %.1f%%\n", best.answer.step_s * step_scale_, step_unit_,
                with_thousands(best.answer.throughput).c_str(), s_.unit.c_str(), 100 * best.answer.efficiency);
    if (best.has_below) {
      std::printf("  at %s %s: %s %s, short of the target\n", with_thousands(best.below.workers).c_str(),
                  s_.noun.c_str(), with_thousands(best.below.throughput).c_str(), s_.unit.c_str());
    }
    std::printf("  confirm: %s\n", s_.confirm(best.family, best.answer.workers).c_str());
  }

  void print_runner_ups() const {
    bool header = false;
    for (size_t i = 1; i < families_.size() && families_[i].feasible(); ++i) {
      if (!header) {
        std::printf("\nrunner-ups (each configuration's fewest %s; an estimate is %s):\n", s_.noun.c_str(),
                    s_.estimate.c_str());
        std::printf("  %-34s %8s %10s %12s %11s %9s%s\n", "configuration", s_.noun.c_str(),
                    (std::string("step ") + step_unit_).c_str(), s_.unit.c_str(), "efficiency", "from",
                    s_.detail_name.empty() ? "" : ("  " + s_.detail_name).c_str());
        header = true;
      }
      const sim::CapacityPoint& p = families_[i].answer;
      std::printf("  %-34s %8s %10.1f %12s %10.1f%% %9s%s\n", s_.families[p.family].c_str(),
                  with_thousands(p.workers).c_str(), p.step_s * step_scale_, with_thousands(p.throughput).c_str(),
                  100 * p.efficiency, p.exact ? "exact" : "estimate",
                  p.detail.empty() ? "" : ("  " + p.detail).c_str());
    }
  }

  void print_not_meeting() const {
    bool header = false;
    for (const sim::CapacityFamilyResult& r : families_) {
      if (r.feasible()) continue;
      if (!header) {
        std::printf("\nnot among the answers:\n");
        header = true;
      }
      std::printf("  %-34s %s\n", s_.families[r.family].c_str(), r.why_not.c_str());
    }
  }

  const PlanOptions& o_;
  const PlanSystem& s_;
  const sim::CapacityAnswer& answer_;
  const std::vector<sim::CapacityFamilyResult>& families_;
  const double wall_;
  const char* const step_unit_;
  const double step_scale_;
};

}  // namespace

Status check_plan_target(const PlanOptions& o) {
  return in_flag_words(sim::check_capacity_target(o.target, o.min_efficiency),
                       {{"target_throughput", "--target-throughput"}, {"min_efficiency", "--min-efficiency"}});
}

Status check_plan_options(PlanOptions* o, int devices, const std::string& platform_name) {
  CT_RETURN_IF_ERROR(check_plan_target(*o));
  if (o->runner_ups < 0) {
    return Status::invalid_argument("--runner-ups " + std::to_string(o->runner_ups) + ": must be at least 0");
  }
  if (o->max_workers == 0) o->max_workers = devices;
  if (o->max_workers < 1 || o->max_workers > devices) {
    return Status::invalid_argument("--max-workers " + std::to_string(o->max_workers) + ": must be in [1, " +
                                    std::to_string(devices) + "] (the devices of " + platform_name + ")");
  }
  if (!o->plot.empty()) {
    if (!ends_with(o->plot, ".png")) return Status::invalid_argument("--plot " + o->plot + ": must end in .png");
    if (!gnuplot_installed()) {
      return Status::invalid_argument("--plot " + o->plot +
                                      ": gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)");
    }
    // The place must take a file before the search runs, not after.
    auto probe = AtomicOutputFile::create(o->plot);
    if (!probe.is_ok()) return Status::invalid_argument("--plot " + o->plot + ": cannot write there");
  }
  return Status::ok();
}

Status run_plan(const PlanOptions& o, const PlanSystem& s, std::chrono::steady_clock::time_point started) {
  auto answer = sim::search_capacity(capacity_query(o, s, started), s.evaluate);
  end_progress();
  if (!answer.is_ok()) return answer.status();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!o.plot.empty()) {
    CT_RETURN_IF_ERROR(draw_png_with_gnuplot(
        o.plot, [&](const std::string& output) { return plan_gnuplot_script(o, s, *answer, output); }));
  }
  const PlanReport report(o, s, *answer, wall);
  if (o.json) {
    CT_RETURN_IF_ERROR(report.write_json());
  } else {
    report.print_table();
  }
  if (!answer->feasible()) {
    return Status::check_failed("plan " + s.system + ": no configuration meets " + with_thousands(o.target) + " " +
                                s.unit + " within " + with_thousands(s.ladder.back()) + " " + s.noun +
                                (o.min_efficiency > 0 ? " at the efficiency asked" : ""));
  }
  return Status::ok();
}

void add_plan_command(CLI::App& app, Action* action) {
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Capacity planning with the twin: the smallest configuration (workers, variant or mode or framework, split) "
      "that meets a throughput target, with the predicted step time, efficiency and the runner-ups. A search over "
      "worker counts one node apart (sim/core/capacity_search.h): each configuration's per-worker throughput bounds "
      "the fewest workers that can meet the target, each miss tightens the bound, and configurations that cannot "
      "rank are dropped; a few rounds of simulations, not every point. The answer's count one step down is "
      "simulated too. `plan mix` asks the same of several jobs sharing one cluster. Exit code 3 when nothing meets "
      "the target.");
  plan->require_subcommand(1, 1);
#define CT_SYSTEM(name, title) add_plan_##name(plan, action);
#include "common/systems.def"
#undef CT_SYSTEM
  add_plan_mix(plan, action);
}

}  // namespace clustertwin::cli
