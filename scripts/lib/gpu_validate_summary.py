#!/usr/bin/env python3
"""Summary of a scripts/gpu-validate.sh run: one line per item with pass, fail or info, written
to OUT/summary.md (and appended to --append FILE). Reads only the run's raw directory:

  mode.txt, machine.txt, gpus.csv, libs.txt, slice.txt   what ran where
  help-*.{out,err,time}                                   every bundled binary started
  nvml-shipped.json, nvidia-smi.xml                       NVML figures next to nvidia-smi -q -x
  suite-{quick,full,quick-2}.json + .time                 vigil-check reports (per-check durations)
  hook-{epilog,sanity}-N.json + .time, hook-healthcheck.* the Slurm hook (--no-post)
  hook-under-load-N.json                                  the hook while PyTorch runs matmuls
  reference.out                                           PyTorch's figures (gpu_reference.py)
  allreduce-vigil.json, allreduce-nccl-tests.out          one-process all_reduce, both tools
  busy.json                                               the probes while PyTorch holds the GPU
  sdc-inject.json                                         gpu_sdc with VIGIL_SDC_INJECT=0
  suite-qualify.json + .time                              the qualify suite, 60 s soak (bundles
                                                          from 2026-12-05; older runs have none)
  (no-GPU rehearsal: suite-quick, suite-qualify, hook-*-1, allreduce-host.json, allreduce-vigil.*)

Goals (issue 24): no `fail` and no `error` on a healthy GPU (every suite, every hook run, exit
status 0 from every hook); GEMM and HBM within 5% of PyTorch's figure on the same GPU, same
shape and plan; the quick suite extrapolated to 8 GPUs under 60 s; the hook under 2 s and
gpu_sanity <= 0.1 s per GPU; NVML figures equal to nvidia-smi's; every probe `error`
VIGIL-GPU-BUSY while another process holds the GPU; vigil-allreduce within 5% of
all_reduce_perf's time at >= 64 MiB with no wrong element; the qualify suite passes on a
healthy GPU (its report names the suite, gpu_soak ran every GPU, gpu_sdc found no mismatch over
its repeats). A missing input fails its item.
Exit 0 when no item failed, 1 otherwise, 2 on usage errors.
"""
import argparse
import json
import os
import re
import statistics
import sys
import xml.etree.ElementTree as ET

QUICK_8GPU_LIMIT_S = 60.0
HOOK_LIMIT_S = 2.0
SANITY_PER_GPU_LIMIT_S = 0.1
REFERENCE_TOLERANCE = 0.05      # GEMM, HBM: within 5% of PyTorch on the same GPU
ALLREDUCE_TOLERANCE = 0.05      # one GPU: time per op against all_reduce_perf's
ALLREDUCE_MIN_BYTES = 64 << 20  # below this, launch latency dominates both tools
TARGET_GPUS = 8
CUDA_PROBES = ("gpu_gemm", "gpu_hbm", "gpu_pcie_bw", "gpu_memtest")


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
    """(rc, wall seconds) from a "rc=N wall_s=S" file, or None."""
    fields = dict(kv.split("=", 1) for kv in (read_text(path) or "").split() if "=" in kv)
    try:
        return int(fields["rc"]), float(fields["wall_s"])
    except (KeyError, ValueError):
        return None


def checks_of(report):
    return (report or {}).get("checks", [])


def by_gpu(check):
    """{gpu: {measurement: value}} of one check's result."""
    out = {}
    for m in (check or {}).get("measurements", []):
        out.setdefault(m.get("gpu"), {})[m.get("name")] = m.get("value")
    return out


def measurement(report, check, name):
    """{gpu: value} of one measurement of one check."""
    out = {}
    for c in checks_of(report):
        if c.get("check") == check:
            for m in c.get("measurements", []):
                if m.get("name") == name:
                    out[m.get("gpu", -1)] = m.get("value")
    return out


