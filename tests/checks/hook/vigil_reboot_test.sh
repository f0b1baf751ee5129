#!/usr/bin/env bash
# checks/hook/vigil-reboot: a bug report before a reboot Vigil asked for, none before anyone
# else's, and the reboot command always runs (a missing, failing or hanging nvidia-bug-report.sh
# never keeps the node from rebooting). Stand-ins for scontrol, nvidia-bug-report.sh and the
# reboot command; the real ones only exist on a GPU node.
#   vigil_reboot_test.sh WRAPPER
set -euo pipefail
wrapper=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
# scontrol show node -o NODE, with the reason from $t/reason (no file: scontrol fails).
# $t/other-node: it answers for another node (only this node's line may decide).
cat >"$t/scontrol" <<SH
#!/bin/sh
[ -f "$t/reason" ] || exit 1
name=\$4
[ -f "$t/other-node" ] && name=gpu-30
echo "NodeName=\$name Arch=x86_64 State=IDLE+DRAIN+REBOOT_REQUESTED Reason=\$(cat "$t/reason")"
SH
# nvidia-bug-report.sh --safe-mode --output-file BASE: writes BASE.gz, as NVIDIA's script does
# with gzip.
cat >"$t/bug-report" <<SH
#!/bin/sh
echo "\$@" >"$t/bug-report.args"
[ "\$1" = --safe-mode ] && [ "\$2" = --output-file ] || exit 3
echo report >"\$3.gz"
SH
printf '#!/bin/sh\nsleep 30\n' >"$t/hang"
printf '#!/bin/sh\nexit 4\n' >"$t/broken"
printf '#!/bin/sh\necho "$@" >"%s/rebooted"\n' "$t" >"$t/reboot"
chmod +x "$t/scontrol" "$t/bug-report" "$t/hang" "$t/broken" "$t/reboot"

run() {  # run NAME REASON BUG_REPORT LOG_PATTERN [want a report: yes|no]
  local name=$1 reason=$2 bug=$3 pattern=$4 want_report=$5
  rm -rf "$t/evidence" "$t/rebooted" "$t/bug-report.args" "$t/reason"
  : >"$t/log"
  [ "$reason" = "(none)" ] || printf '%s\n' "$reason" >"$t/reason"
  local rc=0
  # NAME_VAR: the variable that names the node (SLURMD_NODENAME; Slurm 26.05: SLURM_NODE_NAME).
  env -u SLURMD_NODENAME -u SLURM_NODE_NAME "${NAME_VAR:-SLURMD_NODENAME}=gpu-3" \
    VIGIL_HOOK_LOG=$t/log VIGIL_EVIDENCE_DIR=$t/evidence \
    VIGIL_SCONTROL=$t/scontrol VIGIL_BUG_REPORT=$bug VIGIL_BUG_REPORT_TIMEOUT=2 \
    "$wrapper" "$t/reboot" now || rc=$?
  local got_report=no
  compgen -G "$t/evidence/gpu-3-*.nvidia-bug-report.log.gz" >/dev/null && got_report=yes
  if [ "$rc" -ne 0 ] || [ "$(cat "$t/rebooted" 2>/dev/null)" != now ] ||
      ! grep -q -- "$pattern" "$t/log" || [ "$got_report" != "$want_report" ]; then
    echo "FAIL $name: exit $rc, rebooted '$(cat "$t/rebooted" 2>/dev/null)', report $got_report" \
      "(want $want_report), log:"
    cat "$t/log"
    fail=1
  else
    echo "ok   $name: $(cat "$t/log")"
  fi
}
run vigils-reboot "vigil: remap gpu3 row remap pending (1) : reboot issued [root@1764200000]" \
  "$t/bug-report" "bug report in $t/evidence/gpu-3-" yes
grep -q -- "--safe-mode --output-file $t/evidence/gpu-3-" "$t/bug-report.args" || {
  echo "FAIL: nvidia-bug-report.sh was not given --safe-mode --output-file"; fail=1; }
# Slurm 26.05 names the node to its RebootProgram in SLURM_NODE_NAME only (review W14).
NAME_VAR=SLURM_NODE_NAME run named-by-26.05 "vigil: xid gpu1 Xid 79" "$t/bug-report" \
  "bug report in $t/evidence/gpu-3-" yes
run admins-reboot "bios update [admin@1764200000]" "$t/bug-report" "is not Vigil's" no
[ ! -e "$t/bug-report.args" ] || { echo "FAIL: a bug report before an admin's reboot"; fail=1; }
run no-scontrol "(none)" "$t/bug-report" "reason 'unknown' is not Vigil's" no
touch "$t/other-node"
run another-nodes-line "vigil: xid gpu1 Xid 79" "$t/bug-report" "reason 'unknown' is not Vigil's" no
rm "$t/other-node"
run no-bug-report "vigil: xid gpu1 Xid 79" "$t/nowhere" "no nvidia-bug-report.sh" no
run failing-bug-report "vigil: xid gpu1 Xid 79" "$t/broken" "exited 4" no
start=$(date +%s)
run hanging-bug-report "vigil: xid gpu1 Xid 79" "$t/hang" "did not finish in 2s" no
[ $(($(date +%s) - start)) -lt 20 ] || { echo "FAIL: the hang held the reboot back"; fail=1; }
rc=0
"$wrapper" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: no reboot command: exit $rc, want 2"; fail=1; }
exit "$fail"
