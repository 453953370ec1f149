#include "models/igsp/corpus.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <random>
#include <string_view>

#include "common/file_io.h"
#include "common/hash.h"
#include "common/tar.h"

namespace clustertwin::models::igsp {
namespace {

// Deterministic draws on every platform: the engine is specified exactly, and
// the mapping to a range is ours (std's distributions are not portable).
class Draw {
 public:
  explicit Draw(uint64_t seed) : engine_(splitmix64(seed)) {}
  int below(int n) { return static_cast<int>(engine_() % static_cast<uint64_t>(n)); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(static_cast<int>(v.size()))];
  }

 private:
  std::mt19937_64 engine_;
};

// The fixed world of the Commonsense domain.
struct Animal {
  std::string name, sound, home;
  int legs;
};
const std::vector<Animal>& animals() {
  static const std::vector<Animal> v = {
      {"cat", "meows", "house", 4},   {"dog", "barks", "kennel", 4},    {"cow", "moos", "barn", 4},
      {"duck", "quacks", "pond", 2},  {"horse", "neighs", "stable", 4}, {"owl", "hoots", "tree", 2},
      {"frog", "croaks", "marsh", 4}, {"sheep", "bleats", "meadow", 4}, {"lion", "roars", "savanna", 4},
      {"bee", "buzzes", "hive", 6},   {"snake", "hisses", "burrow", 0}, {"hen", "clucks", "coop", 2}};
  return v;
}
struct Pair {
  std::string a, b;
};
const std::vector<Pair>& tools() {  // tool, what it is used to do
  static const std::vector<Pair> v = {{"hammer", "drive nails"}, {"saw", "cut wood"},
                                      {"knife", "slice bread"},  {"pen", "write letters"},
                                      {"broom", "sweep floors"}, {"spoon", "eat soup"},
                                      {"needle", "sew cloth"},   {"ladder", "reach high shelves"},
                                      {"key", "open locks"},     {"umbrella", "keep off rain"},
                                      {"shovel", "dig holes"},   {"scissors", "cut paper"}};
  return v;
}
const std::vector<Pair>& colours() {  // thing, colour (each colour once, so questions have one answer)
  static const std::vector<Pair> v = {{"grass", "green"},     {"the clear sky", "blue"},   {"snow", "white"},
                                      {"coal", "black"},      {"a ripe banana", "yellow"}, {"a tomato", "red"},
                                      {"chocolate", "brown"}, {"a plum", "purple"},        {"an orange", "orange"},
                                      {"ash", "grey"}};
  return v;
}
const std::vector<Pair>& places() {  // thing, where you get it
  static const std::vector<Pair> v = {
      {"bread", "bakery"},       {"books", "library"},     {"medicine", "pharmacy"},
      {"a train", "station"},    {"a flight", "airport"},  {"cash", "bank"},
      {"stamps", "post office"}, {"vegetables", "market"}, {"petrol", "filling station"}};
  return v;
}

const std::vector<std::string>& names() {
  static const std::vector<std::string> v = {"Ana", "Ben", "Carl", "Dina", "Eva", "Femi", "Gus", "Hana", "Ivo", "Jun"};
  return v;
}
const std::vector<std::string>& items() {
  static const std::vector<std::string> v = {"apples", "marbles", "stamps", "coins", "pencils", "shells", "cards"};
  return v;
}

// Four options: the right one and three others of the same kind, shuffled.
ChoiceItem choice(Draw& d, std::string question, const std::vector<std::string>& pool, const std::string& right) {
  std::vector<std::string> options = {right};
  while (options.size() < 4) {
    const std::string& o = d.pick(pool);
    if (std::find(options.begin(), options.end(), o) == options.end()) options.push_back(o);
  }
  for (int i = 3; i > 0; --i)
    std::swap(options[i], options[d.below(i + 1)]);
  ChoiceItem item;
  item.question = std::move(question);
  item.answer = static_cast<int>(std::find(options.begin(), options.end(), right) - options.begin());
  item.options = std::move(options);
  return item;
}

template <class T, class F>
std::vector<std::string> column(const std::vector<T>& v, F f) {
  std::vector<std::string> out;
  for (const T& x : v)
    out.push_back(f(x));
  return out;
}

// One training statement or question about the fixed world (the held-out templates are commonsense_items').
std::string commonsense_line(Draw& d) {
  const std::vector<std::string> animal_names = column(animals(), [](const Animal& a) { return a.name; });
  switch (d.below(9)) {
    case 0: {
      const Animal& a = d.pick(animals());
      return "The " + a.name + " " + a.sound + ".";
    }
    case 1: {
      const Animal& a = d.pick(animals());
      return "A " + a.name + " lives in a " + a.home + ".";
    }
    case 2: {
      const Animal& a = d.pick(animals());
      return "A " + a.name + " has " + std::to_string(a.legs) + " legs.";
    }
    case 3: {
      const Pair& t = d.pick(tools());
      return "A " + t.a + " is used to " + t.b + ".";
    }
    case 4: {
      const Pair& t = d.pick(tools());
      return "People use a " + t.a + " to " + t.b + ".";
    }
    case 5: {
      const Pair& c = d.pick(colours());
      return "The colour of " + c.a + " is " + c.b + ".";
    }
    case 6: {
      const Pair& p = d.pick(places());
      return "You get " + p.a + " at the " + p.b + ".";
    }
    case 7: {
      const Animal& a = d.pick(animals());
      const ChoiceItem q = choice(d, "Question: Which animal " + a.sound + "?", animal_names, a.name);
      std::string line = q.question;
      for (size_t i = 0; i < q.options.size(); ++i)
        line += " " + std::string(1, static_cast<char>('A' + i)) + ") " + q.options[i];
      return line + " Answer: " + std::string(1, static_cast<char>('A' + q.answer)) + ") " + a.name + ".";
    }
    default: {
      const Pair& t = d.pick(tools());
      const ChoiceItem q = choice(d, "Question: What is a " + t.a + " used for?",
                                  column(tools(), [](const Pair& p) { return p.b; }), t.b);
      std::string line = q.question;
      for (size_t i = 0; i < q.options.size(); ++i)
        line += " " + std::string(1, static_cast<char>('A' + i)) + ") " + q.options[i];
      return line + " Answer: " + std::string(1, static_cast<char>('A' + q.answer)) + ") " + t.b + ".";
    }
  }
}

std::string math_line(Draw& d) {
  if (d.below(3) > 0) {
    // Arithmetic on operands below 100 (multiplication: the second below 10), held-out pairs skipped.
    for (;;) {
      const int kind = d.below(3);
      const char op = "+-x"[kind];
      int a = d.below(100), b = kind == 2 ? d.below(10) : d.below(100);
      if (kind == 1 && b > a) std::swap(a, b);
      if (heldout_pair(a, b, op)) continue;
      const int c = kind == 0 ? a + b : kind == 1 ? a - b : a * b;
      return std::to_string(a) + " " + op + " " + std::to_string(b) + " = " + std::to_string(c);
    }
  }
  const std::string& who = d.pick(names());
  std::string other = d.pick(names());
  while (other == who)
    other = d.pick(names());
  const std::string& what = d.pick(items());
  const int a = 5 + d.below(40), b = 1 + d.below(20), c = 1 + d.below(a);
  std::string text = who + " has " + std::to_string(a) + " " + what + ". " + who + " buys " + std::to_string(b) +
                     " more. Then " + who + " gives " + std::to_string(c) + " to " + other + ".";
  int total = a + b - c;
  if (d.below(2) == 0) {
    const int k = 2 + d.below(2);
    text += " Then " + who + "'s stock is multiplied by " + std::to_string(k) + ".";
    total *= k;
  }
  return text + " How many " + what + " does " + who + " have now? Answer: " + std::to_string(total) + ".";
}

template <class F>
std::string lines_until(uint64_t bytes, F next) {
  std::string out;
  while (out.size() < bytes) {
    out += next();
    out += '\n';
  }
  out.resize(bytes);
  return out;
}

bool printable_text(const std::string& text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') continue;
    if (c < 32 || c > 126) return false;
  }
  return true;
}

