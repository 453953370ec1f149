#!/usr/bin/env bash
# Runs every command of the documentation, as a reader would type it.
#
#   tests/docs/run_doc_commands.sh CLUSTERTWIN_BINARY SOURCE_DIR DOC.md...
#
# For each DOC, every fenced block opened by a line "```sh" is a list of
# commands, one per line (a line ending in '\' continues on the next; blank
# lines and lines starting with '#' are skipped). Every command must start
# with "clustertwin ": the docs show clustertwin, not shell tricks. The lines
# of one doc run in order, in one fresh scratch folder (so a command sees
# what the commands above it wrote), with `clustertwin` on PATH resolving to
# CLUSTERTWIN_BINARY and CT_SOURCE_DIR set to SOURCE_DIR, so a doc names the
# shipped fixtures as $CT_SOURCE_DIR/traces/data/....
#
# Stops at the first command that exits non-zero: prints the doc, the line,
# the command and the tail of its output, keeps the scratch folder for a
# look, and exits 1. Exit 2 for a usage error or a doc without commands.
# Prints each command's wall time and the number of commands per doc.
set -u

usage() {
  echo "usage: $0 CLUSTERTWIN_BINARY SOURCE_DIR DOC.md..." >&2
  exit 2
}
[ $# -ge 3 ] || usage
binary=$(realpath -e "$1" 2>/dev/null) || { echo "$0: clustertwin binary '$1' does not exist" >&2; exit 2; }
[ -x "$binary" ] || { echo "$0: '$binary' is not executable" >&2; exit 2; }
source_dir=$(realpath -e "$2" 2>/dev/null) || { echo "$0: source folder '$2' does not exist" >&2; exit 2; }
shift 2

# `clustertwin` first on PATH, whatever the binary is called.
bin_dir=$(mktemp -d "${TMPDIR:-/tmp}/ct-doc-bin.XXXXXX")
trap 'rm -rf "$bin_dir"' EXIT
ln -s "$binary" "$bin_dir/clustertwin"
export PATH="$bin_dir:$PATH"
export CT_SOURCE_DIR="$source_dir"

# The commands of one doc, one per output line as "LINE<TAB>COMMAND", where
# LINE is the doc's line number of the command's first line.
extract() {
  awk '
    /^```sh[ \t]*$/ { inside = 1; next }
    inside && /^```[ \t]*$/ {
      if (pending != "") { printf "%d\t%s\n", start, pending; pending = "" }
      inside = 0; next
    }
    !inside { next }
    {
      line = $0
      if (pending == "") {
        if (line ~ /^[ \t]*$/ || line ~ /^[ \t]*#/) next
        start = NR
      }
      if (line ~ /\\[ \t]*$/) {            # continues on the next line
        sub(/\\[ \t]*$/, "", line)
        pending = pending line " "
        next
      }
      printf "%d\t%s\n", start, pending line
      pending = ""
    }
    END { if (inside) printf "%d\t%s\n", -1, "unclosed sh block" }
  ' "$1"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# "12.3": the seconds since $1 (from now_ms)
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

total_start=$(now_ms)

for doc in "$@"; do
  doc_path=$(realpath -e "$doc" 2>/dev/null) || { echo "$0: doc '$doc' does not exist" >&2; exit 2; }
  commands=$(extract "$doc_path")
  if [ -z "$commands" ]; then
    echo "$doc: no \`\`\`sh block with a command" >&2
    exit 2
  fi
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/ct-doc-run.XXXXXX")
  echo "== $doc (scratch folder $scratch)"
  ran=0
  doc_start=$(now_ms)
  while IFS=$'\t' read -r line command; do
    if [ "$line" = -1 ]; then
      echo "$doc: a \`\`\`sh block is not closed" >&2
      exit 1
    fi
    case "$command" in
      "clustertwin "*) ;;
      *)
        echo "$doc:$line: the command does not start with 'clustertwin ': $command" >&2
        exit 1
        ;;
    esac
    log="$scratch/.command-$((ran + 1)).log"
    start=$(now_ms)
    (cd "$scratch" && bash -c "$command") >"$log" 2>&1 </dev/null
    rc=$?
    seconds=$(seconds_since "$start")
    ran=$((ran + 1))
    if [ "$rc" -ne 0 ]; then
      printf 'FAILED %s:%s (exit %d after %s s): %s\n' "$doc" "$line" "$rc" "$seconds" "$command" >&2
      echo "--- last 30 lines of its output:" >&2
      tail -n 30 "$log" >&2
      echo "--- the scratch folder is kept: $scratch" >&2
      exit 1
    fi
    printf '  %6s s  %s:%s  %s\n' "$seconds" "$doc" "$line" "$command"
  done <<<"$commands"
  printf '%s: %d commands ran in %s s\n' "$doc" "$ran" "$(seconds_since "$doc_start")"
  rm -rf "$scratch"
done
printf 'all docs: %s s\n' "$(seconds_since "$total_start")"
exit 0
