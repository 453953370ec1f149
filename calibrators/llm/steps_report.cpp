// How `calibrate steps` prints its fit: a table, or JSON.

#include <cmath>

#include "calibrators/llm/steps_fit.h"
#include "common/json.h"
#include "common/text.h"

namespace clustertwin::calibrators::llm {
namespace {

struct Summary {
  double mean = 0, worst = 0;
};
Summary summary(const std::vector<double>& errors) {
  Summary s;
  for (double e : errors) {
    s.mean += std::abs(e) / static_cast<double>(errors.size());
    s.worst = std::max(s.worst, std::abs(e));
  }
  return s;
}

std::string value_text(const std::string& name, double value) {
  return name == "overhead" ? format_number("%.2f", value * 1e6) + " us per layer and pass"
                            : format_number("%.4f", value) + " of peak";
}

std::string percent_text(double x) {
  return format_number("%+.2f", 100 * x) + "%";
}

}  // namespace

std::string steps_fit_report(const std::vector<StepRow>& rows, const StepsFit& fit) {
  std::string out = "# fitted (" + std::to_string(fit.iterations) + " iterations, " + std::to_string(fit.simulations) +
                    " simulations):\n";
  for (const std::string& name : fit.fitted)
    out += "#   " + name + ": " + value_text(name, fit.values.at(name)) + "\n";
  out += "# not fitted: the network (the profile's links), elementwise bytes and memory bandwidth, the Adam step\n";
  out += "row  id                                 GPUs  measured ms  predicted ms  residual  leave-one-out\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string id = rows[i].id.substr(0, 34);
    id.resize(34, ' ');
    char line[200];
    std::snprintf(line, sizeof line, "%3zu  %s %5d  %11.1f  %12.1f  %8s  %13s\n", i + 1, id.c_str(), rows[i].workers,
                  rows[i].step_s * 1e3, fit.predicted_s[i] * 1e3, percent_text(fit.residual[i]).c_str(),
                  percent_text(fit.leave_one_out[i]).c_str());
    out += line;
  }
  const Summary res = summary(fit.residual), loo = summary(fit.leave_one_out);
  out += "# residual |mean| " + format_number("%.2f", 100 * res.mean) + "%, worst " +
         format_number("%.2f", 100 * res.worst) + "%; leave-one-out |mean| " + format_number("%.2f", 100 * loo.mean) +
         "%, worst " + format_number("%.2f", 100 * loo.worst) + "%\n";
  return out;
}

std::string steps_fit_json(const std::vector<StepRow>& rows, const StepsFit& fit) {
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (const std::string& name : fit.fitted)
    values[name] = fit.values.at(name);
  nlohmann::ordered_json table = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    table.push_back({{"id", rows[i].id},
                     {"workers", rows[i].workers},
                     {"measured_s", rows[i].step_s},
                     {"predicted_s", fit.predicted_s[i]},
                     {"residual", fit.residual[i]},
                     {"leave_one_out", fit.leave_one_out[i]}});
  }
  const Summary res = summary(fit.residual), loo = summary(fit.leave_one_out);
  nlohmann::ordered_json doc{{"fitted", values},
                             {"iterations", fit.iterations},
                             {"simulations", fit.simulations},
                             {"rows", table},
                             {"residual_mean_abs", res.mean},
                             {"residual_worst", res.worst},
                             {"leave_one_out_mean_abs", loo.mean},
                             {"leave_one_out_worst", loo.worst}};
  return json_document(doc, 2);
}

}  // namespace clustertwin::calibrators::llm