bool wanted(Domain domain, const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (domain == Domain::kCode) {
    const std::string ext = path.extension().string();
    return ext == ".h" || ext == ".hpp";
  }
  if (path.parent_path().filename() == "common-licenses") return true;
  return name == "README" || name == "README.gz" || name == "README.txt" || name == "README.md";
}

}  // namespace

const char* domain_name(Domain domain) {
  switch (domain) {
    case Domain::kGeneral:
      return "general";
    case Domain::kCode:
      return "code";
    case Domain::kMath:
      return "math";
    case Domain::kCommonsense:
      return "commonsense";
  }
  return "?";
}

bool heldout_pair(int a, int b, char op) {
  return splitmix64((static_cast<uint64_t>(a) << 32) ^ (static_cast<uint64_t>(b) << 8) ^ static_cast<uint64_t>(op)) %
             10 ==
         0;
}

std::string shipped_corpus_dir() {
  // An installed program finds the packs where CtInstall.cmake puts models/igsp/data: its prefix's share folder.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::filesystem::path installed =
        std::filesystem::path(std::string(self, static_cast<size_t>(n))).parent_path() /
        CT_IGSP_INSTALLED_DATA_FROM_BIN / "corpus";
    std::error_code ec;
    if (std::filesystem::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return std::string(CT_IGSP_SOURCE_DATA_DIR) + "/corpus";
}

std::vector<std::string> default_roots(Domain domain) {
  return {shipped_corpus_dir() + (domain == Domain::kCode ? "/code.tar.gz" : "/general.tar.gz")};
}

StatusOr<DomainText> system_text(Domain domain, const std::vector<std::string>& roots, uint64_t max_bytes) {
  if (domain != Domain::kGeneral && domain != Domain::kCode) {
    return Status::invalid_argument(std::string("system_text: ") + domain_name(domain) +
                                    " is generated, not read from files");
  }
  // A file to take: on disk (read when its turn comes) or a pack's entry (read with its pack).
  struct Candidate {
    std::filesystem::path path;
    std::string pack;
    std::optional<std::string> text;
  };
  std::vector<Candidate> candidates;
  for (const std::string& root : roots) {
    const size_t first = candidates.size();
    std::error_code ec;
    if (std::filesystem::is_regular_file(root, ec) && is_tar_name(root)) {
      StatusOr<std::vector<TarEntry>> entries = read_tar(root);
      if (!entries.is_ok()) return entries.status();
      for (TarEntry& e : *entries) {
        if (wanted(domain, e.name)) candidates.push_back({e.name, root, std::move(e.data)});
      }
    } else if (std::filesystem::is_regular_file(root, ec)) {  // a file named directly (a manifest's)
      if (wanted(domain, root)) candidates.push_back({root, "", std::nullopt});
    } else {
      std::filesystem::recursive_directory_iterator it(root, std::filesystem::directory_options::skip_permission_denied,
                                                       ec);
      for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
        if (wanted(domain, it->path())) candidates.push_back({it->path(), "", std::nullopt});
      }
    }
    std::sort(candidates.begin() + static_cast<std::ptrdiff_t>(first), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  }
  DomainText out;
  out.domain = domain;
  for (Candidate& c : candidates) {
    if (out.train.size() + out.heldout.size() >= max_bytes) break;
    StatusOr<std::string> text = c.text ? StatusOr<std::string>(std::move(*c.text)) : read_file(c.path.string());
    if (!text.is_ok() || !printable_text(*text)) continue;
    CorpusFile f;
    f.pack = c.pack;
    f.path = c.path.string();
    f.bytes = text->size();
    f.crc32 =
        static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(text->data()), static_cast<uInt>(text->size())));
    // Every 10th file used is held out.
    std::string& into = out.files.size() % 10 == 9 ? out.heldout : out.train;
    into += *text;
    into += '\n';
    out.files.push_back(f);
  }
  if (out.files.empty()) {
    std::string list;
    for (const std::string& r : roots)
      list += (list.empty() ? "" : ", ") + r;
    return Status::not_found(std::string(domain_name(domain)) + " corpus: no readable text file under " + list);
  }
  return out;
}