class Summary:
    def __init__(self, raw):
        self.raw = raw
        self.items = []   # (status, item, detail)
        self.tables = []  # (title, markdown lines)

    def path(self, name):
        return os.path.join(self.raw, name)

    def add(self, status, item, detail):
        self.items.append((status, item, detail))

    def goal(self, ok, item, detail):
        self.add("pass" if ok else "fail", item, detail)

    def failed(self):
        return any(s == "fail" for s, _, _ in self.items)

    def markdown(self, header):
        lines = [header, "", "| result | item | detail |", "|---|---|---|"]
        lines += [f"| {s} | {i} | {d} |" for s, i, d in self.items]
        for title, table in self.tables:
            lines += ["", title, ""] + table
        return "\n".join(lines) + "\n"


def binaries(s):
    names = sorted(f[len("help-"):-len(".time")] for f in os.listdir(s.raw)
                   if f.startswith("help-") and f.endswith(".time"))
    if not names:
        s.add("fail", "every bundled binary starts", "no help-*.time")
        return
    bad = []
    for n in names:
        rc = (read_time(s.path(f"help-{n}.time")) or (None,))[0]
        err = read_text(s.path(f"help-{n}.err")) or ""
        if rc != 0 or "error while loading shared libraries" in err:
            bad.append(f"{n} (exit {rc}: {err.strip()[:120]})")
    s.goal(not bad, "every bundled binary starts",
           "; ".join(bad) if bad else ", ".join(names) + " (--help, exit 0)")
    libs = (read_text(s.path("libs.txt")) or "").strip().replace("\n", "; ")
    if libs:
        s.add("info", "libraries of the machine used", libs)


def statuses(report):
    by = {}
    for c in checks_of(report):
        by.setdefault(c.get("status"), []).append(c.get("check"))
    return by


def no_false_findings(s, item, report, bad_statuses=("fail", "error")):
    if report is None:
        s.add("fail", item, "no report")
        return
    by = statuses(report)
    bad = [f"{c} {st}: " + next((x.get("message", "") for x in checks_of(report)
                                if x.get("check") == c), "")[:100]
           for st in bad_statuses for c in by.get(st, [])]
    counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(by.items()))
    s.goal(not bad, item, "; ".join(bad) if bad else counts)


def suites(s, gpus):
    reports = {}
    for suite in ("quick", "full", "quick-2"):
        report = read_json(s.path(f"suite-{suite}.json"))
        timing = read_time(s.path(f"suite-{suite}.time"))
        reports[suite] = report
        if report is None and suite == "quick-2":
            continue
        no_false_findings(s, f"no fail, no error: suite {suite}", report)
        if report is None or timing is None:
            continue
        table = ["| check | status | s | figures |", "|---|---|---|---|"]
        for c in checks_of(report):
            figs = ", ".join(f"{m.get('name')} {m.get('value') or 0:.6g}" + (f" (gpu{m['gpu']})" if "gpu" in m else "")
                             for m in c.get("measurements", [])[:4])
            table.append(f"| {c.get('check')} | {c.get('status')} | {c.get('duration_s') or 0:.2f} | {figs} |")
        s.tables.append((f"### suite {suite}: {timing[1]:.1f} s, exit {timing[0]}", table))
    quick, timing = reports.get("quick"), read_time(s.path("suite-quick.time"))
    if quick is not None and timing is not None and gpus > 0:
        # The CUDA probes visit the GPUs one after another: their time grows with the count,
        # everything else (NVML, the XID listen window, IB) does not.
        per_gpu = sum(c.get("duration_s") or 0 for c in checks_of(quick)
                      if c.get("check") in CUDA_PROBES) / gpus
        estimate = timing[1] + per_gpu * (TARGET_GPUS - gpus)
        s.goal(estimate < QUICK_8GPU_LIMIT_S, f"quick suite on {TARGET_GPUS} GPUs (estimate)",
               f"{estimate:.1f} s = {timing[1]:.1f} s on {gpus} GPU + {per_gpu:.2f} s of CUDA "
               f"probes per further GPU (goal < {QUICK_8GPU_LIMIT_S:.0f} s)")
    full_t = read_time(s.path("suite-full.time"))
    if full_t:
        s.add("info", "full suite wall time", f"{full_t[1]:.1f} s on {gpus} GPU")
    return reports


