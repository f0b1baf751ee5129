#!/usr/bin/env python3
"""What of scripts/gpu-validate.sh and scripts/gpu-bundle.sh runs without a GPU: shellcheck,
argument handling, and the summary writer (through --summary-only) on genuine runs.

The fixtures in tests/fixtures/gpu-validation/ are the raw outputs of real runs (SOURCES.md):
three on an NVIDIA H200 (run 1 and 2 show defects that were fixed after them, run 3 is the
accepted run) and one rehearsal in a bare Debian root without a GPU. Mutations of run 3 cross
one goal each.
"""
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "gpu-validate.sh")
BUNDLE = os.path.join(REPO, "scripts", "gpu-bundle.sh")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "gpu-validation")


def run(*args, script=SCRIPT):
    return subprocess.run(["bash", script, *args], capture_output=True, text=True, timeout=120)


class Run:
    """A copy of one fixture's raw directory, to read or change, packed for --summary-only."""

    def __init__(self, fixture):
        self.tmp = tempfile.mkdtemp()
        with tarfile.open(os.path.join(FIXTURES, fixture)) as t:
            t.extractall(self.tmp)
        self.raw = os.path.join(self.tmp, "raw")

    def json(self, name):
        with open(os.path.join(self.raw, name)) as f:
            return json.load(f)

    def put_json(self, name, value):
        with open(os.path.join(self.raw, name), "w") as f:
            json.dump(value, f)

    def summary(self):
        out = os.path.join(self.tmp, "out")
        os.makedirs(out, exist_ok=True)
        with tarfile.open(os.path.join(out, "raw.tar.gz"), "w:gz") as t:
            t.add(self.raw, arcname="raw")
        r = run("--summary-only", out)
        with open(os.path.join(out, "summary.md")) as f:
            text = f.read()
        return r.returncode, text

    def close(self):
        shutil.rmtree(self.tmp)


def summary_of(fixture):
    """(exit status, summary.md) of an unchanged fixture."""
    r = Run(fixture)
    try:
        return r.summary()
    finally:
        r.close()


def line(text, item):
    """The summary row of an item: '| result | item | detail |'."""
    for l in text.splitlines():
        cells = [c.strip() for c in l.split("|")]
        if len(cells) > 3 and cells[2] == item:
            return cells[1], cells[3]
    raise AssertionError(f"no row '{item}' in:\n{text}")


