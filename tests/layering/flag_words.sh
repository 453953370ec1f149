#!/usr/bin/env bash
# Libraries speak their fields, the command line its flags (issue 46): a
# library's message names the field of its options ("micro_batches 3: must
# divide batch 64") and cli/ maps it to the flag (cli::in_flag_words). So a
# string literal that starts with a flag ("--...) in the libraries' sources
# (sim, real, models, calibrators, traces) is allowed only where the library
# itself builds a command line: another program's argv, a command it prints
# for the user to run, help text. Those lines are listed in ALLOW_FILE, one
# entry a line:
#
#   PATH: `FIXED TEXT` why it stays
#
# A line of PATH that contains FIXED TEXT (grep -F, no line numbers, so that
# edits around it do not matter) is allowed; every other line is reported.
#
#   tests/layering/flag_words.sh [REPO_ROOT] [ALLOW_FILE]
# Exits 1 naming each line not allowed, 0 when none (an entry that matches
# nothing is reported as stale, to be removed, without failing), 2 on bad
# arguments or a malformed entry.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
allow=${2:-$root/tests/layering/flag_words.txt}
if [ ! -r "$allow" ]; then
  echo "flag_words.sh: '$allow': cannot read the allow-list" >&2
  exit 2
fi
folders=()
for f in sim real models calibrators traces; do
  [ -d "$root/$f" ] && folders+=("$f")
done
if [ "${#folders[@]}" -eq 0 ]; then
  echo "flag_words.sh: '$root' has none of sim/ real/ models/ calibrators/ traces/" >&2
  exit 2
fi
hits=$(cd "$root" && grep -rn --include='*.cpp' '"--[a-z]' "${folders[@]}")
awk -v allow="$allow" -v hits_given="$([ -n "$hits" ] && echo 1 || echo 0)" '
  BEGIN {
    while ((getline line < allow) > 0) {
      ++number
      if (line ~ /^[[:space:]]*(#|$)/) continue
      colon = index(line, ": `")
      rest = substr(line, colon + 3)
      close_quote = index(rest, "`")
      if (colon < 2 || close_quote < 2 || length(rest) <= close_quote + 1) {
        printf "flag_words.sh: %s:%d: not PATH: `FIXED TEXT` REASON: %s\n", allow, number, line > "/dev/stderr"
        malformed = 1
        continue
      }
      ++n
      path[n] = substr(line, 1, colon - 1)
      text[n] = substr(rest, 1, close_quote - 1)
      used[n] = 0
    }
    if (malformed) exit 2
  }
  hits_given == 1 {
    first = index($0, ":")
    file = substr($0, 1, first - 1)
    after = substr($0, first + 1)
    body = substr(after, index(after, ":") + 1)
    allowed = 0
    for (i = 1; i <= n; ++i) {
      if (path[i] == file && index(body, text[i]) > 0) { allowed = 1; ++used[i] }
    }
    if (!allowed) { print "  " $0; ++bad }
    ++total
  }
  END {
    if (malformed) exit 2
    for (i = 1; i <= n; ++i)
      if (!used[i]) printf "flag_words.sh: stale entry (matches no line; remove it): %s: `%s`\n", path[i], text[i]
    printf "flag_words.sh: %d flag literals in the libraries, %d allowed by %d entries\n", total, total - bad, n
    if (bad > 0) {
      print "FAIL the lines above name a flag in a library: name the field of its options there and map it to the flag in cli/ (cli::in_flag_words), or, for a command line the library builds, add an entry to tests/layering/flag_words.txt saying why" > "/dev/stderr"
      exit 1
    }
  }' <<<"$hits"