def hooks(s, gpus):
    runs = {}
    for kind in ("epilog", "sanity", "under-load"):
        runs[kind] = sorted(f[:-len(".json")] for f in os.listdir(s.raw)
                            if f.startswith(f"hook-{kind}-") and f.endswith(".json"))
    if os.path.exists(s.path("hook-healthcheck.json")):
        runs["healthcheck"] = ["hook-healthcheck"]
    every = [n for names in runs.values() for n in names]
    if not every:
        s.add("fail", "hook", "no hook-*.json")
        return
    nonzero = [f"{n} exit {t[0]}" for n in every for t in [read_time(s.path(n + ".time"))] if t and t[0] != 0]
    s.goal(not nonzero, "hook exit status 0 on a healthy GPU", "; ".join(nonzero) or
           f"{len(every)} runs, all exit 0")
    findings = []
    for n in every:
        report = read_json(s.path(n + ".json"))
        for c in checks_of(report):
            if c.get("status") in ("fail", "error"):
                findings.append(f"{n}: {c.get('check')} {c.get('status')}: {c.get('message', '')[:80]}")
        if report is None:
            findings.append(f"{n}: no report")
    s.goal(not findings, "no fail, no error: hook", "; ".join(findings) or
           f"{len(every)} runs (" + ", ".join(f"{k} {len(v)}" for k, v in runs.items() if v) + ")")
    for kind in ("epilog", "sanity"):
        walls = [t[1] for n in runs[kind] for t in [read_time(s.path(n + ".time"))] if t]
        if walls:
            med = statistics.median(walls)
            label = "hook epilog" + (" --cuda-sanity" if kind == "sanity" else "")
            s.goal(med < HOOK_LIMIT_S, f"{label} wall time",
                   f"median {med:.3f} s of {len(walls)} (" + ", ".join(f"{w:.3f}" for w in walls) +
                   f"; goal < {HOOK_LIMIT_S:.0f} s)")
    sanity = [v for n in runs["sanity"] for v in
              measurement(read_json(s.path(n + ".json")), "gpu_sanity", "sanity_s").values()]
    if runs["sanity"]:
        if sanity:
            s.goal(max(sanity) <= SANITY_PER_GPU_LIMIT_S, "gpu_sanity per GPU",
                   f"max {max(sanity):.4f} s (goal <= {SANITY_PER_GPU_LIMIT_S} s; context, kernel, "
                   "verify; the process's own CUDA start is in the wall time above)")
        else:
            s.add("fail", "gpu_sanity per GPU", "no sanity_s measurement")
    xid = [c for n in every for c in checks_of(read_json(s.path(n + ".json")))
           if c.get("check") == "kmsg_xid"]
    if xid:
        s.add("info", "kmsg_xid on this kernel's /dev/kmsg", xid[0].get("message", ""))
    if runs["under-load"]:
        clock = [c.get("message", "") for n in runs["under-load"]
                 for c in checks_of(read_json(s.path(n + ".json"))) if c.get("check") == "nvml_clock_events"]
        s.add("info", "hook under a PyTorch matmul load", f"{len(runs['under-load'])} runs; "
              f"nvml_clock_events: {'; '.join(sorted(set(clock)))}")