class Scripts(unittest.TestCase):
    def test_shellcheck_finds_nothing(self):
        if not shutil.which("shellcheck"):
            self.fail("shellcheck is not installed (scripts/install-deps.sh installs it)")
        r = subprocess.run(["shellcheck", "-S", "warning", SCRIPT, BUNDLE,
                            os.path.join(REPO, "tests", "checks", "cuda", "gpu_bundle_test.sh")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_bad_arguments_are_named_and_exit_2(self):
        cases = [([], "--bundle DIR is required"),
                 (["--bundle", "/nonexistent", "--out", "/tmp/x"], "--bundle: no such directory"),
                 (["--bundle", REPO, "--out", "/tmp/x"], "is not a bundle"),
                 (["--max-bytes", "lots"], "--max-bytes must look like"),
                 (["--frobnicate"], "unknown argument '--frobnicate'"),
                 (["--out"], "--out needs a value"),
                 (["--summary-only", "/nonexistent"], "no /nonexistent/raw.tar.gz")]
        for args, message in cases:
            r = run(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(message, r.stderr, args)
        r = run("--archs", "sm90", script=BUNDLE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--archs must look like", r.stderr)

    def test_help_documents_the_exit_status(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Exit status: 0 every item passed, 1 an item failed, 2 usage or setup error",
                      r.stdout)


class AcceptedH200Run(unittest.TestCase):
    """Run 3 on the H200 (2026-11-26): every goal met."""

    def setUp(self):
        self.run = Run("2026-11-26-h200-run3.tar.gz")

    def tearDown(self):
        self.run.close()

    def test_every_goal_passes_with_the_measured_ratios(self):
        rc, text = self.run.summary()
        self.assertEqual(rc, 0, text)
        self.assertNotIn("| fail |", text)
        self.assertEqual(line(text, "hbm_bandwidth (full) vs PyTorch"),
                         ("pass", "4298.6 / 4292.4 GB/s = 1.001 (goal within 5%)"))
        self.assertEqual(line(text, "gemm_bf16_tflops (quick) vs PyTorch")[1],
                         "678.3 / 690.9 TFLOP/s = 0.982 (goal within 5%)")
        self.assertIn("36.8 s = 6.7 s on 1 GPU", line(text, "quick suite on 8 GPUs (estimate)")[1])
        self.assertEqual(line(text, "hook exit status 0 on a healthy GPU"),
                         ("pass", "12 runs, all exit 0"))
        self.assertIn("13 figures compared, all equal", line(text, "NVML figures vs nvidia-smi -q -x")[1])
        self.assertIn("gpu0 118.4 GiB = 84.7% of its memory", line(text, "memtest coverage (full)")[1])
        self.assertIn("H200-SXM-141GB; gpu_count fail: 1 of 8 GPUs visible",
                      line(text, "SKU detected with the shipped thresholds")[1])

    def test_a_gemm_5_percent_off_pytorch_fails(self):
        ref = self.run.json("reference.out")
        ref["gemm_bf16_tflops_full"] *= 1.07
        self.run.put_json("reference.out", ref)
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "gemm_bf16_tflops (full) vs PyTorch")[0], "fail")

    def test_a_probe_that_measures_a_busy_gpu_fails_the_guard(self):
        busy = self.run.json("busy.json")
        busy["checks"][0]["status"] = "pass"
        busy["checks"][0]["fault_code"] = ""
        self.run.put_json("busy.json", busy)
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        status, detail = line(text, "busy-GPU guard (PyTorch holds the GPU)")
        self.assertEqual(status, "fail")
        self.assertIn("gpu_gemm pass", detail)

    def test_an_nvml_figure_nvidia_smi_disagrees_with_fails(self):
        report = self.run.json("nvml-shipped.json")
        for c in report["checks"]:
            for m in c.get("measurements", []):
                if m["name"] == "pcie_link_width":
                    m["value"] = 8
        self.run.put_json("nvml-shipped.json", report)
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertIn("gpu0 pcie_link_width vigil 8 nvidia-smi 16",
                      line(text, "NVML figures vs nvidia-smi -q -x")[1])

    def test_a_missing_input_fails_its_item_never_passes(self):
        os.remove(os.path.join(self.run.raw, "allreduce-nccl-tests.out"))
        os.remove(os.path.join(self.run.raw, "reference.out"))
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "vigil-allreduce vs all_reduce_perf (time per op)")[0], "fail")
        self.assertEqual(line(text, "PyTorch reference")[0], "fail")


class FinalH200Run(unittest.TestCase):
    def test_run_4_on_the_final_code_passes_and_detects_the_h200_by_its_id(self):
        rc, text = summary_of("2026-11-26-h200-run4.tar.gz")
        self.assertEqual(rc, 0, text)
        self.assertIn("H200-SXM-141GB", line(text, "SKU detected with the shipped thresholds")[1])


class H200Run7(unittest.TestCase):
    def test_run_7_records_nccls_transport_and_reads_the_tuning_log_it_asked_for(self):
        rc, text = summary_of("2026-12-04-h200-run7.tar.gz")
        self.assertEqual(rc, 0, text)
        # vigil-allreduce asked for INIT,NET,TUNING itself: its log was kept and held no
        # algorithm for one rank (the summary once read that as "NCCL_DEBUG was set").
        self.assertIn("none recorded from NCCL's TUNING log on 1 rank(s)",
                      line(text, "NCCL algorithm recorded by vigil-allreduce")[1])
        self.assertEqual(line(text, "NCCL transport recorded by vigil-allreduce")[1],
                         "network Socket, 0 network and 0 GPUDirect connections, NVLS off, "
                         "0 peer paths")


class H200Run8(unittest.TestCase):
    def test_run_8_passes_gpu_sdc_on_the_healthy_gpu_and_finds_the_injected_flip(self):
        rc, text = summary_of("2026-12-04-h200-run8.tar.gz")
        self.assertEqual(rc, 0, text)
        self.assertEqual(line(text, "gpu_sdc on a healthy GPU (full suite)")[0], "pass")
        status, detail = line(text, "gpu_sdc finds one injected bit flip")
        self.assertEqual(status, "pass")
        self.assertIn("gpu 0 bf16: 1 element of 67108864 wrong in the exact integer GEMM, first "
                      "(row 17, col 4000): 406.000488, expected 406", detail)

    def test_an_injected_flip_that_passes_fails_the_run(self):
        r = Run("2026-12-04-h200-run8.tar.gz")
        try:
            report = r.json("sdc-inject.json")
            for c in report["checks"]:
                if c["check"] == "gpu_sdc":
                    c["status"], c["fault_code"], c["message"] = "pass", "", "1 GPU"
            r.put_json("sdc-inject.json", report)
            rc, text = r.summary()
            self.assertEqual(rc, 1)
            self.assertEqual(line(text, "gpu_sdc finds one injected bit flip")[0], "fail")
        finally:
            r.close()


