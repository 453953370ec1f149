// clustertwin calibrate: fit a cluster profile to recorded traces
// (calibrators/calibrate.h) and print the fit quality.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "calibrators/calibrate.h"
#include "calibrators/device_fit.h"
#include "cli/command.h"
#include "common/file_io.h"

namespace clustertwin::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> traces;
  std::string out;
  std::string base = "localhost-cpu";
  std::string name;
  int warmup = 3;
  int drain = 2;
  int segments = 4;
  double tolerance = 0.03;
  bool collectives_from_network = false;
  std::string step_waits = "auto";
  bool json = false;
};

struct DeviceArgs {
  std::string trace;
  std::string out;
  std::string name;
  std::string dtype = "bf16";
  bool json = false;
};

Status run_calibrate_device(const DeviceArgs& a) {
  auto trace = traces::read_kernel_trace(a.trace);
  if (!trace.is_ok()) return trace.status();
  calibrators::DeviceFitOptions o;
  o.name = a.name;
  o.dtype = a.dtype;
  // The file's name, not its path: the profile is the same wherever the trace lies.
  o.trace_name = std::filesystem::path(a.trace).filename().string();
  auto fit = calibrators::fit_device_profile(*trace, o);
  if (!fit.is_ok()) return fit.status();
  const std::string yaml = calibrators::device_fit_yaml(*fit);
  auto check = cluster::parse_device_profile(yaml, a.out);
  if (!check.is_ok()) return Status::internal("the written profile does not read back: " + check.status().message());
  CT_RETURN_IF_ERROR(write_output(a.out, yaml));
  if (a.json) return write_output("-", calibrators::device_fit_json(*fit));
  std::fputs(calibrators::device_fit_report(*fit).c_str(), stdout);
  std::printf("# wrote %s\n", a.out.c_str());
  return Status::ok();
}