def reference_ratios(s, reports, ref):
    if ref is None:
        s.add("fail", "PyTorch reference", "no reference.out (python3 with PyTorch on the GPU machine?)")
        return
    rows = [("gpu_gemm", "gemm_bf16_tflops", "gemm_bf16_tflops_{}", "TFLOP/s", True),
            ("gpu_hbm", "hbm_bandwidth", "hbm_copy_gbps_{}", "GB/s", True),
            ("gpu_pcie_bw", "h2d_bandwidth", "h2d_gbps_{}", "GB/s", False),
            ("gpu_pcie_bw", "d2h_bandwidth", "d2h_gbps_{}", "GB/s", False)]
    table = ["| figure | suite | Vigil | PyTorch | ratio |", "|---|---|---|---|---|"]
    for check, name, key, unit, judged in rows:
        for suite in ("quick", "full"):
            mine = measurement(reports.get(suite), check, name).get(0)
            theirs = ref.get(key.format(suite))
            item = f"{name} ({suite}) vs PyTorch"
            if mine is None or not theirs:
                s.add("fail" if judged else "info", item, "no figure from Vigil or PyTorch")
                continue
            ratio = mine / theirs
            table.append(f"| {name} | {suite} | {mine:.1f} | {theirs:.1f} | {ratio:.3f} |")
            detail = f"{mine:.1f} / {theirs:.1f} {unit} = {ratio:.3f}"
            if judged:
                s.goal(abs(ratio - 1) <= REFERENCE_TOLERANCE, item,
                       detail + f" (goal within {REFERENCE_TOLERANCE:.0%})")
            else:
                s.add("info", item, detail + " (pinned-memory copy)")
    if "gemm_bf16_tflops_zeros_quick" in ref:
        table.append(f"| gemm_bf16_tflops on zeros (PyTorch only) | quick | | "
                     f"{ref['gemm_bf16_tflops_zeros_quick']:.1f} | |")
    s.tables.append(("### Vigil's CUDA probes next to PyTorch on the same GPU", table))
    spread = []
    for check, name, _, _, _ in rows:
        a = measurement(reports.get("quick"), check, name).get(0)
        b = measurement(reports.get("quick-2"), check, name).get(0)
        if a and b:
            spread.append(f"{name} {abs(a - b) / max(a, b):.1%}")
    if spread:
        s.add("info", "run-to-run spread (quick, twice)", ", ".join(spread))


def memtest(s, reports):
    for suite in ("quick", "full"):
        report = reports.get(suite)
        cov = measurement(report, "gpu_memtest", "memtest_coverage")
        mib = measurement(report, "gpu_memtest", "memtest_tested")
        dur = next((c.get("duration_s") for c in checks_of(report) if c.get("check") == "gpu_memtest"), None)
        if cov:
            s.add("info", f"memtest coverage ({suite})", ", ".join(
                f"gpu{g} {mib.get(g, 0) / 1024:.1f} GiB = {v:.1f}% of its memory" for g, v in sorted(cov.items()))
                + (f", {dur:.2f} s" if dur is not None else ""))


def parse_nccl_tests(text):
    """{size: (oop time us, oop wrong)} from all_reduce_perf's table."""
    rows = {}
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) >= 13 and f[0].isdigit():
            try:
                rows[int(f[0])] = (float(f[5]), f[8])
            except ValueError:
                pass
    return rows


def sdc(s, reports):
    """gpu_sdc on the healthy GPU (the full suite) and with one injected bit flip."""
    if not has_sdc(reports):
        return
    healthy = next(c for c in checks_of(reports["full"]) if c.get("check") == "gpu_sdc")
    counts = [m.get("value") for m in healthy.get("measurements", []) if m.get("name") == "sdc_mismatches"]
    s.goal(healthy.get("status") == "pass" and counts and not any(counts),
           "gpu_sdc on a healthy GPU (full suite)",
           f"{healthy.get('status')}, sdc_mismatches {counts}, {healthy.get('duration_s') or 0:.1f} s: "
           + (healthy.get("message") or "")[:160])
    report = read_json(s.path("sdc-inject.json"))
    injected = next((c for c in checks_of(report) if c.get("check") == "gpu_sdc"), None)
    if injected is None:
        s.add("fail", "gpu_sdc finds one injected bit flip", "no gpu_sdc in sdc-inject.json")
        return
    message = injected.get("message") or ""
    s.goal(injected.get("status") == "fail" and injected.get("fault_code") == "VIGIL-CUDA-SDC-MISMATCHES"
           and "gpu 0 bf16" in message and "(row 17, col 4000)" in message,
           "gpu_sdc finds one injected bit flip",
           f"{injected.get('status')} {injected.get('fault_code')}: {message[:300]}")


def planned(s, step):
    """Whether the run's script planned `step` (planned.txt, bundles from 2026-12-05 on)."""
    return step in (read_text(s.path("planned.txt")) or "").split()


