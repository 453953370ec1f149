#include "models/cluster/device_profile.h"

#include <filesystem>

#include "common/file_io.h"
#include "models/cluster/cluster_profile_yaml.h"
#include "models/cluster/embedded_profiles.h"
#include "models/cluster/field_reader.h"

namespace clustertwin::cluster {
namespace {

// A curve's list of knots {size, efficiency} under `key`; absent and optional leaves `*out` empty.
Status read_curve(FieldReader& top, const std::string& key, FieldReader::Need need, device::EfficiencyCurve* out) {
  const ConfigNode* list = top.child(key);
  if (list == nullptr) {
    return need == FieldReader::kRequired ? top.error(key, "missing: give a list of knots {size, efficiency}")
                                          : Status::ok();
  }
  if (list->kind != ConfigNode::Kind::kList) {
    return top.error(key, "expected a list of knots {size, efficiency}, got " + list->describe());
  }
  std::vector<device::EfficiencyKnot> knots;
  for (size_t i = 0; i < list->items.size(); ++i) {
    auto knot = FieldReader::open(top.source(), top.path_of(key + "[" + std::to_string(i) + "]"), list->items[i]);
    if (!knot.is_ok()) return knot.status();
    device::EfficiencyKnot k;
    CT_RETURN_IF_ERROR(knot->number("size", FieldReader::kPositive, &k.size, FieldReader::kRequired));
    CT_RETURN_IF_ERROR(knot->number("efficiency", FieldReader::kEfficiency, &k.efficiency, FieldReader::kRequired));
    CT_RETURN_IF_ERROR(knot->finish());
    knots.push_back(k);
  }
  auto curve = device::EfficiencyCurve::make(std::move(knots), top.source() + ": field '" + top.path_of(key) + "'");
  if (!curve.is_ok()) return curve.status();
  *out = std::move(*curve);
  return Status::ok();
}

void write_curve(const std::string& key, const std::string& comment, const device::EfficiencyCurve& curve,
                 std::string* out) {
  if (curve.empty()) return;
  *out += key + ":  # " + comment + "\n";
  for (const device::EfficiencyKnot& k : curve.knots())
    *out += "  - {size: " + yaml_number(k.size) + ", efficiency: " + yaml_number(k.efficiency) + "}\n";
}

}  // namespace

std::string DeviceProfile::provenance_of(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

std::string DeviceProfile::provenance_line() const {
  std::string line = name + ": " + description + "; " + software_stack;
  const std::string date = provenance_of("date"), trace = provenance_of("trace");
  if (!date.empty()) line += "; measured " + date;
  if (!trace.empty()) line += " (" + trace + ")";
  return line;
}

StatusOr<DeviceProfile> parse_device_profile(const std::string& yaml_text, const std::string& source) {
  auto root = parse_config_yaml(yaml_text, source);
  if (!root.is_ok()) return root.status();
  if (root->kind != ConfigNode::Kind::kMap) {
    return Status::invalid_argument(source + ": a device profile is a mapping of fields (name, software_stack, " +
                                    "peak_flops, gemm, attention, ...), got " + root->describe());
  }
  auto top = FieldReader::open(source, "", *root);
  if (!top.is_ok()) return top.status();
  DeviceProfile p;
  CT_RETURN_IF_ERROR(top->text("name", &p.name, FieldReader::kRequired));
  CT_RETURN_IF_ERROR(top->text("description", &p.description, FieldReader::kRequired));
  CT_RETURN_IF_ERROR(top->text("software_stack", &p.software_stack, FieldReader::kRequired));
  auto provenance = top->section("provenance", FieldReader::kRequired);
  if (!provenance.is_ok()) return provenance.status();
  for (const std::string& key : (*provenance)->keys()) {
    std::string value;
    CT_RETURN_IF_ERROR((*provenance)->text(key, &value, FieldReader::kRequired));
    p.provenance.emplace_back(key, value);
  }
  CT_RETURN_IF_ERROR(
      top->quantity("peak_flops", Quantity::kFlopRate, FieldReader::kPositive, &p.peak_flops, FieldReader::kRequired));
  CT_RETURN_IF_ERROR(read_curve(*top, "gemm", FieldReader::kRequired, &p.gemm));
  CT_RETURN_IF_ERROR(read_curve(*top, "attention", FieldReader::kRequired, &p.attention));
  CT_RETURN_IF_ERROR(read_curve(*top, "attention_full", FieldReader::kOptional, &p.attention_full));
  CT_RETURN_IF_ERROR(top->number("decode_bandwidth_share", FieldReader::kEfficiency, &p.decode_bandwidth_share,
                                 FieldReader::kOptional));
  CT_RETURN_IF_ERROR(top->finish());
  return p;
}

StatusOr<DeviceProfile> load_device_profile(const std::string& name_or_path) {
  for (const EmbeddedProfile& profile : embedded_device_profiles()) {
    if (profile.name == name_or_path) {
      return parse_device_profile(std::string(profile.yaml), "sim/platforms/devices/" + name_or_path + ".yaml");
    }
  }
  std::error_code error;
  if (std::filesystem::exists(name_or_path, error)) {
    auto text = read_file(name_or_path);
    if (!text.is_ok()) return text.status();
    return parse_device_profile(*text, name_or_path);
  }
  if (name_or_path.find('/') != std::string::npos || ends_with(name_or_path, ".yaml") ||
      ends_with(name_or_path, ".yml")) {
    return Status::invalid_argument("device_profile " + name_or_path + ": no such file");
  }
  std::string shipped;
  for (const std::string& name : shipped_device_profile_names())
    shipped += (shipped.empty() ? "" : ", ") + name;
  return Status::invalid_argument("device_profile '" + name_or_path + "': no shipped device profile of that name (" +
                                  shipped + ") and no such file");
}

std::vector<std::string> shipped_device_profile_names() {
  std::vector<std::string> names;
  for (const EmbeddedProfile& profile : embedded_device_profiles())
    names.emplace_back(profile.name);
  return names;
}

std::string device_profile_yaml(const DeviceProfile& p, const std::string& header) {
  std::string out = header;
  out += "name: " + yaml_quoted(p.name) + "\n";
  out += "description: " + yaml_quoted(p.description) + "\n";
  out += "software_stack: " + yaml_quoted(p.software_stack) + "\n";
  out += "provenance:\n";
  for (const auto& [key, value] : p.provenance)
    out += "  " + key + ": " + yaml_quoted(value) + "\n";
  out += "peak_flops: " + yaml_number(p.peak_flops) + "  # FLOP/s; every efficiency below is a share of it\n";
  write_curve("gemm", "size: one GEMM's training FLOPs (forward + backward, 6 T K N)", p.gemm, &out);
  write_curve("attention", "size: sequence length in tokens; causal attention, forward + backward", p.attention, &out);
  write_curve("attention_full", "size: sequence length in tokens; full (non-causal) attention, forward + backward",
              p.attention_full, &out);
  if (p.decode_bandwidth_share > 0) {
    out += "decode_bandwidth_share: " + yaml_number(p.decode_bandwidth_share) +
           "  # a decode token's bytes over its time over the memory bandwidth, where bandwidth binds\n";
  }
  return out;
}

bool operator==(const DeviceProfile& a, const DeviceProfile& b) {
  return a.name == b.name && a.description == b.description && a.software_stack == b.software_stack &&
         a.provenance == b.provenance && a.peak_flops == b.peak_flops && a.gemm == b.gemm &&
         a.attention == b.attention && a.attention_full == b.attention_full &&
         a.decode_bandwidth_share == b.decode_bandwidth_share;
}

}  // namespace clustertwin::cluster