Status run_calibrate(const CalibrateArgs& a) {
  if (a.traces.empty()) return Status::invalid_argument("calibrate: give at least one TRACE (or: calibrate device)");
  if (a.out.empty()) return Status::invalid_argument("calibrate: --out is required");
  if (a.segments < 1 || a.segments > 16)
    return Status::invalid_argument("--segments " + std::to_string(a.segments) + ": must be in [1, 16]");
  if (!(a.tolerance > 0 && a.tolerance < 1))
    return Status::invalid_argument("--tolerance " + std::to_string(a.tolerance) + ": must be in (0, 1)");
  auto base = cluster::load_cluster_profile(a.base);
  if (!base.is_ok()) return base.status();
  calibrators::CalibrateOptions o;
  o.name = a.name;
  o.warmup = a.warmup;
  o.drain = a.drain;
  o.network.max_segments = a.segments;
  o.network.tolerance = a.tolerance;
  o.collectives_from_network = a.collectives_from_network;
  if (a.step_waits == "auto") {
    o.step_waits = calibrators::StepWaitSource::kAuto;
  } else if (a.step_waits == "none") {
    o.step_waits = calibrators::StepWaitSource::kNone;
  } else if (a.step_waits == "runs") {
    o.step_waits = calibrators::StepWaitSource::kRuns;
  } else if (a.step_waits == "benchmarks") {
    o.step_waits = calibrators::StepWaitSource::kBenchmarks;
  } else {
    return Status::invalid_argument("--step-waits " + a.step_waits + ": must be auto, none, runs or benchmarks");
  }
  auto c = calibrators::calibrate(a.traces, *base, o);
  if (!c.is_ok()) return c.status();
  auto yaml = calibrators::calibration_yaml(*c);
  if (!yaml.is_ok()) return yaml.status();
  // The profile must read back as the twin will read it.
  auto check = cluster::parse_cluster_profile(*yaml, a.out);
  if (!check.is_ok()) return Status::internal("the written profile does not read back: " + check.status().message());
  CT_RETURN_IF_ERROR(write_output(a.out, *yaml));
  if (a.json) return write_output("-", calibrators::calibration_json(*c));
  std::fputs(calibrators::calibration_report(*c).c_str(), stdout);
  std::printf("# wrote %s\n", a.out.c_str());
  return Status::ok();
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action* action) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit a cluster profile to recorded traces and write it as YAML the twin reads. A collective benchmark "
      "(`clustertwin run collectives --trace`) fits the network: per collective, message-size segments of step "
      "latency and bus bandwidth. A system's run (`clustertwin run nestpipe --trace`) fits its cost keys: latency "
      "and rate per key, pooled over every run given. Prints the fit quality: per cost key and per benchmarked "
      "size, the measured median and spread and the fit's residual");
  cmd->add_option("TRACE", a->traces, "Recorded traces (.json or .json.gz), any mix of benchmarks and runs");
  cmd->add_option("-o,--out", a->out, "The profile to write (YAML; written atomically)");
  cmd->add_option("--base", a->base, "Shipped profile name or YAML path that the fits extend")->capture_default_str();
  cmd->add_option("--name", a->name, "Name of the written profile (default: the base's)");
  cmd->add_option("--warmup", a->warmup, "Runner steps after a run's pipeline prologue left out")
      ->capture_default_str();
  cmd->add_option("--drain", a->drain, "Runner steps at a run's end left out")->capture_default_str();
  cmd->add_option("--segments", a->segments, "Most message-size segments per collective")->capture_default_str();
  cmd->add_option("--tolerance", a->tolerance,
                  "Use the fewest segments whose largest relative residual is at most this")
      ->capture_default_str();
  cmd->add_flag("--collectives-from-network", a->collectives_from_network,
                "Fit only the runs' other cost keys and leave their collectives to the profile's network (the "
                "--base's or the benchmarks' fitted collectives, else its links): for a what-if at another scale, "
                "where a small trace's collective times, its ranks' skew included, do not extrapolate");
  cmd->add_option("--step-waits", a->step_waits,
                  "auto, none, runs or benchmarks. Ranks sharing a machine's cores (a base with node_cores, as "
                  "localhost-cpu): measure a collective's wait per latency step (for its peers and for the OS to "
                  "run its threads, not CPU work), write it as collectives.OP.step_wait, and fit the runs' "
                  "collective keys without it, so that a what-if at another rank count scales the wait by the "
                  "collective's latency steps and time-shares only the CPU work. `runs`: from the runs' own "
                  "collectives (their time off the calling thread's CPU, cpu_us), at the runs' rank count, held at "
                  "others; `benchmarks`: from the collective benchmarks given, at each of their rank counts (it "
                  "overshoots); `auto`: runs where the base's ranks share cores, it has no step wait yet and the "
                  "runs record CPU times, else none (how each does: traces/data/README.md)")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the fit quality as JSON instead of tables");
  auto d = std::make_shared<DeviceArgs>();
  CLI::App* device = cmd->add_subcommand(
      "device",
      "Fit a device profile to a kernel-benchmark trace (traces/KERNELS.md) and write it as YAML that `sim "
      "flowtrain --device-profile` reads. Per curve (GEMMs by their training FLOPs, causal and full attention by "
      "sequence length) each record's efficiency is its FLOPs over its measured time over the trace's peak; the "
      "knots are those efficiencies, pooled (weighted by time) where a larger size measured lower, so the curve "
      "never falls; between knots log-linear, beyond them clamped. Prints each record's residual");
  device->add_option("TRACE", d->trace, "The kernel-benchmark trace (.json or .json.gz)")->required();
  device->add_option("-o,--out", d->out, "The device profile to write (YAML; written atomically)")->required();
  device->add_option("--name", d->name, "The profile's name (for example h200)")->required();
  device->add_option("--dtype", d->dtype, "Fit only the records of this data type")->capture_default_str();
  device->add_flag("--json", d->json, "Print the fit as JSON instead of tables");
  device->callback([d, action] {
    *action = [d] { return in_flag_words(run_calibrate_device(*d), {{"name", "--name"}}); };
  });
  CLI::App* steps = add_calibrate_steps(cmd, action);
  cmd->callback([a, action, device, steps] {
    if (device->parsed() || steps->parsed()) return;  // the subcommand set the action
    *action = [a] { return in_flag_words(run_calibrate(*a), {{"step_waits", "--step-waits"}}); };
  });
}

}  // namespace clustertwin::cli
