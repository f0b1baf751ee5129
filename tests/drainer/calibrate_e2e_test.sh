#!/usr/bin/env bash
# vigil-drainer calibrate end to end (docs/thresholds.md, "Calibration"): the project's simulated
# H100 fleet (tests/detect/fleet_reports: 30 nodes x 8 cycles, 2 of them with a slow GPU) goes
# through the real drainer (`apply`, journal, detection engine); calibrate proposes floors from
# what it learned, first from the state dir, then from a running `serve` over HTTP with token
# auth; --write rewrites the shipped H100 file, which vigil-check still validates. Bad input
# changes nothing. Slurm is not involved: calibration reads no Slurm state.
#   calibrate_e2e_test.sh VIGIL_DRAINER VIGIL_CHECK FLEET_REPORTS SOURCE_DIR
set -euo pipefail
drainer=$1 check=$2 fleet=$3 src=$4
t=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$fleet" --out "$t/reports" --nodes 30 --cycles 8 --slow-nodes 2 >/dev/null
"$drainer" apply --no-slurm --state-dir "$t/state" "$t"/reports/*.json >/dev/null
mkdir "$t/th"
shipped=$src/checks/thresholds/h100-sxm5-80gb.yaml
cp "$shipped" "$t/th/h100.yaml"
cal() { "$drainer" calibrate --sku H100-SXM5-80GB --thresholds "$t/th/h100.yaml" "$@"; }

# 1. A proposal from the state dir: printed, nothing written.
rc=0; out=$(cal --state-dir "$t/state" --config '') || rc=$?
[[ $rc == 0 ]] || fail "calibrate exited $rc: $out"
grep -q '^+    gemm_bf16_tflops: {op: ">=", fail: ' <<<"$out" || fail "no GEMM proposal: $out"
grep -q 'calibrated: "[0-9-]* from 30 nodes' <<<"$out" || fail "no data line: $out"
cmp -s "$shipped" "$t/th/h100.yaml" || fail "the file changed without --write"

# 2. Not enough data: refused, exit 1, unchanged.
rc=0; out=$(cal --state-dir "$t/state" --config '' --min-nodes 100) || rc=$?
[[ $rc == 1 ]] || fail "--min-nodes 100 exited $rc: $out"
grep -q 'not enough healthy data: 30 nodes' <<<"$out" || fail "no refusal: $out"
cmp -s "$shipped" "$t/th/h100.yaml" || fail "a refused calibration changed the file"

# 3. Wrong SKU for the file: exit 2, unchanged.
rc=0; out=$("$drainer" calibrate --sku H200-SXM-141GB --thresholds "$t/th/h100.yaml" \
  --state-dir "$t/state" --config '' 2>&1) || rc=$?
[[ $rc == 2 ]] || fail "wrong SKU exited $rc: $out"
grep -q "not 'H200-SXM-141GB'" <<<"$out" || fail "wrong SKU not named: $out"

# 4. From a running service over HTTP (it holds the state dir's lock, so the command must ask it),
#    with --write.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$t/token"
cat >"$t/drainer.yaml" <<YAML
listen: {address: 127.0.0.1, port: $port}
auth: {token_file: $t/token}
state_dir: $t/state
slurm: {enabled: false}
kubernetes: {enabled: false}
YAML
"$drainer" serve --config "$t/drainer.yaml" >"$t/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q ': ready' "$t/serve.log" && break; sleep 0.1; done
grep -q ': ready' "$t/serve.log" || fail "serve did not start: $(cat "$t/serve.log")"
rc=0; out=$(cal --config "$t/drainer.yaml" --write) || rc=$?
[[ $rc == 0 ]] || fail "calibrate --write against the service exited $rc: $out"
grep -q '^written: ' <<<"$out" || fail "not written: $out"
kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=

n=$(grep -c 'calibrated: "' "$t/th/h100.yaml" || true)
[[ $n == 6 ]] || fail "want 6 calibrated floors (GEMM, HBM, H2D, D2H, NVLink and IB all_reduce), got $n"
grep -q 'fabric_allreduce_ib' "$t/th/h100.yaml" || fail "fabric section lost"
# The fabric floor had no data: still unconfirmed.
awk '/fabric_allreduce_ib:/{f=1} f && /busbw:/{print; exit}' "$t/th/h100.yaml" | grep -q 'unconfirmed: true' \
  || fail "the fabric floor lost its unconfirmed flag without data"
"$check" thresholds validate "$t/th" >/dev/null || fail "vigil-check rejects the calibrated file"
gemm=$(grep 'gemm_bf16_tflops:' "$t/th/h100.yaml")
echo "ok: $gemm"
