#pragma once

// The four capability domains of the IGSP study at this machine's scale, as
// text a byte-level model trains on and held-out items it is scored on
// (../shared/papers/igsp.md, "A CPU-scale reproduction"):
//
//   General      English prose: licence texts and package READMEs of Debian 12
//   Code         C++ headers (PyTorch's ATen)
//   Math         generated arithmetic and multi-step word problems
//   Commonsense  generated facts and relations about a small fixed world, with multiple-choice questions
//
// Math and Commonsense are generated from a seed, byte for byte the same on
// any machine. General and Code are read from files in sorted path order:
// by default from the packs the repository ships (models/igsp/data/corpus:
// a snapshot of those Debian files, with their sources and licences), so
// that no machine needs the files themselves; the manifest (path, size,
// CRC-32) says exactly which, so a run can tell whether it read the same text.
//
// Held-out arithmetic never appears in training text: operand pairs are split
// by a hash. Commonsense items test recall of the facts the training text
// states: a statement's last words to pick among four of the same kind, a
// multiple-choice form the training text never uses for that statement.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clustertwin::models::igsp {

enum class Domain { kGeneral, kCode, kMath, kCommonsense };
inline constexpr Domain kDomains[] = {Domain::kGeneral, Domain::kCode, Domain::kMath, Domain::kCommonsense};

/// "general", "code", "math", "commonsense".
const char* domain_name(Domain domain);

/// A file a domain's text came from.
struct CorpusFile {
  std::string pack;    // the pack (.tar or .tar.gz) it is an entry of, as given; empty: a file of its own
  std::string path;    // the entry's name in the pack, or the file's path
  uint64_t bytes = 0;  // as read (after gunzip for .gz)
  uint32_t crc32 = 0;  // of those bytes
};

/// One domain's text: what the model trains on, held-out text (General and
/// Code: perplexity), and the files it came from.
struct DomainText {
  Domain domain = Domain::kGeneral;
  std::string train;
  std::string heldout;
  std::vector<CorpusFile> files;
};

/// General or Code from files: each of `roots` in turn is a folder (the
/// files under it), a pack (a ustar archive, .tar or .tar.gz: its entries as
/// stored, named as in the archive) or a file. Of those, the ones whose
/// names match the domain (General: the files of a common-licenses folder
/// and README files, plain or gzipped; Code: .h and .hpp) and that are
/// printable ASCII text are taken, each root's in sorted path order, until
/// `max_bytes`; every 10th file taken is held out. NotFound when no file
/// qualifies; a pack that is not a readable ustar archive is read_tar's error.
StatusOr<DomainText> system_text(Domain domain, const std::vector<std::string>& roots, uint64_t max_bytes);

/// The default roots: the shipped pack of the domain (General:
/// general.tar.gz, Code: code.tar.gz, in shipped_corpus_dir()).
std::vector<std::string> default_roots(Domain domain);

/// The folder of the shipped packs: share/clustertwin/igsp/corpus beside
/// an installed program, when it exists there; else the source tree's
/// models/igsp/data/corpus, as the build knew it.
std::string shipped_corpus_dir();

/// Math: "37 + 48 = 85" lines (+, -, x on operands below 100) and word
/// problems of two or three steps with their answers, `bytes` long; operand
/// pairs held out for evaluation (arithmetic_items) never appear.
DomainText math_text(uint64_t seed, uint64_t bytes);

/// Commonsense: statements of the fixed world's facts in several phrasings,
/// and multiple-choice questions on them with the answer, `bytes` long.
DomainText commonsense_text(uint64_t seed, uint64_t bytes);

/// A held-out arithmetic item: the model greedily completes `prompt`
/// ("53 + 29 =") and is right when its digits equal `answer` ("82").
struct ArithmeticItem {
  std::string prompt;
  std::string answer;
};
std::vector<ArithmeticItem> arithmetic_items(uint64_t seed, int count);

/// A held-out multiple-choice item: the option whose bytes the model finds
/// likeliest after `question` is its choice.
struct ChoiceItem {
  std::string question;
  std::vector<std::string> options;
  int answer = 0;
};
std::vector<ChoiceItem> commonsense_items(uint64_t seed, int count);

/// Whether an arithmetic operand pair is held out (a hash split, ~10%).
bool heldout_pair(int a, int b, char op);

}  // namespace clustertwin::models::igsp
