#!/usr/bin/env bash
# Checks that comments and documentation refer only to documents this repository has.
#
#   bash scripts/check_doc_references.sh [ROOT]    check the tree at ROOT (default: this checkout)
#   bash scripts/check_doc_references.sh --self-test   prove on a scratch tree that it can fail
#
# Exit status 1, with one "file:line: problem" per finding, when a scanned file has
#   1. a reference to a design or reference document that is not in the repository: DESIGN.md,
#      API.md, STYLE.md, peers.md, apex_amp.md, torch_amp.md, or any reference/<name>.md other
#      than an existing file under tests/reference/;
#   2. a section sign (§) for anything but the IEEE 754 standard: sections of documents outside
#      the repository; cite a docs/ file and its heading instead;
#   3. a path docs/<name>.md (also ./docs/..., ../docs/...) that does not exist;
#   4. a reference of the form  docs/<name>.md, "Heading"  or  docs/<name>.md ("Heading")  (on
#      one line, or wrapped onto the next) whose heading is not a Markdown heading (#, ##, ...)
#      of that file;
#   5. a relative Markdown link in README.md or docs/*.md to a file that does not exist.
# Scanned: csrc/ nn/ optimizers/ amp/ tests/ examples/ bench/ docs/ scripts/ cmake/ README.md
# CMakeLists.txt (text files only). CHANGELOG.md is not scanned: its past entries stay as written.
# Needs only bash and grep. Exit status 0 and one "OK" line when nothing is found.
set -u

self_name=check_doc_references.sh

if [[ ${1:-} == --self-test ]]; then
  scratch=$(mktemp -d) || exit 2
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/docs" "$scratch/csrc" "$scratch/tests/reference"
  printf '# Real\n\n## A section\n\nSee [other](missing.md) and [real](real.md#a-section).\n' \
    >"$scratch/docs/real.md"
  printf 'x = 1\n' >"$scratch/tests/reference/make_x.py"
  cat >"$scratch/csrc/bad.h" <<'EOF'
// bad: DESIGN.md
// bad: reference/apex_amp.md
// bad: torch_amp.md
// bad: see section §3.2 of the notes
// bad: docs/nowhere.md
// bad: docs/real.md, "No such section"
// bad: docs/real.md, "A wrapped
// section that is not there"
// good: docs/real.md, "A section"; ../docs/real.md; tests/reference/make_x.py; IEEE 754 §6.2
// good: docs/real.md, "A
// section", wrapped
EOF
  out=$(bash "$0" "$scratch")
  status=$?
  expected=("csrc/bad.h:1:" "csrc/bad.h:2:" "csrc/bad.h:3:" "csrc/bad.h:4:" "csrc/bad.h:5:"
            "csrc/bad.h:6:" "csrc/bad.h:7:" "docs/real.md:5:")
  failed=0
  [[ $status -eq 1 ]] || { echo "self-test: expected exit status 1, got $status"; failed=1; }
  for e in "${expected[@]}"; do
    grep -qF -- "$e" <<<"$out" || { echo "self-test: no finding for $e"; failed=1; }
  done
  if grep -qE -- '^csrc/bad\.h:(8|9|10|11):' <<<"$out" || grep -qF -- "real.md#" <<<"$out"; then
    echo "self-test: a correct reference was reported"; failed=1
  fi
  if [[ $failed -ne 0 ]]; then
    printf 'self-test output was:\n%s\n' "$out"
    exit 1
  fi
  echo "check_doc_references self-test: OK (the check fails on each kind of bad reference)"
  exit 0
fi

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root" || { echo "check_doc_references: no such directory: $root"; exit 2; }

targets=()
for t in csrc nn optimizers amp tests examples bench docs scripts cmake README.md CMakeLists.txt
do
  [[ -e $t ]] && targets+=("$t")
done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "check_doc_references: nothing to scan under $root"
  exit 2
fi

problems=()

# grep over the scanned files: recursive, text files only, "file:line:" prefixes, this script
# excluded (it names the patterns it looks for).
scan() { grep -rIHn --exclude="$self_name" "$@" -- "${targets[@]}"; }

