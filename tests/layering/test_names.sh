#!/usr/bin/env bash
# Every library source has a test a reader can find (issue 46: LevelDB's
# foo.cc beside foo_test.cc). The library is the .cpp files under common/,
# traces/, models/, sim/, real/ and calibrators/; for each one, one of:
#
#   - a same-named test: tests/**/STEM_test.cpp that includes a header of the
#     source's unit, or that drives the programs (tests/cli/run_command.h)
#     from a tests folder named for the source's layer or folder and includes
#     no header of the source's folder (tests/real/launcher_test.cpp);
#   - a line `SOURCE  TEST  reason` in the allow-list: TEST exists and
#     includes a header of the source's unit;
#   - a line `SOURCE  -  reason` in the allow-list: no unit test makes sense
#     (a CUDA-only file, an entry that only parses and calls), or, with a
#     reason that starts `owed:`, one would and is not written yet.
#
# A header of a source's unit: its own (dir/stem.h) when it has one; else
# (a _cuda.cpp, an _impl or a part of a unit split over files) a header in
# the same folder whose stem is a `_`-prefix of the source's (plan_run.h for
# plan_run_tasks.cpp), else one whose stem shares the source's first word
# (kineto_import.h for kineto_c10d.cpp), else a header of that folder the
# source itself includes (plan_runner.h for synthetic_bodies.cpp).
#
#   tests/layering/test_names.sh [REPO_ROOT] [ALLOW_LIST]
# ALLOW_LIST defaults to tests/layering/tested_elsewhere.txt: sorted, one
# source a line, `#` comments. A line whose source or test no longer exists,
# or whose source has a same-named test now, fails too, so the list cannot
# rot. Prints one line per failure naming the source, and a summary; exits 1
# on a failure, 2 on bad arguments.
set -uo pipefail
export LC_ALL=C  # the list's order, and [[ > ]], byte by byte
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
allow=${2:-$root/tests/layering/tested_elsewhere.txt}
me=test_names.sh
if [ ! -d "$root/common" ] || [ ! -d "$root/tests" ]; then
  echo "$me: '$root' is not a clustertwin checkout (no common/ or tests/)" >&2
  exit 2
fi
if [ ! -f "$allow" ]; then
  echo "$me: allow-list '$allow' does not exist" >&2
  exit 2