def qualify(s, gpus):
    """The qualify suite with a short soak on a healthy GPU (issue 45 item 5, docs/qualify.md)."""
    path, timing = s.path("suite-qualify.json"), read_time(s.path("suite-qualify.time"))
    if timing is None and not os.path.exists(path):
        if planned(s, "suite-qualify"):
            s.add("fail", "no fail, no error: suite qualify", "the step did not run (the run stopped before it?)")
        return  # a bundle from before the step
    report = read_json(path)
    no_false_findings(s, "no fail, no error: suite qualify", report)
    if report is None:
        return
    s.goal(report.get("suite") == "qualify", "the qualify report names its suite",
           f"suite {report.get('suite')!r} (the drainer's gate counts only a report of its suite)")
    by = {c.get("check"): c for c in checks_of(report)}
    soak = by.get("gpu_soak")
    if soak is None:
        s.add("fail", "gpu_soak under load", "no gpu_soak in the qualify report")
    else:
        figures = by_gpu(soak)
        loaded = [g for g, f in figures.items() if (f.get("soak_tflops") or 0) > 0
                  and (f.get("soak_sm_clock") or 0) > 0]
        s.goal(soak.get("status") in ("pass", "warn") and len(figures) == gpus and len(loaded) == gpus,
               "gpu_soak under load",
               f"{soak.get('status')} in {soak.get('duration_s') or 0:.1f} s: " + "; ".join(
                   f"gpu{g} {f.get('soak_tflops') or 0:.1f} TFLOP/s, {f.get('soak_sm_clock') or 0:.0f} MHz, "
                   f"{f.get('soak_power') or 0:.1f} W, {f.get('soak_temperature') or 0:.0f} C, "
                   f"slowdown {f.get('soak_slowdown') or 0:.0f}%" for g, f in sorted(figures.items(), key=str)))
    pcie = by.get("gpu_pcie_bw")
    if pcie is None:
        s.add("fail", "PCIe both directions at once (qualify)", "no gpu_pcie_bw in the qualify report")
    else:
        per = by_gpu(pcie)
        rows = [f"gpu{g} {f['bidir_bandwidth'] or 0:.1f} GB/s both ways (one way "
                f"{f.get('h2d_bandwidth') or 0:.1f} / {f.get('d2h_bandwidth') or 0:.1f})"
                for g, f in sorted(per.items(), key=str) if "bidir_bandwidth" in f]
        s.add("info" if rows and len(rows) == len(per) else "fail",
              "PCIe both directions at once (qualify)",
              "; ".join(rows) or "no bidir_bandwidth in the qualify run's gpu_pcie_bw")
    sdc_check = by.get("gpu_sdc")
    if sdc_check is None:
        s.add("fail", "gpu_sdc: no mismatch over the qualify repeats", "no gpu_sdc in the qualify report")
    else:
        counts = list(measurement(report, "gpu_sdc", "sdc_mismatches").values())
        s.goal(sdc_check.get("status") == "pass" and counts and not any(counts),
               "gpu_sdc: no mismatch over the qualify repeats",
               f"{sdc_check.get('status')}, sdc_mismatches {counts}, {sdc_check.get('duration_s') or 0:.1f} s: "
               + (sdc_check.get("message") or "")[:200])
    if timing:
        s.add("info", "qualify suite wall time", f"{timing[1]:.1f} s, exit {timing[0]}")


