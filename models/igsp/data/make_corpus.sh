#!/usr/bin/env bash
# Rebuilds the IGSP study's corpus snapshot (corpus/ beside this script) from
# the Debian files it was copied from, and writes its listing:
#
#   corpus/general.tar.gz    General: licence texts and package READMEs
#   corpus/code.tar.gz       Code: libtorch-dev's ATen headers
#   corpus/copyright.tar.gz  the Debian copyright file of every package a file came from
#   corpus/LICENSE-pytorch   libtorch-dev's copyright file (PyTorch's BSD-3-Clause notice)
#   corpus/README.md         every file: entry, size, original path, package, version, licence
#
#   models/igsp/data/make_corpus.sh
#
# Input: corpus/sources.txt, one "PACK PATH" a line (the original paths, in
# any order). Entry names are the paths less /usr/share/ (General) or
# /usr/include/ (Code); gzipped files (README.gz) are stored decompressed,
# under their name less .gz, since the corpus is the decompressed text.
# Needs a Debian system with the packages that own those files installed
# (dpkg -S finds them) at the versions the listing names; the packs are made
# deterministically (ustar, sorted names, owner 0, mtime 0, gzip -n), so the
# same files give the same bytes.
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/corpus"
sources="$corpus/sources.txt"
work=$(mktemp -d "${TMPDIR:-/tmp}/ct_igsp_corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "make_corpus.sh: $*" >&2
  exit 1
}

# Licences read by eye, for packages whose copyright file is not
# machine-readable (DEP-5) or has no "Files: *" paragraph with a licence.
declare -A licence_by_eye=(
  [base-files]="GPL-2+"
  [ca-certificates]="GPL-2+"
  [debian-archive-keyring]="GPL-2+"
  [fakeroot]="GPL-3+"
  [gettext]="GPL-3+ (tools), LGPL-2.1+ (libraries)"
  [groff-base]="GPL-3+"
  [libavahi-client3]="LGPL-2+"
  [libavahi-common-data]="LGPL-2+"
  [libavahi-common3]="LGPL-2+"
  [libfakeroot]="GPL-3+"
  [libgcrypt20]="LGPL-2.1+ (library), GPL-2+ (manual and tools)"
  [libgsl27]="GPL-3+"
  [libgtk2.0-common]="LGPL-2+"
  [libksba8]="LGPL-3+ or GPL-2+"
  [libmpfr6]="LGPL-3+ (library), GFDL-1.2+ (manual)"
  [libpcre3]="BSD-3-Clause"
  [libpthread-stubs0-dev]="Expat"
  [libtasn1-6]="LGPL-2.1+ (library), GPL-3+ (tools)"
  [libusb-1.0-0]="LGPL-2.1+"
  [libxmlsec1]="Expat"
  [libxmlsec1-dev]="Expat"
  [libxmlsec1-gcrypt]="Expat"
  [libxmlsec1-gnutls]="Expat"
  [libxmlsec1-nss]="Expat"
  [libxmlsec1-openssl]="Expat"
  [libxslt1-dev]="Expat"
  [libxslt1.1]="Expat"
  [mysql-common]="GPL-2+"
  [nodejs]="Expat"
  [patch]="GPL-3+"
  [python3-yaml]="Expat"
  [shared-mime-info]="GPL-2+"
  [tk8.6]="TCL"
  [wget]="GPL-3+"
)

# The License: of the "Files: *" paragraph of a DEP-5 copyright file (its
# Files: field may continue on indented lines); empty when there is none.
dep5_licence() {
  grep -q '^Format:' "$1" || return 0
  awk 'BEGIN { RS = ""; FS = "\n" }
       {
         star = 0; lic = ""; infiles = 0
         for (i = 1; i <= NF; i++) {
           line = $i
           if (line ~ /^Files:/) { infiles = 1; sub(/^Files:/, "", line) }
           else if (infiles && line ~ /^[ \t]/) { }
           else { infiles = 0 }
           if (infiles) { n = split(line, t, /[ \t]+/); for (k = 1; k <= n; k++) if (t[k] == "*") star = 1 }
           if ($i ~ /^License:/ && lic == "") { lic = $i; sub(/^License:[ \t]*/, "", lic) }
         }
         if (star && lic != "") { print lic; exit }
       }' "$1"
}

