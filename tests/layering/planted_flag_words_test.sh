#!/usr/bin/env bash
# flag_words.sh must catch a library message that names a flag: in a scratch
# tree whose one library file holds an allowed command-line literal, exit 0
# (and still 0 once lines above it move it down: entries carry no line
# numbers); plant `"--workers " ...` in a message, exit 1 naming that line;
# a malformed entry, exit 2.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/sim/core"
cat >"$copy/allow.txt" <<'LIST'
# a comment
sim/core/engine.cpp: `"--cfg=contexts/stack-size:256"` the engine's argv
LIST
printf 'char arg[] = "--cfg=contexts/stack-size:256";\n' >"$copy/sim/core/engine.cpp"
bash "$root/tests/layering/flag_words.sh" "$copy" "$copy/allow.txt" >/dev/null ||
  { echo "planted_flag_words_test.sh: the allowed literal failed"; exit 1; }
printf '// moved down\n\n' | cat - "$copy/sim/core/engine.cpp" >"$copy/moved" && mv "$copy/moved" "$copy/sim/core/engine.cpp"
bash "$root/tests/layering/flag_words.sh" "$copy" "$copy/allow.txt" >/dev/null ||
  { echo "planted_flag_words_test.sh: the allowed literal failed once it moved"; exit 1; }
printf 'Status f(int w) { return Status::invalid_argument("--workers " + std::to_string(w) + ": too few"); }\n' \
  >>"$copy/sim/core/engine.cpp"
set +e
out=$(bash "$root/tests/layering/flag_words.sh" "$copy" "$copy/allow.txt" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q '^  sim/core/engine.cpp:4:.*"--workers "' <<<"$out"; then
  echo "planted_flag_words_test.sh: the planted flag was not reported (exit $rc)"
  exit 1
fi
echo 'sim/core/engine.cpp: no backquotes' >>"$copy/allow.txt"
set +e
bash "$root/tests/layering/flag_words.sh" "$copy" "$copy/allow.txt" >/dev/null 2>&1
rc=$?
set -e
if [ "$rc" -ne 2 ]; then
  echo "planted_flag_words_test.sh: a malformed entry was not refused (exit $rc)"
  exit 1
fi
echo "planted_flag_words_test.sh: the planted flag was caught"