class QualifyStep(unittest.TestCase):
    """The bundle's qualify step (2026-12-05 on). No bundle with it has run on a GPU yet, so its
    input is DERIVED from genuine H200 outputs: run 8's raw directory, whose full-suite checks
    (without its 100-repeat gpu_sdc) join run 10's gpu_soak and 1,000-repeat gpu_sdc (`--suite
    qualify --soak-s 60 --only gpu_soak,gpu_sdc`) as suite-qualify.json, with the suite a run
    without --only carries, the wall time of run 10's report (67 s), and one MADE-UP figure:
    bidir_bandwidth 97.0 GB/s (no GPU has measured it yet), only for the row's format."""

    def setUp(self):
        self.run = Run("2026-12-04-h200-run8.tar.gz")
        with open(os.path.join(FIXTURES, "2026-12-04-h200-run10", "qualify.json")) as f:
            report = json.load(f)
        full = self.run.json("suite-full.json")["checks"]
        report["checks"] = [c for c in full if c["check"] != "gpu_sdc"] + report["checks"]
        for c in report["checks"]:
            if c["check"] == "gpu_pcie_bw":
                c["measurements"].append(
                    {"gpu": 0, "name": "bidir_bandwidth", "unit": "GB/s", "value": 97.0})
        report["suite"] = "qualify"
        self.run.put_json("suite-qualify.json", report)
        with open(os.path.join(self.run.raw, "suite-qualify.time"), "w") as f:
            f.write("rc=0 wall_s=67.000\n")
        with open(os.path.join(self.run.raw, "planned.txt"), "w") as f:
            f.write("suite-qualify\n")

    def tearDown(self):
        self.run.close()

    def change(self, check, how):
        report = self.run.json("suite-qualify.json")
        for c in report["checks"]:
            if c["check"] == check:
                how(c)
        self.run.put_json("suite-qualify.json", report)

    def test_runs_without_the_step_have_no_qualify_rows(self):
        rc, text = summary_of("2026-12-04-h200-run8.tar.gz")
        self.assertEqual(rc, 0, text)
        self.assertNotIn("qualify", text)

    def test_run_10s_healthy_h200_passes_every_qualify_item(self):
        rc, text = self.run.summary()
        self.assertEqual(rc, 0, text)
        self.assertEqual(line(text, "no fail, no error: suite qualify")[0], "pass")
        self.assertEqual(line(text, "the qualify report names its suite")[0], "pass")
        self.assertEqual(line(text, "gpu_soak under load"),
                         ("pass", "pass in 60.7 s: gpu0 658.3 TFLOP/s, 1455 MHz, 691.7 W, 62 C, "
                                  "slowdown 0%"))
        status, detail = line(text, "gpu_sdc: no mismatch over the qualify repeats")
        self.assertEqual(status, "pass")
        self.assertIn("sdc_mismatches [0.0], 6.0 s", detail)
        self.assertEqual(line(text, "qualify suite wall time"), ("info", "67.0 s, exit 0"))

    def test_pcie_both_ways_is_recorded_and_its_absence_fails(self):
        rc, text = self.run.summary()
        status, detail = line(text, "PCIe both directions at once (qualify)")
        self.assertEqual(status, "info")
        self.assertRegex(detail, r"^gpu0 97\.0 GB/s both ways \(one way 5\d\.\d / 5\d\.\d\)$")
        # Run 8's genuine gpu_pcie_bw alone (one way, as every run so far): the qualify suite
        # must add bidir_bandwidth; a qualify report without gpu_pcie_bw fails too.
        def one_way(c):
            c["measurements"] = [m for m in c["measurements"] if m["name"] != "bidir_bandwidth"]
        self.change("gpu_pcie_bw", one_way)
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "PCIe both directions at once (qualify)"),
                         ("fail", "no bidir_bandwidth in the qualify run's gpu_pcie_bw"))
        report = self.run.json("suite-qualify.json")
        report["checks"] = [c for c in report["checks"] if c["check"] != "gpu_pcie_bw"]
        self.run.put_json("suite-qualify.json", report)
        rc, text = self.run.summary()
        self.assertEqual(line(text, "PCIe both directions at once (qualify)"),
                         ("fail", "no gpu_pcie_bw in the qualify report"))

    def test_a_planned_step_that_did_not_run_fails(self):
        os.remove(os.path.join(self.run.raw, "suite-qualify.json"))
        os.remove(os.path.join(self.run.raw, "suite-qualify.time"))
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "no fail, no error: suite qualify"),
                         ("fail", "the step did not run (the run stopped before it?)"))

    def test_a_mismatch_a_missing_soak_or_suite_and_a_missing_report_each_fail(self):
        def mismatch(c):
            c["measurements"][0]["value"] = 1.0
        self.change("gpu_sdc", mismatch)
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "gpu_sdc: no mismatch over the qualify repeats")[0], "fail")

        report = self.run.json("suite-qualify.json")
        report["checks"] = [c for c in report["checks"] if c["check"] != "gpu_soak"]
        del report["suite"]
        self.run.put_json("suite-qualify.json", report)
        rc, text = self.run.summary()
        self.assertEqual(line(text, "gpu_soak under load"),
                         ("fail", "no gpu_soak in the qualify report"))
        self.assertEqual(line(text, "the qualify report names its suite")[0], "fail")

        os.remove(os.path.join(self.run.raw, "suite-qualify.json"))
        rc, text = self.run.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "no fail, no error: suite qualify"), ("fail", "no report"))


