#pragma once

// One whole simulation of a benchmark case in a process of its own
// (sim/core/isolated.h), so that the peak memory of the simulation it
// starts is that case's alone (RUSAGE_CHILDREN keeps the largest child ever
// waited for): its wall time, that peak, and the figures it returns.

#include <sys/resource.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <vector>

#include "sim/core/isolated.h"

namespace clustertwin::sim {

struct IsolatedRun {
  double wall_s = 0;
  double peak_rss_mb = 0;
  std::vector<double> figures;  // what the case returned, in its order
};

inline StatusOr<IsolatedRun> run_measured(const std::function<StatusOr<std::vector<double>>()>& simulate) {
  auto out = run_isolated([&]() -> StatusOr<std::string> {
    const auto start = std::chrono::steady_clock::now();
    auto figures = simulate();
    if (!figures.is_ok()) return figures.status();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    std::ostringstream text;
    text.precision(17);
    text << wall << " " << static_cast<double>(usage.ru_maxrss) / 1024.0;
    for (double f : *figures)
      text << " " << f;
    return text.str();
  });
  if (!out.is_ok()) return out.status();
  IsolatedRun run;
  std::istringstream in(*out);
  in >> run.wall_s >> run.peak_rss_mb;
  for (double f; in >> f;)
    run.figures.push_back(f);
  return run;
}

}  // namespace clustertwin::sim
