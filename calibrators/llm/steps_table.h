#pragma once

// A table of measured training steps of dense transformers: what `clustertwin
// calibrate steps` fits the LLM twin to and what experiments/llm predicts.
// CSV with a header; the columns by name, in any order:
//
//   required   workers,tp,pp,dp,micro_batch,global_batch,hidden,heads,layers,seq,step_ms
//   optional   vocab (51,200), recompute (full: none|selective|full), schedule (1f1b: 1f1b|interleaved|gpipe),
//              virtual_stages (1), kv_heads (heads), ffn (4 x hidden), gated_mlp (false), precision (bf16:
//              bf16|fp16|fp8), sequence_parallel (false), zero (0), grad_reduce (fp32: fp32|bf16), id (the
//              row's number), split (fit|test)
//
// Other columns are ignored. Fields may be quoted ("a, b"). A row the twin
// cannot model (tp x pp x dp not the workers, heads or layers that do not
// divide, an unknown schedule) is refused with one line naming the file,
// the row and the field.

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/llm/llm_twin.h"

namespace clustertwin::calibrators::llm {

struct StepRow {
  std::string id;     // the id column, or "row N"
  std::string split;  // the split column, "" when absent
  int line = 0;       // in the file, 1-based (the header is line 1)
  int workers = 0;
  sim::llm::LlmSetup setup;
  double step_s = 0;  // measured
};

/// Parses a table's text; `file` names it in messages. With `only_split`,
/// the rows whose split column is another are skipped unread (a held-out
/// row the twin cannot model does not stop a fit that leaves it out).
StatusOr<std::vector<StepRow>> parse_steps_table(const std::string& text, const std::string& file,
                                                 const std::string& only_split = "");

/// Reads and parses a table file.
StatusOr<std::vector<StepRow>> read_steps_table(const std::string& path, const std::string& only_split = "");

/// The fields of one CSV line (RFC 4180 quotes; no line breaks inside a field).
std::vector<std::string> csv_fields(const std::string& line);

}  // namespace clustertwin::calibrators::llm