class FirstH100Run(unittest.TestCase):
    def test_the_h100_run_passes_with_its_one_pcie_warn_and_detects_the_h100(self):
        rc, text = summary_of("2026-11-26-h100-run6.tar.gz")
        self.assertEqual(rc, 0, text)
        self.assertIn("H100-SXM5-80GB", line(text, "SKU detected with the shipped thresholds")[1])
        # A warn is not a failure of the run: a below-warn figure on an unconfirmed floor.
        self.assertEqual(line(text, "no fail, no error: suite full"),
                         ("pass", "pass 11, skipped 8, warn 1"))
        self.assertEqual(line(text, "gemm_bf16_tflops (quick) vs PyTorch")[1],
                         "726.0 / 735.7 TFLOP/s = 0.987 (goal within 5%)")
        self.assertIn("skipped: NVLink fabric not supported", line(text, "nvml_fabric on a real driver")[1])


class EarlierH200Runs(unittest.TestCase):
    """Runs 1 and 2 found defects; their summaries must say so."""

    def test_run_1_ib_ports_of_a_vm_and_a_slow_copy_kernel(self):
        rc, text = summary_of("2026-11-26-h200-run1.tar.gz")
        self.assertEqual(rc, 1)
        self.assertIn("ib_port fail", line(text, "no fail, no error: suite quick")[1])
        self.assertEqual(line(text, "hook exit status 0 on a healthy GPU")[0], "fail")
        self.assertEqual(line(text, "hbm_bandwidth (full) vs PyTorch"),
                         ("fail", "3987.3 / 4293.9 GB/s = 0.929 (goal within 5%)"))

    def test_run_2_memtest_unit_outside_the_schema(self):
        rc, text = summary_of("2026-11-26-h200-run2.tar.gz")
        self.assertEqual(rc, 1)
        self.assertIn("unknown unit '%'", line(text, "no fail, no error: suite full")[1])


class Rehearsal(unittest.TestCase):
    def test_the_bare_root_rehearsal_passes_and_the_nccl_backend_refuses_clearly(self):
        r = Run("2026-11-26-bare-root-no-gpu.tar.gz")
        try:
            rc, text = r.summary()
            quick = r.json("suite-quick.json")
        finally:
            r.close()
        self.assertEqual(rc, 0, text)
        self.assertIn("rehearsal without a GPU", text)
        self.assertEqual(line(text, "bundled MPI runtime (one process, host backend)")[0], "pass")
        self.assertIn("cudaErrorInsufficientDriver",
                      line(text, "NCCL backend without a GPU refuses clearly")[1])
        self.assertFalse([c for c in quick["checks"] if c["status"] == "fail"])

    def test_a_gpu_check_that_fails_without_a_gpu_fails_the_rehearsal(self):
        r = Run("2026-11-26-bare-root-no-gpu.tar.gz")
        try:
            quick = r.json("suite-quick.json")
            quick["checks"][0]["status"] = "fail"
            r.put_json("suite-quick.json", quick)
            rc, text = r.summary()
        finally:
            r.close()
        self.assertEqual(rc, 1)
        self.assertEqual(line(text, "no GPU check fails without a GPU (quick)")[0], "fail")


if __name__ == "__main__":
    unittest.main()
