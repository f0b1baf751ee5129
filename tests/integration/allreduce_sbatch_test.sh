#!/usr/bin/env bash
# 2-node all_reduce on the local Slurm cluster (issue 3):
#   allreduce_sbatch_test.sh REPO VIGIL_ALLREDUCE
# Starts a private 2-node cluster (scripts/local-cluster.sh), submits one `sbatch -N 2` job in
# which mpirun runs vigil-allreduce --backend host with one rank per node, and checks that the
# run passed its data check on 2 ranks spread over 2 nodes, that the JSON and the table agree,
# and that the table footer is there. The cluster and the temp dir are removed on every exit.
set -euo pipefail

repo=${1:?usage: allreduce_sbatch_test.sh REPO VIGIL_ALLREDUCE}
bin=${2:?usage: allreduce_sbatch_test.sh REPO VIGIL_ALLREDUCE}
cluster=$(mktemp -d /tmp/vigil-ar.XXXXXX)
work=$(mktemp -d /tmp/vigil-ar-work.XXXXXX)
cleanup() {
  "$repo/scripts/local-cluster.sh" stop "$cluster" --clean || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "allreduce_sbatch_test: FAIL: $*" >&2
  for f in "$work"/slurm.out "$work"/table.txt "$work"/err.txt; do
    [[ -f $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
  done
  exit 1
}

"$repo/scripts/local-cluster.sh" start "$cluster" --nodes 2
# shellcheck disable=SC1091
source "$cluster/env"

cat >"$work/job.sh" <<JOB
#!/usr/bin/env bash
# One rank per node; mpirun starts its daemon on the second node through Slurm.
mpirun --allow-run-as-root --oversubscribe -np 2 --map-by node \\
  "$bin" --backend host -b 64K -e 4M -f 4 -w 2 -n 10 --timeout 120 \\
  --json "$work/run.json" >"$work/table.txt" 2>"$work/err.txt"
echo \$? >"$work/rc"
JOB
chmod +x "$work/job.sh"

timeout 300 sbatch --wait -N 2 --ntasks-per-node=1 -t 5 -o "$work/slurm.out" "$work/job.sh" \
  || fail "sbatch -N 2 job failed (exit $?)"

[[ -f $work/rc ]] || fail "the job did not run mpirun"
rc=$(cat "$work/rc")
[[ $rc == 0 ]] || fail "vigil-allreduce exited with $rc"

python3 - "$work/run.json" "$work/table.txt" <<'PY' || fail "result check failed"
import json, re, sys
run = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
def check(cond, what):
    if not cond:
        sys.exit(f"allreduce_sbatch_test: {what}: {json.dumps(run)[:2000]}")
check(run["result"] == "ok", "result is not ok")
check(run["ranks"] == 2, "not 2 ranks")
check(run["nodes"] == 2, "ranks did not span 2 nodes")
check(sorted(run["hostnames"]) == ["gpu-0", "gpu-1"], "hostnames are not gpu-0, gpu-1")
check(run["out_of_bounds"] == 0, "data check found wrong values")
check(len(run["rows"]) == 4, "expected 4 sizes (64K..4M, factor 4)")
for row in run["rows"]:
    for p in ("out_of_place", "in_place"):
        pt = row[p]
        algbw = row["size_bytes"] / 1e9 / (pt["time_us"] * 1e-6)
        check(abs(pt["algbw_gb_s"] - algbw) <= 1e-9 * algbw, "algbw arithmetic")
        check(abs(pt["busbw_gb_s"] - algbw) <= 1e-9 * algbw, "busbw with 2 ranks equals algbw")
        check(pt["wrong"] == 0, "wrong values")
rows = [l.split() for l in table.splitlines() if re.match(r"^\s*\d", l)]
check([int(r[0]) for r in rows] == [r["size_bytes"] for r in run["rows"]], "table rows != JSON rows")
check("# Out of bounds values : 0 OK" in table, "table footer missing")
m = re.search(r"# Avg bus bandwidth\s*:\s*(\S+)", table)
check(m and abs(float(m.group(1)) - run["avg_busbw_gb_s"]) <= 1e-4 * run["avg_busbw_gb_s"] + 1e-6,
      "Avg bus bandwidth footer != JSON")
print(f"allreduce_sbatch_test: OK: 2 ranks on {sorted(set(run['hostnames']))}, "
      f"avg busbw {run['avg_busbw_gb_s']:.3f} GB/s")
PY
