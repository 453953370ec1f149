#include "calibrators/llm/steps_table.h"

#include <charconv>
#include <map>
#include <sstream>

#include "common/file_io.h"
#include "models/llm/llm_split.h"

namespace clustertwin::calibrators::llm {

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r' || quoted) {
      fields.back() += c;
    }
  }
  return fields;
}

namespace {

const char* const kRequired[] = {"workers", "tp",    "pp",     "dp",  "micro_batch", "global_batch",
                                 "hidden",  "heads", "layers", "seq", "step_ms"};

// One row's fields by column name, with messages naming the file, the row and the field.
class RowReader {
 public:
  RowReader(const std::map<std::string, size_t>& columns, const std::vector<std::string>& fields, std::string where)
      : columns_(columns), fields_(fields), where_(std::move(where)) {}

  bool has(const std::string& name) const {
    auto c = columns_.find(name);
    return c != columns_.end() && c->second < fields_.size() && !fields_[c->second].empty();
  }
  std::string text(const std::string& name, const std::string& fallback) const {
    return has(name) ? fields_[columns_.at(name)] : fallback;
  }
  Status integer(const std::string& name, int64_t minimum, int64_t* out) const {
    if (!has(name)) return Status::ok();  // required columns were checked in the header
    const std::string& v = fields_[columns_.at(name)];
    int64_t value = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (ec != std::errc() || end != v.data() + v.size() || value < minimum)
      return error(name, "'" + v + "' is not a whole number >= " + std::to_string(minimum));
    *out = value;
    return Status::ok();
  }
  Status integer(const std::string& name, int minimum, int* out) const {
    int64_t value = *out;
    CT_RETURN_IF_ERROR(integer(name, int64_t{minimum}, &value));
    *out = static_cast<int>(value);
    return Status::ok();
  }
  Status boolean(const std::string& name, bool* out) const {
    const std::string v = text(name, *out ? "true" : "false");
    if (v != "true" && v != "false" && v != "1" && v != "0") return error(name, "'" + v + "' is not true or false");
    *out = v == "true" || v == "1";
    return Status::ok();
  }
  Status positive(const std::string& name, double* out) const {
    const std::string& v = fields_[columns_.at(name)];
    std::istringstream in(v);
    double value = 0;
    if (!(in >> value) || !in.eof() || !(value > 0)) return error(name, "'" + v + "' is not a number > 0");
    *out = value;
    return Status::ok();
  }
  Status error(const std::string& name, const std::string& why) const {
    return Status::invalid_argument(where_ + ", column '" + name + "': " + why);
  }
  const std::string& where() const { return where_; }

