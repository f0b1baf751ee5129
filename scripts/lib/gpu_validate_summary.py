#!/usr/bin/env python3
"""Summary of a scripts/gpu-validate.sh run: one pass/fail line per item, written to
OUT/summary.md (and appended to --append FILE). Reads only files the script wrote to OUT:

  machine.txt, gpus.csv                nvidia-smi --query-gpu=index,name,... --format=csv
  suite-{quick,full}.json + .time      vigil-check reports and "rc=N wall_s=S"
  hook-healthcheck.time, hook-sanity.json  vigil-check hook (the second with --cuda-sanity)
  allreduce-{nvlink,ib}-vigil.json     vigil-allreduce --json
  allreduce-{nvlink,ib}-nccl-tests.txt all_reduce_perf output (-a 3: slowest rank)
  nvidia-smi.xml                       nvidia-smi -q -x

Items and goals (issue 16): quick suite < 60 s; no `fail` on a node declared healthy;
vigil-allreduce busbw >= 0.99 x all_reduce_perf for every size >= 1 GiB (out-of-place, both
transports), no wrong elements; HBM >= 90% of the SKU's spec; every NVML figure Vigil reported
equal to nvidia-smi's (temperature within 3 C and power within 10%, read moments apart).
GEMM and H2D/D2H are printed as ratios to the spec for the record (status "info").
A missing input is a `fail` of its item, never a silent pass. Exit 0 all items pass, 1 not.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

GIB = 1 << 30
QUICK_SUITE_LIMIT_S = 60.0
HOOK_LIMIT_S = 2.0      # issue 12: the whole hook process, 8 GPUs
SANITY_LIMIT_S = 0.1    # issue 12: the CUDA sanity check, per GPU
ALLREDUCE_RATIO_GOAL = 0.99
HBM_SPEC_FRACTION_GOAL = 0.90

# Spec figures from NVIDIA's product datasheets (HBM GB/s, dense BF16 TFLOP/s without
# sparsity); matched by substring of the nvidia-smi name, first match wins.
SPECS = [
    ("H100 NVL", 3900, 835), ("H100 PCIe", 2000, 756), ("H100", 3350, 989),
    ("H200", 4800, 989), ("GH200", 4000, 989), ("B200", 8000, 2250),
    ("A100-SXM4-80GB", 2039, 312), ("A100 80GB PCIe", 1935, 312), ("A100", 1555, 312),
]
PCIE_GEN_GBPS_PER_LANE = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # per direction


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def read_json(path):
    text = read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def read_time(path):
    text = read_text(path)
    if text is None:
        return None
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    try:
        return int(fields["rc"]), float(fields["wall_s"])
    except (KeyError, ValueError):
        return None


def gpu_names(out):
    text = read_text(os.path.join(out, "gpus.csv")) or ""
    names = {}
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            names[int(parts[0])] = parts[1]
    return names


def spec_for(name):
    for key, hbm, bf16 in SPECS:
        if key in name:
            return hbm, bf16
    return None, None


def measurements(report, check, name):
    """{gpu: value} of one measurement of one check."""
    out = {}
    for c in (report or {}).get("checks", []):
        if c.get("check") != check:
            continue
        for m in c.get("measurements", []):
            if m.get("name") == name:
                out[m.get("gpu", -1)] = m.get("value")
    return out


def parse_nccl_tests(text):
    """{size_bytes: (oop_busbw, oop_wrong)} from all_reduce_perf's table."""
    rows = {}
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) < 13 or line.lstrip().startswith("#") or not f[0].isdigit():
            continue
        try:
            rows[int(f[0])] = (float(f[7]), f[8])
        except ValueError:
            continue
    return rows


def parse_vigil_allreduce(j):
    rows = {}
    for r in (j or {}).get("rows", []):
        oop = r.get("out_of_place", {})
        rows[int(r["size_bytes"])] = (float(oop.get("busbw_gb_s", 0)), oop.get("wrong", 0))
    return rows


class Summary:
    def __init__(self):
        self.items = []  # (status, item, detail)
        self.tables = []

    def add(self, status, item, detail):
        self.items.append((status, item, detail))

    def failed(self):
        return any(s == "fail" for s, _, _ in self.items)

    def markdown(self, header):
        lines = [header, "", "| result | item | detail |", "|---|---|---|"]
        lines += [f"| {s} | {i} | {d} |" for s, i, d in self.items]
        for title, table in self.tables:
            lines += ["", title, ""] + table
        return "\n".join(lines) + "\n"


