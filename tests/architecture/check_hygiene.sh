#!/usr/bin/env bash
# Hygiene that the review found unenforced (docs/architecture.md, "Conventions"):
#   check_hygiene.sh format SRC   every C++/CUDA source matches the repository's .clang-format
#   check_hygiene.sh shell SRC    every shell script passes `shellcheck -S warning`
#   check_hygiene.sh length SRC DIRS MAX
#                                 no function in the C++ files under SRC/DIRS is over MAX lines
#                                 (ctags); DIRS is one directory or several as "a|b|c"
#   check_hygiene.sh self-test    each check fails on a planted violation
# Files are the tracked ones (git ls-files) or, outside a git tree, a walk that skips build
# directories, fixtures and node_modules.
set -euo pipefail

list_files() {  # SRC -> NUL-separated paths relative to SRC
  local src=$1
  # safe.directory: a CI checkout owned by another user is still this repository.
  if [ -z "${HYGIENE_NO_GIT:-}" ] && [ -e "$src/.git" ] &&
      git -c safe.directory='*' -C "$src" rev-parse --show-toplevel >/dev/null; then
    git -c safe.directory='*' -C "$src" ls-files -z
  else
    (cd "$src" && find . \( -name .git -o -path './build*' -o -name node_modules \
      -o -path ./tests/fixtures \) -prune -o -type f -print0 | sed -z 's|^\./||')
  fi
}

cpp_files() {
  list_files "$1" | grep -zE '\.(cpp|h|cu|cuh|hpp|cc)$' | grep -zv '^tests/fixtures/' || true
}

shell_files() {  # *.sh, and scripts whose first line names sh or bash
  local src=$1 f
  while IFS= read -r -d '' f; do
    case $f in tests/fixtures/*|*/node_modules/*) continue ;; esac
    if [[ $f == *.sh ]] || head -c 64 "$src/$f" 2>/dev/null | head -n1 | grep -qE '^#!.*\b(ba)?sh\b'
    then printf '%s\0' "$f"; fi
  done < <(list_files "$src")
}

check_format() {
  local src=$1 bad=0 f
  command -v clang-format >/dev/null || { echo "clang-format not installed" >&2; return 2; }
  while IFS= read -r -d '' f; do
    (cd "$src" && clang-format --dry-run -Werror "$f" >/dev/null 2>&1) || {
      echo "$f: differs from .clang-format (clang-format -i $f)"; bad=1; }
  done < <(cpp_files "$src")
  return $bad
}

check_shell() {
  local src=$1
  command -v shellcheck >/dev/null || { echo "shellcheck not installed" >&2; return 2; }
  local files=()
  while IFS= read -r -d '' f; do files+=("$f"); done < <(shell_files "$src")
  [ ${#files[@]} -gt 0 ] || { echo "no shell scripts found under $src" >&2; return 2; }
  (cd "$src" && shellcheck -S warning -x "${files[@]}")
}

check_length() {  # SRC DIRS MAX: functions under DIRS ("a|b", relative to SRC) over MAX lines
  local src=$1 dir=$2 max=$3 d
  command -v ctags >/dev/null || { echo "ctags (universal-ctags) not installed" >&2; return 2; }
  # A misspelt directory must not pass by checking nothing.
  for d in ${dir//|/ }; do [ -d "$src/$d" ] || { echo "no directory $src/$d" >&2; return 2; }; done
  local files=()
  while IFS= read -r -d '' f; do files+=("$f"); done < <(cpp_files "$src" | grep -zE "^($dir)/")
  [ ${#files[@]} -gt 0 ] || { echo "no C++ files under $src/$dir" >&2; return 2; }
  (cd "$src" && ctags --fields=+ne --kinds-c++=f -o - "${files[@]}") | awk -F'\t' -v max="$max" '
    { line = ""; end = ""
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (line != "" && end != "" && end - line + 1 > max) {
        printf "%s:%s: %s is %d lines (at most %d)\n", $2, line, $1, end - line + 1, max; bad = 1
      } }
    END { exit bad }'
}

self_test() {
  local here tmp rc tool
  for tool in clang-format shellcheck ctags; do
    command -v $tool >/dev/null || { echo "self-test: $tool not installed" >&2; return 2; }
  done
  export HYGIENE_NO_GIT=1  # the planted files are untracked (and TMPDIR may be in a git tree)
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  cp "$here/../../.clang-format" "$tmp/"
  printf 'int  f( ){return 1;}\n' > "$tmp/bad.cpp"
  printf '#!/bin/bash\nx=$1\nexport "$x"\ncd $x\n' > "$tmp/bad"
  printf 'int f() { return 1; }\n' > "$tmp/good.cpp"
  printf '#!/bin/bash\necho "$1"\n' > "$tmp/good.sh"
  rc=0; check_format "$tmp" >/dev/null || rc=$?
  [ $rc -eq 1 ] || { echo "self-test: format check passed a misformatted file"; return 1; }
  rc=0; check_shell "$tmp" >/dev/null || rc=$?
  [ $rc -eq 1 ] || { echo "self-test: shell check passed a script with SC2163/SC2164"; return 1; }
  mkdir "$tmp/d"
  { echo 'int long_one() {'; for _ in $(seq 1 12); do echo '  int x = 0;'; done; echo '  return 0;'
    echo '}'; } > "$tmp/d/long.cpp"
  rc=0; check_length "$tmp" d 10 >/dev/null || rc=$?
  [ $rc -eq 1 ] || { echo "self-test: length check passed a 15-line function (max 10)"; return 1; }
  check_length "$tmp" d 15 >/dev/null || { echo "self-test: a 15-line function over 15"; return 1; }
  mkdir "$tmp/e"
  rc=0; check_length "$tmp" "e|d" 10 >/dev/null || rc=$?
  [ $rc -eq 1 ] || { echo "self-test: length check missed d's function among DIRS e|d"; return 1; }
  rc=0; check_length "$tmp" "d|nosuchdir" 15 >/dev/null 2>&1 || rc=$?
  [ $rc -eq 2 ] || { echo "self-test: length check accepted a directory that does not exist"; return 1; }
  rm -r "$tmp/bad.cpp" "$tmp/bad" "$tmp/d" "$tmp/e"
  check_format "$tmp" && check_shell "$tmp" || { echo "self-test: clean files rejected"; return 1; }
  echo "self-test ok: every check fails on a planted violation and passes clean files"
}

case ${1:-} in
  format) check_format "${2:?SRC}" ;;
  shell) check_shell "${2:?SRC}" ;;
  length) check_length "${2:?SRC}" "${3:?DIR}" "${4:?MAX}" ;;
  self-test) self_test ;;
  *) echo "usage: $0 format SRC | shell SRC | length SRC DIRS MAX | self-test" >&2; exit 2 ;;
esac