# Splits "file:line:text" into $file, $lineno and $text.
split_hit() {
  file=${1%%:*}
  local rest=${1#*:}
  lineno=${rest%%:*}
  text=${rest#*:}
}

# 1. Documents that are not in the repository.
outside_docs='^(DESIGN|API|STYLE|peers|apex_amp|torch_amp)\.md$'
while IFS= read -r hit; do
  split_hit "$hit"
  [[ ${text##*/} =~ $outside_docs ]] || continue   # e.g. MY_API.md
  problems+=("$file:$lineno: names $text, a document that is not in this repository")
done < <(scan -oE '[A-Za-z0-9_./-]*(DESIGN|API|STYLE|peers|apex_amp|torch_amp)\.md'; true)
while IFS= read -r hit; do
  split_hit "$hit"
  token=$text
  while [[ $token == ./* ]]; do token=${token#./}; done
  if [[ $token == tests/reference/* && -f $token ]]; then continue; fi
  [[ ${token##*/} =~ $outside_docs ]] && continue   # reported above
  problems+=("$file:$lineno: names $text, a document that is not in this repository")
done < <(scan -oE '[A-Za-z0-9_./-]*reference/[A-Za-z0-9_.-]+\.md'; true)

# 2. Section signs.
while IFS= read -r hit; do
  split_hit "$hit"
  rest=${text//IEEE 754 §/}
  if [[ $rest == *§* ]]; then
    text=${text#"${text%%[![:space:]]*}"}
    problems+=("$file:$lineno: § names a section of a document outside this repository: $text")
  fi
done < <(scan -F '§'; true)

# 3. docs/<name>.md paths.
while IFS= read -r hit; do
  split_hit "$hit"
  token=$text
  while [[ $token == /* || $token == ./* || $token == ../* ]]; do
    token=${token#/}; token=${token#./}; token=${token#../}
  done
  [[ $token == docs/* ]] || continue   # another project's docs/ folder
  [[ -f $token ]] || problems+=("$file:$lineno: $token does not exist")
done < <(scan -oE '[A-Za-z0-9_./-]*docs/[A-Za-z0-9_./-]+\.md'; true)

# 4. Headings cited as  docs/<name>.md, "Heading"  or  docs/<name>.md ("Heading"). The citation
# may continue on the next line (a wrapped comment): the next line is joined to the hit without
# its comment leader.
heading_re='(docs/[A-Za-z0-9_.-]+\.md)(, | \()"([^"]+)"'
while IFS= read -r hit; do
  split_hit "$hit"
  next=()
  mapfile -t -s "$lineno" -n 1 next <"$file"
  cont=${next[0]:-}
  cont=${cont#"${cont%%[![:space:]]*}"}
  while [[ $cont == //* || $cont == \#* || $cont == \** ]]; do
    cont=${cont#//}; cont=${cont#\#}; cont=${cont#\*}
  done
  cont=${cont#"${cont%%[![:space:]]*}"}
  rest="$text $cont"
  consumed=0
  while [[ $rest =~ $heading_re ]]; do
    match=${BASH_REMATCH[0]}
    doc=${BASH_REMATCH[1]}
    heading=${BASH_REMATCH[3]}
    before=${rest%%"$match"*}
    (( consumed + ${#before} < ${#text} )) || break   # starts on the next line: its own hit
    consumed=$(( consumed + ${#before} + ${#match} ))
    rest=${rest:$(( ${#before} + ${#match} ))}
    [[ -f $doc ]] || continue   # reported by check 3
    if ! grep -qxF -e "# $heading" -e "## $heading" -e "### $heading" -e "#### $heading" \
         -e "##### $heading" -e "###### $heading" -- "$doc"; then
      problems+=("$file:$lineno: $doc has no heading \"$heading\"")
    fi
  done
done < <(scan -E 'docs/[A-Za-z0-9_.-]+\.md(,| \()'; true)

# 5. Relative Markdown links in README.md and docs/*.md.
md_files=()
[[ -f README.md ]] && md_files+=(README.md)
for f in docs/*.md; do [[ -f $f ]] && md_files+=("$f"); done
if [[ ${#md_files[@]} -gt 0 ]]; then
  while IFS= read -r hit; do
    split_hit "$hit"
    target=${text#](}
    target=${target%)}
    target=${target%%#*}
    [[ -z $target || $target == *://* || $target == mailto:* ]] && continue
    dir=.
    [[ $file == */* ]] && dir=${file%/*}
    [[ -e $dir/$target ]] || problems+=("$file:$lineno: the link target $target does not exist")
  done < <(grep -HnoE '\]\([^)[:space:]]+\)' -- "${md_files[@]}"; true)
fi

if [[ ${#problems[@]} -gt 0 ]]; then
  printf '%s\n' "${problems[@]}"
  echo "check_doc_references: ${#problems[@]} problem(s). Point comments and docs at files" \
       "under docs/ (and their headings) instead; see docs/design_decisions.md."
  exit 1
fi
echo "check_doc_references: OK (${#targets[@]} paths scanned under $root)"
exit 0