def suites(out, s, healthy):
    reports = {}
    for suite in ("quick", "full"):
        report = read_json(os.path.join(out, f"suite-{suite}.json"))
        timing = read_time(os.path.join(out, f"suite-{suite}.time"))
        reports[suite] = report
        if report is None or timing is None:
            s.add("fail", f"suite {suite}", f"no report or timing in {out}")
            continue
        rc, wall = timing
        statuses = {}
        for c in report.get("checks", []):
            statuses.setdefault(c.get("status"), []).append(c.get("check"))
        counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(statuses.items()))
        if suite == "quick":
            ok = wall < QUICK_SUITE_LIMIT_S
            s.add("pass" if ok else "fail", "quick suite wall time",
                  f"{wall:.1f} s (goal < {QUICK_SUITE_LIMIT_S:.0f} s), exit {rc}, {counts}")
        else:
            s.add("info", "full suite wall time", f"{wall:.1f} s, exit {rc}, {counts}")
        fails = statuses.get("fail", [])
        errors = statuses.get("error", [])
        if healthy:
            s.add("fail" if fails else "pass", f"no false fail ({suite})",
                  "failed: " + ", ".join(fails) if fails else "no check failed")
        if errors:
            s.add("fail", f"no error ({suite})", "error: " + ", ".join(errors))
    return reports


def hooks(out, s):
    """The hook's whole-process time (goal < 2 s) and gpu_sanity (passes, <= 0.1 s per GPU)."""
    timing = read_time(os.path.join(out, "hook-healthcheck.time"))
    if timing is None:
        s.add("fail", "hook healthcheck wall time", f"no hook-healthcheck.time in {out}")
    else:
        rc, wall = timing
        s.add("pass" if wall < HOOK_LIMIT_S and rc == 0 else "fail", "hook healthcheck wall time",
              f"{wall:.2f} s (goal < {HOOK_LIMIT_S:.0f} s), exit {rc}")
    report = read_json(os.path.join(out, "hook-sanity.json"))
    sanity = next((c for c in (report or {}).get("checks", []) if c.get("check") == "gpu_sanity"),
                  None)
    if sanity is None:
        s.add("fail", "hook gpu_sanity", f"no gpu_sanity result in {out}/hook-sanity.json")
        return
    s.add("pass" if sanity.get("status") == "pass" else "fail", "hook gpu_sanity",
          f"{sanity.get('status')}: {sanity.get('message', '')}")
    times = measurements(report, "gpu_sanity", "sanity_s")
    if times:
        gpu, worst = max(times.items(), key=lambda kv: kv[1])
        s.add("pass" if worst <= SANITY_LIMIT_S else "fail", "hook gpu_sanity time per GPU",
              f"max {worst:.3f} s (gpu{gpu}; goal <= {SANITY_LIMIT_S} s)")


def allreduce(out, s):
    for transport in ("nvlink", "ib"):
        vigil = read_json(os.path.join(out, f"allreduce-{transport}-vigil.json"))
        ref = parse_nccl_tests(read_text(os.path.join(out,
                                                      f"allreduce-{transport}-nccl-tests.txt")))
        mine = parse_vigil_allreduce(vigil)
        item = f"all-reduce {transport}: busbw vs all_reduce_perf at >= 1 GiB"
        if not mine or not ref:
            s.add("fail", item, "missing vigil-allreduce JSON or all_reduce_perf rows")
            continue
        table = ["| size | vigil busbw GB/s | nccl-tests busbw GB/s | ratio |", "|---|---|---|---|"]
        worst, wrong = None, []
        for size in sorted(set(mine) & set(ref)):
            ratio = mine[size][0] / ref[size][0] if ref[size][0] > 0 else 0.0
            table.append(f"| {size} | {mine[size][0]:.2f} | {ref[size][0]:.2f} | {ratio:.3f} |")
            if size >= GIB:
                worst = ratio if worst is None else min(worst, ratio)
            if str(mine[size][1]) not in ("0", "None") or ref[size][1] not in ("0", "N/A"):
                wrong.append(str(size))
        s.tables.append((f"### all-reduce, {transport} (out-of-place busbw)", table))
        if worst is None:
            s.add("fail", item, "no common size >= 1 GiB")
        else:
            s.add("pass" if worst >= ALLREDUCE_RATIO_GOAL else "fail", item,
                  f"lowest ratio {worst:.3f} (goal >= {ALLREDUCE_RATIO_GOAL})")
        s.add("fail" if wrong else "pass", f"all-reduce {transport}: data check",
              "wrong elements at " + ", ".join(wrong) if wrong else "0 wrong elements")


def probes(reports, names, s, hbm_override):
    report = reports.get("full") or reports.get("quick")
    hbm = measurements(report, "gpu_hbm", "hbm_bandwidth")
    if not hbm:
        s.add("fail", "HBM >= 90% of spec", "no hbm_bandwidth measurement")
    for gpu, value in sorted(hbm.items()):
        spec = hbm_override or spec_for(names.get(gpu, ""))[0]
        if not spec:
            s.add("fail", f"HBM gpu{gpu}", f"{value:.0f} GB/s; no spec for "
                  f"'{names.get(gpu, '?')}' (pass --hbm-spec)")
            continue
        ratio = value / spec
        s.add("pass" if ratio >= HBM_SPEC_FRACTION_GOAL else "fail", f"HBM gpu{gpu}",
              f"{value:.0f} GB/s = {ratio:.2f} x spec {spec:.0f} GB/s (goal >= "
              f"{HBM_SPEC_FRACTION_GOAL})")
    for gpu, value in sorted(measurements(report, "gpu_gemm", "gemm_bf16_tflops").items()):
        spec = spec_for(names.get(gpu, ""))[1]
        ratio = f" = {value / spec:.2f} x dense BF16 spec {spec}" if spec else ""
        s.add("info", f"GEMM gpu{gpu}", f"{value:.0f} TFLOP/s{ratio}")
    gens = measurements(reports.get("quick"), "nvml_pcie", "pcie_link_width")
    for name in ("h2d_bandwidth", "d2h_bandwidth"):
        for gpu, value in sorted(measurements(report, "gpu_pcie_bw", name).items()):
            width = gens.get(gpu)
            s.add("info", f"{name} gpu{gpu}", f"{value:.1f} GB/s" +
                  (f" (x{int(width)} link)" if width else ""))


