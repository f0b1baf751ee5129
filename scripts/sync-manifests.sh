#!/usr/bin/env bash
# Copies the single source of truth for thresholds, checks/thresholds/*.yaml, into
# cronjobs/thresholds/ (kustomize's load restrictor cannot read files outside cronjobs/).
#   scripts/sync-manifests.sh          copy (and delete stale copies)
#   scripts/sync-manifests.sh --check  exit 1 and list the files that differ (used by the tests)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/checks/thresholds
dst=$root/cronjobs/thresholds
check=false
[[ ${1:-} == --check ]] && check=true

drift=0
for f in "$src"/*.yaml; do
  name=$(basename "$f")
  if ! cmp -s "$f" "$dst/$name"; then
    drift=1
    if $check; then
      echo "sync-manifests: cronjobs/thresholds/$name differs from checks/thresholds/$name" >&2
    else
      cp "$f" "$dst/$name"
      echo "sync-manifests: updated cronjobs/thresholds/$name"
    fi
  fi
done
for f in "$dst"/*.yaml; do
  [[ -e $f ]] || continue
  name=$(basename "$f")
  if [[ ! -e $src/$name ]]; then
    drift=1
    if $check; then
      echo "sync-manifests: cronjobs/thresholds/$name has no source in checks/thresholds" >&2
    else
      rm "$f"
      echo "sync-manifests: removed stale cronjobs/thresholds/$name"
    fi
  fi
done
# The kustomization lists the files explicitly: every source must be listed there.
for f in "$src"/*.yaml; do
  name=$(basename "$f")
  if ! grep -q "thresholds/$name" "$root/cronjobs/kustomization.yaml"; then
    drift=1
    echo "sync-manifests: add thresholds/$name to vigil-thresholds in cronjobs/kustomization.yaml" >&2
  fi
done
if $check && [[ $drift -ne 0 ]]; then
  echo "sync-manifests: run scripts/sync-manifests.sh and commit cronjobs/thresholds/" >&2
  exit 1
fi
$check && echo "sync-manifests: cronjobs/thresholds is in sync"
exit 0