def allreduce(s, gpus):
    vigil = read_json(s.path("allreduce-vigil.json"))
    mine = {}
    for r in (vigil or {}).get("rows", []):
        oop = r.get("out_of_place", {})
        mine[int(r["size_bytes"])] = (float(oop.get("time_us", 0)), oop.get("wrong", 0))
    ref = parse_nccl_tests(read_text(s.path("allreduce-nccl-tests.out")))
    item = "vigil-allreduce vs all_reduce_perf (time per op)"
    if not mine or not ref:
        s.add("fail", item, "missing vigil-allreduce JSON or all_reduce_perf rows")
        return
    table = ["| size | vigil us | nccl-tests us | nccl-tests / vigil |", "|---|---|---|---|"]
    worst, wrong = None, []
    for size in sorted(set(mine) & set(ref)):
        ratio = ref[size][0] / mine[size][0] if mine[size][0] > 0 else 0.0
        table.append(f"| {size} | {mine[size][0]:.2f} | {ref[size][0]:.2f} | {ratio:.3f} |")
        if size >= ALLREDUCE_MIN_BYTES:
            worst = ratio if worst is None else min(worst, ratio)
        if str(mine[size][1]) not in ("0", "None") or ref[size][1] not in ("0", "N/A"):
            wrong.append(str(size))
    s.tables.append((f"### all_reduce, one process, {gpus} GPU (out-of-place; busbw is 0 on one "
                     "rank by definition)", table))
    if worst is None:
        s.add("fail", item, f"no common size >= {ALLREDUCE_MIN_BYTES >> 20} MiB")
    else:
        s.goal(worst >= 1 - ALLREDUCE_TOLERANCE, item,
               f"lowest speed ratio {worst:.3f} at >= {ALLREDUCE_MIN_BYTES >> 20} MiB (goal >= "
               f"{1 - ALLREDUCE_TOLERANCE}); on one GPU this validates the NCCL path, timing and "
               "data check, not a bus bandwidth")
    s.goal(not wrong, "all_reduce data check", "wrong elements at " + ", ".join(wrong) if wrong
           else f"0 wrong elements in both tools (NCCL {(vigil or {}).get('nccl_version', '?')})")
    # vigil-allreduce's record of NCCL's choice, read from the TUNING log it keeps itself (a job's
    # own NCCL_DEBUG switches that log off: the run leaves NCCL_DEBUG unset for this step).
    algos = (vigil or {}).get("nccl_algorithms", [])
    env = (vigil or {}).get("nccl_env", {})
    if algos:
        detail = ", ".join(f"{a['size_bytes'] >> 20} MiB {a['algorithm']}/{a['protocol']}"
                           for a in algos)
    elif "TUNING" in env.get("NCCL_DEBUG_SUBSYS", "").split(","):
        detail = (f"none recorded from NCCL's TUNING log on {gpus} rank(s) (one rank: NCCL "
                  "runs no collective algorithm)")
    else:
        detail = "not logged: NCCL_DEBUG was set for the run, so vigil-allreduce kept no TUNING log"
    s.add("info", "NCCL algorithm recorded by vigil-allreduce", detail)
    # What NCCL connected over (INIT/NET lines of the same log; docs/nccl-bench.md).
    transport = (vigil or {}).get("nccl_transport")
    if transport is not None:
        detail = (f"network {transport.get('network', '?')}, "
                  f"{transport.get('net_connections', 0)} network and "
                  f"{transport.get('gdr_connections', 0)} GPUDirect connections, "
                  f"NVLS {'on' if transport.get('nvls') else 'off'}, "
                  f"{len(transport.get('paths', []))} peer paths")
        s.add("info", "NCCL transport recorded by vigil-allreduce", detail)


def has_sdc(reports):
    """Whether the run's bundle has gpu_sdc (bundles before 2026-12-04 do not)."""
    return any(c.get("check") == "gpu_sdc" for c in checks_of(reports.get("full")))


def busy(s, reports):
    report = read_json(s.path("busy.json"))
    if report is None:
        s.add("fail", "busy-GPU guard", "no busy.json")
        return
    got = {c.get("check"): (c.get("status"), c.get("fault_code")) for c in checks_of(report)}
    bad = [f"{k} {v[0]} {v[1]}" for k, v in got.items() if v != ("error", "VIGIL-GPU-BUSY")]
    expected = CUDA_PROBES + (("gpu_sdc",) if has_sdc(reports) else ())
    missing = [p for p in expected if p not in got]
    s.goal(not bad and not missing, "busy-GPU guard (PyTorch holds the GPU)",
           "; ".join(bad + [f"{m} missing" for m in missing]) or
           "every probe error VIGIL-GPU-BUSY: " + next(iter(checks_of(report)), {}).get("message", "")[:100])


def first_number(text):
    m = re.search(r"-?\d+(\.\d+)?", text or "")
    return float(m.group(0)) if m else None


