// The LLM twin's section of the demo report (report_sections.h; its entry in common/systems.def): the
// demo's what-if step (OUT/llm/step.json, `clustertwin sim llm --json`), where its efficiencies come from, and
// the held-out error of experiments/llm's study (OUT/llm/validation.json, the study's checked-in study.json).

#include <string>
#include <vector>

#include "experiments/report/report_html.h"
#include "experiments/report/report_input.h"
#include "experiments/report/report_sections.h"

namespace clustertwin::report {

Section llm_section(const std::filesystem::path& out) {
  JsonFile step_file(out / "llm" / "step.json");
  const Field step = step_file.root();
  const Field split = step["split"], breakdown = step["breakdown"], memory = step["memory_gib"];
  const double step_s = step["step_s"].number();
  JsonFile validation_file(out / "llm" / "validation.json");  // experiments/llm/results/study.json
  const Field summary = validation_file.root()["summary"];
  const Field fit = summary["fit (fitted)"], test = summary["test (fitted)"];
  auto share = [&](const char* key) {
    return number(breakdown[key].number(), 3) + " s (" + number(100 * breakdown[key].number() / step_s, 1) + "%)";
  };
  Section s;
  s.id = "llm";
  s.title = "Dense LLM training: GPT-3 175B on 1,024 H100s";
  s.platforms = {step["platform"].string()};
  s.basis = "twin; kernel efficiencies fitted to published steps of 64 GPUs or fewer";
  s.html = paragraph("One training step of GPT-3 175B (" + number(step["model"]["parameters"].number() / 1e9, 1) +
                     " B parameters, global batch " + std::to_string(split["global_batch"].integer()) +
                     " sequences of " + std::to_string(step["model"]["seq"].integer()) + " tokens) on " +
                     std::to_string(step["workers"].integer()) + " GPUs, split as `clustertwin plan llm` chose: tp " +
                     std::to_string(split["tp"].integer()) + ", pp " + std::to_string(split["pp"].integer()) + ", dp " +
                     std::to_string(split["dp"].integer()) + ", " + split["schedule"].string() + " with " +
                     std::to_string(split["virtual_stages"].integer()) + " virtual stages, recompute " +
                     split["recompute"].string() + ", the distributed optimizer.") +
           table({"figure", "twin"}, {{"step", number(step_s, 3) + " s"},
                                      {"MFU", number(100 * step["mfu"].number(), 1) + "%"},
                                      {"tokens/s", number(step["tokens_per_s"].number(), 0)},
                                      {"compute", share("compute_s")},
                                      {"exposed TP", share("exposed_tp_s")},
                                      {"pipeline bubble", share("bubble_s")},
                                      {"exposed DP", share("exposed_dp_s")},
                                      {"optimizer", share("optimizer_s")},
                                      {"memory per GPU", number(memory["total"].number(), 1) + " of " +
                                                             number(memory["capacity"].number(), 1) + " GiB"}}) +
           paragraph("How far to trust it: fitted on the " + std::to_string(fit["rows"].integer()) +
                     " published steps set aside for fitting, the twin predicts the " +
                     std::to_string(test["rows"].integer()) + " published steps it was not fitted on at " +
                     number(100 * test["mean_abs_error"].number(), 1) + "% mean error, worst " +
                     number(100 * test["worst_abs_error"].number(), 1) +
                     "% (experiments/llm/README.md: the table and the plot; its study, not part of the demo, wrote "
                     "validation.json).");
  s.fitted = {
      "GEMM and attention shares of peak and a per-layer overhead, fitted by experiments/llm's study to the "
      "published steps marked fit in experiments/llm/measurements.csv (experiments/llm/results/"
      "h100-dgx-fitted.yaml; " +
      step["rates"].string() + ")"};
  s.assumed = {"elementwise bytes per token and layer, Adam's bytes per parameter (models/transformer/stack_cost.h)",
               "the network's links at their datasheet rates (sim/platforms/h100-dgx.yaml)"};
  return s;
}

}  // namespace clustertwin::report