fi
allow=$(cd "$(dirname "$allow")" && pwd)/$(basename "$allow")
cd "$root" || exit 2
root=$(pwd)
rel_allow=${allow#"$root"/}

folders=()
for f in common traces models sim real calibrators; do
  [ -d "$f" ] && folders+=("$f")
done
mapfile -t sources < <(find "${folders[@]}" -name '*.cpp' | LC_ALL=C sort)
mapfile -t tests < <(find tests -name '*_test.cpp' | LC_ALL=C sort)
# Each test's includes of ours, as " a.h b.h ", read once.
declare -A test_includes
while IFS=: read -r t h; do
  test_includes[$t]+=" $h "
done < <(grep -HoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/[^"]+\.h"' "${tests[@]}" |
  sed -E 's/^([^:]+):.*"([^"]+)".*/\1:\2/')

# The headers of SOURCE's unit, one a line (see the top of the file).
unit_headers() {
  local src=$1 dir stem h hs word
  dir=${src%/*}
  stem=${src##*/}
  stem=${stem%.cpp}
  if [ -f "$dir/$stem.h" ]; then
    echo "$dir/$stem.h"
    return
  fi
  hs=()
  for h in "$dir"/*.h; do
    [ -f "$h" ] || continue
    h=${h##*/}
    h=${h%.h}
    [[ "$stem" == "$h"_* ]] && hs+=("$dir/$h.h")
  done
  if [ ${#hs[@]} -eq 0 ]; then
    word=${stem%%_*}
    for h in "$dir/$word"*.h; do
      [ -f "$h" ] && hs+=("$h")
    done
  fi
  if [ ${#hs[@]} -eq 0 ]; then
    mapfile -t hs < <(sed -nE 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"('"$dir"'/[a-z0-9_]+\.h)".*|\1|p' "$src" |
      while read -r h; do [ -f "$h" ] && echo "$h"; done)
  fi
  printf '%s\n' "${hs[@]}"
}

# Does TEST include one of the headers (a newline-separated list)?
includes_one_of() {
  local test=$1 headers=$2 h
  while read -r h; do
    [ -n "$h" ] && [[ "${test_includes[$test]:-}" == *" $h "* ]] && return 0
  done <<<"$headers"
  return 1
}

# A same-named test of SOURCE (HEADERS its unit's): printed, or nothing.
same_named_test() {
  local src=$1 headers=$2 stem dir t
  stem=${src##*/}
  stem=${stem%.cpp}
  dir=${src%/*}
  for t in "${tests[@]}"; do
    [ "${t##*/}" = "${stem}_test.cpp" ] || continue
    if includes_one_of "$t" "$headers"; then
      echo "$t"
      return
    fi
    # A test that drives the programs names its unit by its name alone, as
    # long as it sits in a tests folder named for the source's layer or
    # folder, and includes no other unit of the source's folder.
    local tdir
    tdir=${t%/*}
    tdir=${tdir##*/}
    if [[ "${test_includes[$t]:-}" == *" tests/cli/run_command.h "* && "${test_includes[$t]}" != *" $dir/"* ]] &&
      [[ "$tdir" == "${src%%/*}" || "$tdir" == "${dir##*/}" ]]; then
      echo "$t"
      return
    fi
  done
}

fail=0
report() {
  echo "$me: $*"
  fail=1
}

# The allow-list: SOURCE -> "TEST|line number|reason".
declare -A listed
prev=""
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  read -r src test reason <<<"$line"
  if [ -z "${reason:-}" ]; then
    report "$rel_allow:$lineno: '$line': expected 'SOURCE  TEST-or-'-'  reason'"
    continue
  fi
  if [ -n "${listed[$src]:-}" ]; then
    report "$rel_allow:$lineno: $src is listed twice (one line a source)"
  elif [[ -n "$prev" && ! "$src" > "$prev" ]]; then
    report "$rel_allow:$lineno: $src is out of order (the list is sorted by source; it comes before $prev)"
  fi
  prev=$src
  listed[$src]="$test|$lineno|$reason"
  if [ ! -f "$src" ]; then
    report "$rel_allow:$lineno: $src no longer exists (moved or deleted: rename or remove its line)"
  elif [[ " ${folders[*]} " != *" ${src%%/*} "* || "$src" != *.cpp ]]; then
    report "$rel_allow:$lineno: $src is not a library source (a .cpp under ${folders[*]})"
  fi
  if [ "$test" != "-" ] && [ ! -f "$test" ]; then
    report "$rel_allow:$lineno: $src: its test $test no longer exists (moved or deleted: name the test that covers it now)"
  fi
done <"$allow"

named=0
elsewhere=0
untested=0
owed=0
for src in "${sources[@]}"; do
  headers=$(unit_headers "$src")
  alts=${headers//$'\n'/ }
  [ -z "$alts" ] && alts="(none found: give it a header, or a line with '-')"
  same=$(same_named_test "$src" "$headers")
  entry=${listed[$src]:-}
  if [ -n "$same" ]; then
    named=$((named + 1))
    [ -n "$entry" ] &&
      report "$rel_allow:$(cut -d'|' -f2 <<<"$entry"): $src has a same-named test now ($same): remove its line"
    continue
  fi
  if [ -z "$entry" ]; then
    stem=$(basename "$src" .cpp)
    near=$(printf '%s\n' "${tests[@]}" | grep "/${stem}_test.cpp$" | tr '\n' ' ' | sed 's/ $//')
    if [ -n "$near" ]; then
      report "$src: $near has its name but includes none of its unit's headers ($alts): include one there," \
        "or add a line '$src  TEST  reason' to $rel_allow"
    else
      report "$src: no tests/**/${stem}_test.cpp and no line in $rel_allow: write the test, or add" \
        "'$src  TEST  reason' (TEST including one of: $alts) or '$src  -  reason' (no unit test makes sense)"
    fi
    continue
  fi
  test=$(cut -d'|' -f1 <<<"$entry")
  if [ "$test" = "-" ]; then
    untested=$((untested + 1))
    [[ "$(cut -d'|' -f3- <<<"$entry")" == owed:* ]] && owed=$((owed + 1))
    continue
  fi
  elsewhere=$((elsewhere + 1))
  if [ -f "$test" ] && ! includes_one_of "$test" "$headers"; then
    report "$rel_allow:$(cut -d'|' -f2 <<<"$entry"): $src: $test includes none of its unit's headers ($alts)"
  fi
done

echo "$me: ${#sources[@]} sources, $named with a same-named test, $elsewhere tested elsewhere, $untested without a unit test ($owed of them owed one)"
exit "$fail"
