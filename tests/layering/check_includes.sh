#!/usr/bin/env bash
# The layering rules of docs/architecture.md that an include can break, checked
# with grep over the sources (tests/CMakeLists.txt runs it as
# LayeringTest.NoFileIncludesAcrossAForbiddenEdge):
#
#   common/  the base library: includes nothing of ours but common/
#   traces/  includes nothing of ours but common/ and traces/
#   real/    never includes sim/, calibrators/, experiments/ or cli/ (the real
#            side builds where SimGrid is not: CT_REAL_ONLY, a bare GPU machine);
#            an executor (real/nestpipe, real/flexmarl, real/flowtrain) includes no
#            other executor's folder: what they share is real/core
#   models/  never includes sim/, real/, calibrators/, experiments/ or cli/, and
#            outside models/torch no libtorch header (<torch/, <ATen/, <c10/):
#            the plans and policies both executors share; a system's folder
#            (models/NAME) is included by no other folder of models/
#   sim/     never includes real/, calibrators/, experiments/ or cli/; sim/core
#            and sim/mix include no system's twin (sim/NAME): they reach
#            twins through the registry (sim/core/twin.h)
#   calibrators/  never includes real/, experiments/ or cli/
#   cli/     includes nothing of experiments/; of a kernel's folders (real/igsp
#            and models/igsp, real/sis and models/sis) only the kernel's entry
#            header, real/KERNEL/KERNEL_command.h (as a system's run.cpp
#            includes only real/NAME/NAME_command.h)
#
#   tests/layering/check_includes.sh [REPO_ROOT]
# Prints every offending line (file:line: #include "...") and exits 1 when
# there is one, 0 when there is none, 2 on bad arguments.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ ! -d "$root/real" ] || [ ! -d "$root/models" ] || [ ! -d "$root/common" ]; then
  echo "check_includes.sh: '$root' is not a clustertwin checkout (no real/, models/ or common/)" >&2
  exit 2
fi

failed=0
# rule: FOLDER FORBIDDEN...
check() {
  local folder=$1
  shift
  local pattern
  pattern=$(printf '%s|' "$@")
  pattern=${pattern%|}
  local hits
  hits=$(cd "$root" && grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($pattern)/" "$folder" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "$folder/ may not include $*:"
    echo "$hits" | sed 's/^/  /'
    failed=1
  fi
}

check common models traces sim real calibrators experiments cli
check traces models sim real calibrators experiments cli
check real sim calibrators experiments cli
check models sim real calibrators experiments cli
check sim real calibrators experiments cli
check calibrators real experiments cli

# The executors (real/nestpipe, real/flexmarl, real/flowtrain): none includes another's folder (what they
# share lives in real/core; the kernels of real/sis and real/gpu are libraries any of them may use).
# The executors are the systems of the registry (common/systems.def).
executors=()
while IFS= read -r line; do
  [[ $line =~ ^CT_SYSTEM\(([a-z][a-z0-9_]*), ]] && executors+=("${BASH_REMATCH[1]}")
done <"$root/common/systems.def"
if [ ${#executors[@]} -eq 0 ]; then
  echo "check_includes.sh: $root/common/systems.def lists no system" >&2
  exit 2
fi
for system in "${executors[@]}"; do
  others=()
  for o in "${executors[@]}"; do [ "$o" = "$system" ] || others+=("real/$o"); done
  check "real/$system" "${others[@]}"
done

# The twins' shared core and the programs built on the twin interface (sim/core, sim/mix) name no system:
# they reach a twin through sim/core/twin.h's registry, so a system added to common/systems.def joins them.
twins=()
for system in "${executors[@]}"; do twins+=("sim/$system"); done
check sim/core "${twins[@]}"
check sim/mix "${twins[@]}"

# models/: a system's folder (models/nestpipe, ...) is its own: no other folder of models/ includes it, so
# that the shared models (plans, profiles, specs, the torch modules) never depend on one system.
for system in "${executors[@]}"; do
  for folder in "$root"/models/*/; do
    folder=${folder%/}
    folder=models/${folder##*/}
    [ "$folder" = "models/$system" ] || check "$folder" "models/$system"
  done
done

# cli/: no study code (experiments/ holds the study programs and their plots), and a kernel (IGSP, SIS: numerical
# libraries with no twin, whose commands are registered by hand) only through its entry header, as a system's
# executor through real/NAME/NAME_command.h.
check cli experiments
kernels=(igsp sis)
for kernel in "${kernels[@]}"; do
  hits=$(cd "$root" && grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"(real|models)/$kernel/" cli 2>/dev/null |
    grep -vE "#[[:space:]]*include[[:space:]]*\"real/$kernel/${kernel}_command\.h\"")
  if [ -n "$hits" ]; then
    echo "cli/ may include of real/$kernel and models/$kernel only real/$kernel/${kernel}_command.h:"
    echo "$hits" | sed 's/^/  /'
    failed=1
  fi
done

# models/ outside models/torch: no libtorch header.
torch_hits=$(cd "$root" && grep -rnE --include='*.h' --include='*.cpp' \
  '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(torch|ATen|c10)/' models 2>/dev/null | grep -v '^models/torch/')
if [ -n "$torch_hits" ]; then
  echo "models/ (outside models/torch) may not include libtorch:"
  echo "$torch_hits" | sed 's/^/  /'
  failed=1
fi

if [ "$failed" -ne 0 ]; then
  echo "check_includes.sh: forbidden includes (see docs/architecture.md, the layers)"
  exit 1
fi
echo "check_includes.sh: no forbidden include under common/, traces/, models/, sim/, calibrators/, real/ or cli/"