def smi_figures(xml_text):
    """{gpu index: {Vigil measurement: value}} from nvidia-smi -q -x (driver 580's tags)."""
    root = ET.fromstring(xml_text)
    flags = {"Active": 1.0, "Not Active": 0.0, "Yes": 1.0, "No": 0.0}
    out = {}
    for i, gpu in enumerate(root.findall("gpu")):
        f = {}
        for name, path in (
                ("pcie_link_width", "pci/pci_gpu_link_info/link_widths/current_link_width"),
                ("pcie_link_gen", "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
                ("gpu_temperature", "temperature/gpu_temp"),
                ("gpu_power", "gpu_power_readings/average_power_draw"),
                ("volatile_uncorrected_ecc", "ecc_errors/volatile/dram_uncorrectable"),
                ("aggregate_corrected_ecc", "ecc_errors/aggregate/dram_correctable")):
            v = first_number(gpu.findtext(path))
            if v is not None:
                f[name] = v
        for name, path in (
                ("row_remap_pending", "remapped_rows/remapped_row_pending"),
                ("row_remap_failed", "remapped_rows/remapped_row_failure"),
                ("hw_slowdown", "clocks_event_reasons/clocks_event_reason_hw_slowdown"),
                ("hw_thermal_slowdown", "clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown"),
                ("hw_power_brake", "clocks_event_reasons/clocks_event_reason_hw_power_brake_slowdown"),
                ("sw_thermal_slowdown", "clocks_event_reasons/clocks_event_reason_sw_thermal_slowdown")):
            text = (gpu.findtext(path) or "").strip()
            if text in flags:
                f[name] = flags[text]
        out[i] = f
    return out


# Read moments apart: temperature within 3 C, power within 10% (absolute, relative).
TOLERANCE = {"gpu_temperature": (3.0, 0.0), "gpu_power": (0.0, 0.10)}


def nvml_vs_smi(s):
    text = read_text(s.path("nvidia-smi.xml"))
    report = read_json(s.path("nvml-shipped.json"))
    item = "NVML figures vs nvidia-smi -q -x"
    if text is None or report is None:
        s.add("fail", item, "no nvidia-smi.xml or nvml-shipped.json")
        return
    try:
        smi = smi_figures(text)
    except ET.ParseError as e:
        s.add("fail", item, f"nvidia-smi.xml: {e}")
        return
    compared, differ, uncompared = 0, [], set()
    for c in checks_of(report):
        for m in c.get("measurements", []):
            gpu, name = m.get("gpu"), m.get("name")
            if name == "gpu_count":
                want, gpu = float(len(smi)), 0
            elif gpu is None or name not in smi.get(gpu, {}):
                uncompared.add(name)
                continue
            else:
                want = smi[gpu][name]
            absolute, relative = TOLERANCE.get(name, (0.0, 0.0))
            compared += 1
            if abs(m.get("value") - want) > max(absolute, relative * abs(want)):
                differ.append(f"gpu{gpu} {name} vigil {m.get('value'):g} nvidia-smi {want:g}")
    detail = f"{compared} figures compared" + (": " + "; ".join(differ) if differ else ", all equal")
    if uncompared:
        detail += " (no nvidia-smi counterpart: " + ", ".join(sorted(uncompared)) + ")"
    s.goal(compared > 0 and not differ, item, detail)
    # Fabric registration and the recovery action have no figure to compare: their verdicts are
    # recorded next to nvidia-smi's own <fabric> block (nvidia-smi.xml) for a reader to check.
    for name in ("nvml_fabric", "nvml_recovery"):
        c = next((c for c in checks_of(report) if c.get("check") == name), None)
        s.add("info", f"{name} on a real driver",
              f"{c.get('status')}: {c.get('message', '')}" if c else "not in the report")
    sku = report.get("sku") or "unknown"
    count = next((c for c in checks_of(report) if c.get("check") == "gpu_count"), {})
    s.add("info", "SKU detected with the shipped thresholds",
          f"{sku}; gpu_count {count.get('status')}: {count.get('message', '')}")


def no_gpu(s):
    """The rehearsal: everything starts, no GPU check fails, the MPI runtime runs one process."""
    quick = read_json(s.path("suite-quick.json"))
    no_false_findings(s, "no GPU check fails without a GPU (quick)", quick, ("fail",))
    if read_time(s.path("suite-qualify.time")) is not None:  # bundles from 2026-12-05 on
        no_false_findings(s, "no GPU check fails without a GPU (qualify)",
                          read_json(s.path("suite-qualify.json")), ("fail",))
    gpu_checks = [c for c in checks_of(quick) if c.get("check", "").startswith(("gpu_", "nvml_", "nccl_"))]
    unclear = [c.get("check") for c in gpu_checks if c.get("status") in ("error", "skipped")
               and not c.get("message")]
    s.goal(gpu_checks and not unclear, "every GPU check error/skipped with a message",
           ", ".join(unclear) or ", ".join(f"{c['check']} {c['status']}" for c in gpu_checks))
    for n in ("hook-epilog-1", "hook-sanity-1"):
        t = read_time(s.path(n + ".time"))
        s.goal(t is not None and t[0] == 0, f"{n} exit status 0 without a GPU",
               f"exit {t[0] if t else 'missing'}")
    host = read_json(s.path("allreduce-host.json"))
    s.goal(bool(host) and host.get("result") == "ok", "bundled MPI runtime (one process, host backend)",
           f"result {(host or {}).get('result')}, MPI {(host or {}).get('mpi_version', '?')[:60]}")
    t = read_time(s.path("allreduce-vigil.time"))
    out = read_text(s.path("allreduce-vigil.out")) or ""
    s.goal(t is not None and t[0] != 0 and "setup_error" in out, "NCCL backend without a GPU refuses clearly",
           f"exit {t[0] if t else 'missing'}: " + next((l for l in out.splitlines() if "Result" in l), "")[:160])


def main():
    p = argparse.ArgumentParser(description="summary of a gpu-validate.sh run")
    p.add_argument("raw", help="the run's raw directory")
    p.add_argument("--out", help="where summary.md goes (default: the raw directory)")
    p.add_argument("--append", help="also append the summary to this Markdown file")
    args = p.parse_args()
    if not os.path.isdir(args.raw):
        print(f"gpu_validate_summary.py: no such directory: {args.raw}", file=sys.stderr)
        return 2
    s = Summary(args.raw)
    mode = (read_text(s.path("mode.txt")) or "").strip()
    machine = dict(l.split(": ", 1) for l in (read_text(s.path("machine.txt")) or "").splitlines() if ": " in l)
    names = [l.split(",")[1].strip() for l in (read_text(s.path("gpus.csv")) or "").splitlines()[1:] if "," in l]
    binaries(s)
    if mode == "mode=gpu":
        nvml_vs_smi(s)
        reports = suites(s, len(names))
        hooks(s, len(names))
        reference_ratios(s, reports, read_json(s.path("reference.out")))
        memtest(s, reports)
        sdc(s, reports)
        qualify(s, len(names))
        allreduce(s, len(names))
        busy(s, reports)
        what = f"{len(names)} x {', '.join(sorted(set(names)))}, driver {machine.get('driver', '?')}"
    elif mode == "mode=no-gpu":
        no_gpu(s)
        what = "rehearsal without a GPU"
    else:
        s.add("fail", "run mode", f"mode.txt says '{mode}'")
        what = "unknown"
    header = f"## Run {machine.get('date', '(date unknown)')}: {what}"
    if machine.get("bundle"):
        header += f"\n\nBundle: {machine['bundle'].strip()}. Machine: {machine.get('os', '?')}, " \
                  f"kernel {machine.get('kernel', '?')}" + \
                  (f", PyTorch {machine['torch']}" if machine.get("torch") else "") + "."
    text = s.markdown(header)
    with open(os.path.join(args.out or args.raw, "summary.md"), "w") as f:
        f.write(text)
    if args.append:
        with open(args.append, "a") as f:
            f.write("\n" + text)
    print(text, end="")
    return 1 if s.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
