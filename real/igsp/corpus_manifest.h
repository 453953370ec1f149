#pragma once

// A checkpoint's manifest (its meta JSON, models/torch/byte_lm.h) and the
// corpus it names: written by training (real/igsp/train.h), read back by
// evaluation, pruning and the study (the held-out text, the calibration
// sources), rewritten by `igsp relocate`. Each domain's entry is generated
// from the seed (Math, Commonsense) or the files it was read from (General,
// Code), each with its size and CRC-32, a pack's path relative to the
// checkpoint's folder.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/igsp/corpus.h"
#include "real/igsp/train_options.h"

namespace clustertwin::real::igsp {

/// The four domains' text as TrainOptions asks for it.
StatusOr<std::vector<clustertwin::models::igsp::DomainText>> training_corpus(const TrainOptions& options);

/// The manifest of a checkpoint of `options` at `step` (its loss then) trained
/// on `corpus`, as JSON text.
std::string checkpoint_manifest(const TrainOptions& options,
                                const std::vector<clustertwin::models::igsp::DomainText>& corpus, int64_t step,
                                double loss);

/// A model's options as its manifest records them (JSON text).
std::string byte_lm_options_json(const models::nets::ByteLmOptions& options);

/// The training corpus of a checkpoint trained by train_byte_lm: its
/// manifest's seed, sizes and General and Code files (a pack's entries, the
/// pack found relative to the checkpoint's folder, or files of their own),
/// checked against the manifest's sizes and CRC-32s (NotFound naming a
/// missing pack; InvalidArgument naming the first file or entry that differs
/// or is missing).
StatusOr<std::vector<clustertwin::models::igsp::DomainText>> corpus_for(const std::string& manifest_json,
                                                                        const std::string& checkpoint);

/// The manifest of checkpoint `from` as a copy written to `to` must say it:
/// each pack path (relative to the checkpoint's folder) rebased onto `to`'s
/// folder, so that a checkpoint derived from another (a pruned one) loads
/// its corpus from wherever it is written. Absolute paths are kept.
std::string manifest_for_copy(const std::string& manifest_json, const std::string& from, const std::string& to);

/// Points the manifest of `checkpoint` at other copies of its General and
/// Code text: `general_roots` and `code_roots` as TrainOptions takes them
/// (an empty list leaves that domain as it is). The text read from them must
/// be byte for byte the train and held-out text the manifest names, whose
/// files must still be there (corpus_for); InvalidArgument naming the domain
/// otherwise. The checkpoint is rewritten with the new manifest and its
/// parameters as they were: read back and compared bit for bit (Internal if
/// not).
Status relocate_corpus(const std::string& checkpoint, const std::vector<std::string>& general_roots,
                       const std::vector<std::string>& code_roots);

}  // namespace clustertwin::real::igsp