 private:
  const std::map<std::string, size_t>& columns_;
  const std::vector<std::string>& fields_;
  std::string where_;
};

Status read_model(const RowReader& r, models::transformer::Transformer* m) {
  CT_RETURN_IF_ERROR(r.integer("hidden", int64_t{1}, &m->hidden));
  CT_RETURN_IF_ERROR(r.integer("heads", int64_t{1}, &m->heads));
  CT_RETURN_IF_ERROR(r.integer("kv_heads", int64_t{0}, &m->kv_heads));
  CT_RETURN_IF_ERROR(r.integer("ffn", int64_t{0}, &m->ffn));
  CT_RETURN_IF_ERROR(r.integer("layers", int64_t{1}, &m->layers));
  CT_RETURN_IF_ERROR(r.integer("seq", int64_t{1}, &m->seq));
  CT_RETURN_IF_ERROR(r.integer("vocab", int64_t{1}, &m->vocab));
  return r.boolean("gated_mlp", &m->gated_mlp);
}

Status read_split(const RowReader& r, models::llm::Split* s) {
  CT_RETURN_IF_ERROR(r.integer("tp", 1, &s->tp));
  CT_RETURN_IF_ERROR(r.integer("pp", 1, &s->pp));
  CT_RETURN_IF_ERROR(r.integer("dp", 1, &s->dp));
  CT_RETURN_IF_ERROR(r.integer("micro_batch", int64_t{1}, &s->micro_batch));
  CT_RETURN_IF_ERROR(r.integer("global_batch", int64_t{1}, &s->global_batch));
  CT_RETURN_IF_ERROR(r.integer("virtual_stages", 1, &s->virtual_stages));
  CT_RETURN_IF_ERROR(r.integer("zero", 0, &s->zero));
  CT_RETURN_IF_ERROR(r.boolean("sequence_parallel", &s->sequence_parallel));
  s->precision = r.text("precision", "bf16");
  s->grad_reduce = r.text("grad_reduce", "fp32");
  const std::string recompute = r.text("recompute", "full");
  auto rec = models::llm::recompute_from_name(recompute);
  if (!rec) return r.error("recompute", "'" + recompute + "' is not none, selective or full");
  s->recompute = *rec;
  const std::string schedule = r.text("schedule", "1f1b");
  auto sched = models::llm::schedule_from_name(schedule);
  if (!sched) return r.error("schedule", "'" + schedule + "' is not 1f1b, interleaved or gpipe");
  s->schedule = *sched;
  return Status::ok();
}

StatusOr<StepRow> read_row(const RowReader& r) {
  StepRow row;
  sim::llm::LlmSetup& setup = row.setup;
  setup.model = models::transformer::Transformer{};
  CT_RETURN_IF_ERROR(r.integer("workers", 1, &row.workers));
  CT_RETURN_IF_ERROR(read_model(r, &setup.model));
  CT_RETURN_IF_ERROR(read_split(r, &setup.split));
  double step_ms = 0;
  CT_RETURN_IF_ERROR(r.positive("step_ms", &step_ms));
  row.step_s = step_ms / 1e3;
  // What the twin cannot model: one line naming the row, and the field in the twin's words.
  Status split = models::llm::check_split(setup.model, setup.split, row.workers);
  if (!split.is_ok()) return Status::invalid_argument(r.where() + ": cannot be modelled: " + split.message());
  return row;
}

}  // namespace

StatusOr<std::vector<StepRow>> parse_steps_table(const std::string& text, const std::string& file,
                                                 const std::string& only_split) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return Status::invalid_argument(file + ": empty (expected a CSV header)");
  std::map<std::string, size_t> columns;
  const std::vector<std::string> header = csv_fields(line);
  for (size_t i = 0; i < header.size(); ++i) {
    if (!columns.emplace(header[i], i).second)
      return Status::invalid_argument(file + ": header: column '" + header[i] + "' given twice");
  }
  for (const char* name : kRequired) {
    if (!columns.count(name)) return Status::invalid_argument(file + ": header: no column '" + std::string(name) + "'");
  }
  if (!only_split.empty() && !columns.count("split"))
    return Status::invalid_argument(file + ": header: no column 'split' to pick the rows of split '" + only_split +
                                    "'");
  std::vector<StepRow> rows;
  int data_row = 0;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++data_row;
    const std::vector<std::string> fields = csv_fields(line);
    const std::string id = columns.count("id") && columns["id"] < fields.size() ? fields[columns["id"]] : "";
    const std::string where = file + ": row " + std::to_string(data_row) + " (line " + std::to_string(number) +
                              (id.empty() ? "" : ", '" + id + "'") + ")";
    RowReader reader(columns, fields, where);
    if (!only_split.empty() && reader.text("split", "") != only_split) continue;
    for (const char* name : kRequired) {
      if (!reader.has(name)) return reader.error(name, "empty");
    }
    auto row = read_row(reader);
    if (!row.is_ok()) return row.status();
    row->id = id.empty() ? "row " + std::to_string(data_row) : id;
    row->split = reader.text("split", "");
    row->line = number;
    rows.push_back(std::move(row).value());
  }
  if (rows.empty()) {
    return Status::invalid_argument(file + ": no rows after the header" +
                                    (only_split.empty() ? "" : " of split '" + only_split + "'"));
  }
  return rows;
}

StatusOr<std::vector<StepRow>> read_steps_table(const std::string& path, const std::string& only_split) {
  auto text = read_file(path);
  if (!text.is_ok()) return text.status();
  return parse_steps_table(*text, path, only_split);
}

}  // namespace clustertwin::calibrators::llm
