#include "traces/kernel_trace.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/text.h"

namespace clustertwin::traces {
namespace {

using Json = nlohmann::ordered_json;  // provenance keeps the file's order

// The shape sizes each fitted kind must carry; other kinds' shapes are free.
const std::map<std::string, std::vector<std::string>>& required_sizes() {
  static const std::map<std::string, std::vector<std::string>> kSizes = {
      {"gemm", {"tokens", "in", "out"}},
      {"attention", {"seq_len", "batch", "heads", "kv_heads", "head_dim", "causal"}},
  };
  return kSizes;
}

std::string value_text(const Json& v) {
  std::string text = v.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

class RecordReader {
 public:
  RecordReader(const std::string& source, std::string path) : source_(source), path_(std::move(path)) {}
  Status error(const std::string& field, const Json& value, const std::string& why) const {
    return Status::invalid_argument(source_ + ": " + path_ + "." + field + " " + value_text(value) + ": " + why);
  }
  Status missing(const std::string& field) const {
    return Status::invalid_argument(source_ + ": " + path_ + "." + field + ": missing");
  }
  Status text(const Json& object, const std::string& field, bool required, std::string* out) const {
    if (!object.contains(field)) return required ? missing(field) : Status::ok();
    if (!object[field].is_string()) return error(field, object[field], "must be a string");
    *out = object[field].get<std::string>();
    if (required && out->empty()) return error(field, object[field], "must not be empty");
    return Status::ok();
  }
  // A finite number > 0 (or >= 0 when `zero_ok`).
  Status positive(const Json& object, const std::string& field, bool required, bool zero_ok, double* out) const {
    if (!object.contains(field)) return required ? missing(field) : Status::ok();
    const Json& v = object[field];
    if (!v.is_number()) return error(field, v, "must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (!zero_ok && x == 0))
      return error(field, v, zero_ok ? "must be >= 0" : "must be > 0");
    *out = x;
    return Status::ok();
  }

 private:
  const std::string& source_;
  std::string path_;
};

Status check_flops(const RecordReader& r, const KernelRecord& k, const Json& record, double expected,
                   const std::string& formula) {
  if (std::abs(k.flops - expected) > 1e-3 * expected) {
    return r.error("flops", record["flops"],
                   "disagrees with the shape: " + formula + " = " + format_number("%.6g", expected));
  }
  return Status::ok();
}

Status read_record(const std::string& source, size_t index, const Json& record, KernelRecord* k) {
  const std::string path = "records[" + std::to_string(index) + "]";
  RecordReader r(source, path);
  if (!record.is_object()) {
    return Status::invalid_argument(source + ": " + path + " " + value_text(record) + ": must be an object");
  }
  CT_RETURN_IF_ERROR(r.text(record, "kind", true, &k->kind));
  CT_RETURN_IF_ERROR(r.text(record, "name", false, &k->name));
  CT_RETURN_IF_ERROR(r.text(record, "dtype", true, &k->dtype));
  CT_RETURN_IF_ERROR(r.text(record, "pass", false, &k->pass));
  CT_RETURN_IF_ERROR(r.text(record, "note", false, &k->note));
  CT_RETURN_IF_ERROR(r.positive(record, "time_s", true, false, &k->time_s));
  CT_RETURN_IF_ERROR(r.positive(record, "flops", false, true, &k->flops));
  CT_RETURN_IF_ERROR(r.positive(record, "bytes", false, true, &k->bytes));
  if (!(k->flops > 0) && !(k->bytes > 0)) return r.missing("flops");  // a record measures work of some kind
  if (record.contains("iterations")) {
    const Json& v = record["iterations"];
    if (!v.is_number_integer() || v.get<long long>() < 1)
      return r.error("iterations", v, "must be a whole number >= 1");
    k->iterations = v.get<int>();
  }
  if (!record.contains("shape")) return r.missing("shape");
  const Json& shape = record["shape"];
  if (!shape.is_object()) return r.error("shape", shape, "must be an object of sizes");
  for (const auto& [key, v] : shape.items()) {
    if (v.is_boolean()) {
      k->shape[key] = v.get<bool>() ? 1 : 0;
    } else if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0) {
      k->shape[key] = v.get<double>();
    } else {
      return r.error("shape." + key, v, "must be a number > 0 or a boolean");
    }
  }
  const auto sizes = required_sizes().find(k->kind);
  if (sizes == required_sizes().end()) return Status::ok();
  for (const std::string& key : sizes->second) {
    if (!shape.contains(key)) return r.missing("shape." + key);
  }
  if (!(k->flops > 0)) return r.missing("flops");
  if (k->kind == "gemm") {
    return check_flops(r, *k, record, gemm_training_flops(k->dim("tokens"), k->dim("in"), k->dim("out")),
                       "6 x tokens x in x out");
  }
  return check_flops(r, *k, record,
                     attention_training_flops(k->dim("seq_len"), k->dim("batch"), k->dim("heads"), k->dim("head_dim"),
                                              k->dim("causal") != 0),
                     k->dim("causal") != 0 ? "3 x 2 x batch x heads x seq_len^2 x head_dim (causal)"
                                           : "3 x 4 x batch x heads x seq_len^2 x head_dim");
}

// The document is an object of this format and version.
Status check_kernel_trace_format(const Json& doc, const std::string& source) {
  if (!doc.is_object()) {
    return Status::invalid_argument(source +
                                    ": a kernel-benchmark trace is a JSON object (format, version, "
                                    "provenance, peak_flops, records), got " +
                                    value_text(doc));
  }
  if (!doc.contains("format"))
    return Status::invalid_argument(source + ": format: missing (\"" + std::string(kKernelTraceFormat) + "\")");
  if (!doc["format"].is_string() || doc["format"].get<std::string>() != kKernelTraceFormat) {
    return Status::invalid_argument(source + ": format " + value_text(doc["format"]) + ": not a kernel-benchmark " +
                                    "trace (expected \"" + kKernelTraceFormat + "\")");
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<long long>() != kKernelTraceVersion) {
    return Status::invalid_argument(source + ": version " +
                                    (doc.contains("version") ? value_text(doc["version"]) : "(missing)") +
                                    ": this reader knows version " + std::to_string(kKernelTraceVersion));
  }
  return Status::ok();
}

// The provenance: strings, with device, software_stack, date and method among them.
Status read_provenance(const Json& doc, const std::string& source, KernelTrace* t) {
  if (!doc.contains("provenance") || !doc["provenance"].is_object()) {
    return Status::invalid_argument(source +
                                    ": provenance: missing (an object: device, driver, torch, cuda, "
                                    "software_stack, date, method)");
  }
  for (const auto& [key, v] : doc["provenance"].items()) {
    if (!v.is_string()) {
      return Status::invalid_argument(source + ": provenance." + key + " " + value_text(v) + ": must be a string");
    }
    t->provenance.emplace_back(key, v.get<std::string>());
  }
  for (const char* key : {"device", "software_stack", "date", "method"}) {
    if (t->provenance_of(key).empty()) {
      return Status::invalid_argument(source + ": provenance." + key + ": missing (every profile fitted from the " +
                                      "trace repeats it)");
    }
  }
  return Status::ok();
}

// Top-level field `field`, a number > 0 (absent: an error when `required`, else `out` kept).
Status positive_field(const Json& doc, const std::string& source, const char* field, bool required, double* out) {
  if (!doc.contains(field)) {
    return required ? Status::invalid_argument(source + ": " + field + ": missing") : Status::ok();
  }
  const Json& v = doc[field];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    return Status::invalid_argument(source + ": " + field + " " + value_text(v) + ": must be a number > 0");
  }
  *out = v.get<double>();
  return Status::ok();
}

}  // namespace

std::string KernelTrace::provenance_of(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

double gemm_training_flops(double tokens, double in, double out) {
  return 6 * tokens * in * out;
}

double attention_training_flops(double seq_len, double batch, double heads, double head_dim, bool causal) {
  const double forward = 4 * batch * heads * seq_len * seq_len * head_dim;
  return 3 * (causal ? forward / 2 : forward);
}

StatusOr<KernelTrace> parse_kernel_trace(const std::string& text, const std::string& source) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return Status::invalid_argument(source + ": not valid JSON at byte " + std::to_string(e.byte) + "");
  } catch (const Json::exception& e) {  // a number beyond a double ("1e99999")
    return Status::invalid_argument(source + ": not valid JSON: a number out of range");
  }
  CT_RETURN_IF_ERROR(check_kernel_trace_format(doc, source));
  KernelTrace t;
  t.source = source;
  CT_RETURN_IF_ERROR(read_provenance(doc, source, &t));
  CT_RETURN_IF_ERROR(positive_field(doc, source, "peak_flops", true, &t.peak_flops));
  CT_RETURN_IF_ERROR(positive_field(doc, source, "memory_bandwidth", false, &t.memory_bandwidth));
  if (!doc.contains("records") || !doc["records"].is_array()) {
    return Status::invalid_argument(source + ": records: missing (a list of measured kernels)");
  }
  const Json& records = doc["records"];
  for (size_t i = 0; i < records.size(); ++i) {
    KernelRecord k;
    CT_RETURN_IF_ERROR(read_record(source, i, records[i], &k));
    t.records.push_back(std::move(k));
  }
  if (t.records.empty()) return Status::invalid_argument(source + ": records []: no measured kernel");
  return t;
}

StatusOr<KernelTrace> read_kernel_trace(const std::string& path) {
  auto text = read_file(path);
  if (!text.is_ok()) return text.status();
  return parse_kernel_trace(*text, path);
}

}  // namespace clustertwin::traces