DomainText math_text(uint64_t seed, uint64_t bytes) {
  Draw d(seed ^ 0x6d617468);
  DomainText out;
  out.domain = Domain::kMath;
  out.train = lines_until(bytes, [&] { return math_line(d); });
  out.heldout = lines_until(bytes / 10, [&] { return math_line(d); });
  return out;
}

DomainText commonsense_text(uint64_t seed, uint64_t bytes) {
  Draw d(seed ^ 0x636f6d6d);
  DomainText out;
  out.domain = Domain::kCommonsense;
  out.train = lines_until(bytes, [&] { return commonsense_line(d); });
  out.heldout = lines_until(bytes / 10, [&] { return commonsense_line(d); });
  return out;
}

std::vector<ArithmeticItem> arithmetic_items(uint64_t seed, int count) {
  Draw d(seed ^ 0x61726974);
  std::vector<ArithmeticItem> out;
  while (static_cast<int>(out.size()) < count) {
    const int kind = d.below(3);
    const char op = "+-x"[kind];
    int a = d.below(100), b = kind == 2 ? d.below(10) : d.below(100);
    if (kind == 1 && b > a) std::swap(a, b);
    if (!heldout_pair(a, b, op)) continue;
    const int c = kind == 0 ? a + b : kind == 1 ? a - b : a * b;
    out.push_back({std::to_string(a) + " " + op + " " + std::to_string(b) + " =", std::to_string(c)});
  }
  return out;
}

std::vector<ChoiceItem> commonsense_items(uint64_t seed, int count) {
  Draw d(seed ^ 0x6974656d);
  std::vector<ChoiceItem> out;
  const std::vector<std::string> colour_names = column(colours(), [](const Pair& p) { return p.b; });
  const std::vector<std::string> place_names = column(places(), [](const Pair& p) { return p.b; });
  while (static_cast<int>(out.size()) < count) {
    // Recall: a statement the training text makes, its last words to choose among the same kind's.
    const std::vector<std::string> homes = column(animals(), [](const Animal& a) { return a.home; });
    const std::vector<std::string> uses = column(tools(), [](const Pair& p) { return p.b; });
    switch (d.below(4)) {
      case 0: {
        const Animal& a = d.pick(animals());
        out.push_back(choice(d, "A " + a.name + " lives in a", homes, a.home));
        break;
      }
      case 1: {
        const Pair& t = d.pick(tools());
        out.push_back(choice(d, "A " + t.a + " is used to", uses, t.b));
        break;
      }
      case 2: {
        const Pair& c = d.pick(colours());
        out.push_back(choice(d, "The colour of " + c.a + " is", colour_names, c.b));
        break;
      }
      default: {
        const Pair& p = d.pick(places());
        out.push_back(choice(d, "You get " + p.a + " at the", place_names, p.b));
        break;
      }
    }
    for (std::string& o : out.back().options)
      o = " " + o;
  }
  return out;
}

}  // namespace clustertwin::models::igsp