licence_of() {  # PACKAGE ENTRY
  case "$2" in
    common-licenses/*)
      echo "the licence text itself, copied verbatim"
      return
      ;;
  esac
  local lic
  lic=$(dep5_licence "/usr/share/doc/$1/copyright")
  [ -n "$lic" ] || lic=${licence_by_eye[$1]:-}
  [ -n "$lic" ] || fail "no licence for package $1: read /usr/share/doc/$1/copyright and add it to licence_by_eye"
  echo "$lic"
}

[ -f "$sources" ] || fail "$sources: no such file"
rows="$work/rows"
: > "$rows"
declare -A packages=()
while read -r pack path; do
  case "$pack" in '' | '#'*) continue ;; esac
  case "$pack" in
    general) entry=${path#/usr/share/} ;;
    code) entry=${path#/usr/include/} ;;
    *) fail "$sources: pack '$pack' (allowed: general, code)" ;;
  esac
  [ -f "$path" ] || fail "$path: no such file (install the package that ships it)"
  mkdir -p "$work/$pack/$(dirname "$entry")"
  case "$entry" in
    *.gz)
      entry=${entry%.gz}
      gzip -dc "$path" > "$work/$pack/$entry"
      ;;
    *) cp "$path" "$work/$pack/$entry" ;;
  esac
  package=$(dpkg -S "$path" | head -1 | cut -d: -f1)
  [ -n "$package" ] || fail "$path: dpkg -S names no package"
  packages[$package]=1
  version=$(dpkg-query -W -f='${Version}' "$package")
  bytes=$(wc -c < "$work/$pack/$entry")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pack" "$entry" "$bytes" "$path" "$package" "$version" \
    "$(licence_of "$package" "$entry")" >> "$rows"
done < "$sources"

# pack NAME DIR: DIR's files as corpus/NAME.tar.gz, deterministically.
pack() {
  (cd "$2" && find . -type f | sed 's|^\./||' | sort > "$work/$1.list")
  tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=u=rw,go=r --no-recursion \
    -C "$2" -cf - -T "$work/$1.list" | gzip -n -9 > "$work/$1.tar.gz"
  mv "$work/$1.tar.gz" "$corpus/$1.tar.gz"
}
pack general "$work/general"
pack code "$work/code"
mkdir "$work/copyright"
for package in "${!packages[@]}"; do
  mkdir "$work/copyright/$package"
  cp "/usr/share/doc/$package/copyright" "$work/copyright/$package/copyright"
done
pack copyright "$work/copyright"
cp /usr/share/doc/libtorch-dev/copyright "$corpus/LICENSE-pytorch"

{
  cat <<'EOF'
# The IGSP study's General and Code text

The text `byte_lm.pt` was trained on and is scored on, as the repository
ships it: no file outside the repository is read. `make_corpus.sh` (beside
this folder) wrote every file here, this listing included, from the Debian 12
files named in `sources.txt`.

| file | what |
|---|---|
| `general.tar.gz` | General: 11 licence texts (`/usr/share/common-licenses`) and package READMEs (`/usr/share/doc`) |
| `code.tar.gz` | Code: C++ headers of PyTorch's ATen (`/usr/include/ATen`, package libtorch-dev) |
| `copyright.tar.gz` | `PACKAGE/copyright`: the Debian copyright file of every package below, with the notices their licences ask copies to carry |
| `LICENSE-pytorch` | libtorch-dev's copyright file: PyTorch's BSD-3-Clause notice, which covers `code.tar.gz` |

Each pack is a gzipped ustar archive of plain text files (`tar -tzf` lists
it); an entry's name is its original path less `/usr/share/` (General) or
`/usr/include/` (Code), and a gzipped original (`README.gz`) is stored
decompressed, under its name less `.gz`. `clustertwin igsp train` reads a pack
as it reads the folder it was made from: the entries in sorted path order,
every 10th held out.

Every file comes from a package of Debian 12's main archive, whose texts meet
the Debian Free Software Guidelines; each is redistributed here unchanged
(apart from decompression) under its licence as the package's copyright file
states it (the licence column: the `License:` of the copyright file's
`Files: *` paragraph, or, where the file is not machine-readable, the
licence its text states). The licence texts of `common-licenses/` are
redistributed verbatim, as their own notices allow.

| pack | entry | bytes | original | package | version | licence |
|---|---|---|---|---|---|---|
EOF
  awk -F'\t' '{ printf "| %s | `%s` | %s | `%s` | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$rows"
} > "$work/README.md"
mv "$work/README.md" "$corpus/README.md"
echo "make_corpus.sh: $(wc -l < "$rows") files; $(cd "$corpus" && stat -c '%n %s bytes' general.tar.gz code.tar.gz \
  copyright.tar.gz | paste -sd, | sed 's/,/, /g')"