def first_int(text):
    m = re.search(r"-?\d+(\.\d+)?", text or "")
    return float(m.group(0)) if m else None


def smi_figures(xml_text):
    """{gpu index: {vigil measurement: value}} from nvidia-smi -q -x."""
    root = ET.fromstring(xml_text)
    out = {}
    for i, gpu in enumerate(root.findall("gpu")):
        f = {}

        def put(name, path):
            v = first_int(gpu.findtext(path))
            if v is not None:
                f[name] = v
        put("pcie_link_width", "pci/pci_gpu_link_info/link_widths/current_link_width")
        put("pcie_link_gen", "pci/pci_gpu_link_info/pcie_gen/current_link_gen")
        put("gpu_temperature", "temperature/gpu_temp")
        put("gpu_power", "gpu_power_readings/power_draw")
        put("volatile_uncorrected_ecc", "ecc_errors/volatile/dram_uncorrectable")
        put("aggregate_corrected_ecc", "ecc_errors/aggregate/dram_correctable")
        put("row_remap_pending", "remapped_rows/remapped_row_pending")
        put("row_remap_failed", "remapped_rows/remapped_row_failure")
        out[i] = f
    return out


TOLERANCE = {"gpu_temperature": (3.0, 0.0), "gpu_power": (0.0, 0.10)}  # (absolute, relative)


def nvml_vs_smi(out, reports, s):
    text = read_text(os.path.join(out, "nvidia-smi.xml"))
    if text is None:
        s.add("fail", "NVML figures vs nvidia-smi -q", "no nvidia-smi.xml")
        return
    try:
        smi = smi_figures(text)
    except ET.ParseError as e:
        s.add("fail", "NVML figures vs nvidia-smi -q", f"nvidia-smi.xml: {e}")
        return
    compared, differ, uncompared = 0, [], set()
    for c in (reports.get("quick") or {}).get("checks", []):
        if not c.get("check", "").startswith("nvml_"):
            continue
        for m in c.get("measurements", []):
            gpu, name = m.get("gpu"), m.get("name")
            if gpu is None or name not in smi.get(gpu, {}):
                uncompared.add(name)
                continue
            want, got = smi[gpu][name], m.get("value")
            absolute, relative = TOLERANCE.get(name, (0.0, 0.0))
            compared += 1
            if abs(got - want) > max(absolute, relative * abs(want)):
                differ.append(f"gpu{gpu} {name} vigil {got:g} nvidia-smi {want:g}")
    if compared == 0:
        s.add("fail", "NVML figures vs nvidia-smi -q", "nothing compared")
        return
    detail = f"{compared} figures compared" + (": " + "; ".join(differ) if differ else ", equal")
    if uncompared:
        detail += " (no nvidia-smi counterpart: " + ", ".join(sorted(uncompared)) + ")"
    s.add("fail" if differ else "pass", "NVML figures vs nvidia-smi -q", detail)


def main():
    p = argparse.ArgumentParser(description="summary of a gpu-validate.sh run")
    p.add_argument("out", help="the run's output directory")
    p.add_argument("--hbm-spec", type=float, help="HBM spec GB/s (default: from the GPU name)")
    p.add_argument("--healthy", action="store_true", help="any `fail` is a false fail")
    p.add_argument("--append", help="append the summary to this Markdown file")
    args = p.parse_args()
    if not os.path.isdir(args.out):
        print(f"gpu_validate_summary.py: no such directory: {args.out}", file=sys.stderr)
        return 2
    s = Summary()
    names = gpu_names(args.out)
    reports = suites(args.out, s, args.healthy)
    allreduce(args.out, s)
    hooks(args.out, s)
    probes(reports, names, s, args.hbm_spec)
    nvml_vs_smi(args.out, reports, s)
    machine = (read_text(os.path.join(args.out, "machine.txt")) or "").strip().splitlines()
    gpus = sorted(set(names.values()))
    header = (f"## Run {machine[0].split(': ', 1)[-1] if machine else '(date unknown)'}: "
              f"{len(names)} x {', '.join(gpus) or 'unknown GPU'}")
    text = s.markdown(header)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    if args.append:
        with open(args.append, "a") as f:
            f.write("\n" + text)
    print(text, end="")
    return 1 if s.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
