#!/usr/bin/env python3
"""What of scripts/gpu-validate.sh runs without a GPU: shellcheck, argument handling, and the
summary writer (through --summary-only) on run directories this test writes.

The run directories are synthetic, in the formats the script saves: vigil-check reports (the
report codec's keys), vigil-allreduce --json rows, all_reduce_perf's table (nccl-tests 2.x
columns), nvidia-smi --query-gpu CSV and a trimmed `nvidia-smi -q -x` with only the elements
the summary reads (names as in NVIDIA's nvsmi_device_v12.dtd). Figures are made up around
H100 SXM numbers; each test changes one to cross a goal.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "gpu-validate.sh")
GIB = 1 << 30


def run(*args):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=60)


def report(checks):
    return {"node": "gpu01", "suite": "quick", "checks": checks}


def check(name, status, ms):
    return {"check": name, "status": status, "message": "", "measurements": ms}


def m(name, value, gpu=None, unit="count"):
    out = {"name": name, "value": value, "unit": unit}
    if gpu is not None:
        out["gpu"] = gpu
    return out


def nccl_tests_log(rows):
    lines = ["# nccl-tests 2.x all_reduce_perf -a 3",
             "#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong"]
    for size, busbw in rows:
        algbw = busbw / 1.75
        t = size / algbw / 1e3
        lines.append(f"  {size:>12} {size // 4:>12}     float     sum      -1  {t:8.1f} "
                     f"{algbw:7.2f} {busbw:7.2f}      0  {t:8.1f} {algbw:7.2f} {busbw:7.2f}      0")
    lines.append("# Avg bus bandwidth    : 300")
    return "\n".join(lines) + "\n"


def vigil_allreduce(rows):
    return {"rows": [{"size_bytes": size, "out_of_place": {"busbw_gb_s": b, "wrong": 0},
                      "in_place": {"busbw_gb_s": b, "wrong": 0}} for size, b in rows]}


SMI_XML = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <gpu id="00000000:18:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <pci><pci_gpu_link_info>
      <pcie_gen><max_link_gen>5</max_link_gen><current_link_gen>1</current_link_gen></pcie_gen>
      <link_widths><max_link_width>16x</max_link_width><current_link_width>16x</current_link_width></link_widths>
    </pci_gpu_link_info></pci>
    <ecc_errors>
      <volatile><dram_correctable>0</dram_correctable><dram_uncorrectable>0</dram_uncorrectable></volatile>
      <aggregate><dram_correctable>3</dram_correctable><dram_uncorrectable>0</dram_uncorrectable></aggregate>
    </ecc_errors>
    <temperature><gpu_temp>{temp} C</gpu_temp></temperature>
    <gpu_power_readings><power_draw>71.50 W</power_draw></gpu_power_readings>
  </gpu>
</nvidia_smi_log>
"""


class RunDir:
    """A healthy 1-GPU run directory; attributes changed before write() make it unhealthy."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gpu-validate-test-")
        self.quick_wall = 31.4
        self.hbm = 3100.0
        self.vigil_busbw = 360.0
        self.ref_busbw = 361.0
        self.smi_temp = 36
        self.status = "pass"
        self.hook_wall = 0.9
        self.sanity_s = 0.08

    def write(self):
        def put(name, text):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        put("machine.txt", "date: 2026-11-23T11:00:00Z\nhost: gpu01\ngpus: 1\n")
        put("gpus.csv", "index, name, pci.bus_id\n0, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n")
        nvml = [check("nvml_pcie", "pass", [m("pcie_link_width", 16, 0, "lanes"),
                                            m("pcie_link_gen", 1, 0, "gen")]),
                check("nvml_ecc", "pass", [m("volatile_uncorrected_ecc", 0, 0),
                                           m("aggregate_corrected_ecc", 3, 0)]),
                check("nvml_temperature", self.status, [m("gpu_temperature", 35, 0, "celsius"),
                                                        m("gpu_power", 70.9, 0, "W")]),
                check("nvml_xid", "pass", [m("xid_fatal_events", 0)])]
        probes = [check("gpu_hbm", "pass", [m("hbm_bandwidth", self.hbm, 0, "GB/s")]),
                  check("gpu_gemm", "pass", [m("gemm_bf16_tflops", 720, 0, "TFLOP/s")]),
                  check("gpu_pcie_bw", "pass", [m("h2d_bandwidth", 55.1, 0, "GB/s"),
                                                m("d2h_bandwidth", 54.8, 0, "GB/s")])]
        put("suite-quick.json", json.dumps(report(nvml + probes)))
        put("suite-full.json", json.dumps(report(nvml + probes)))
        put("suite-quick.time", f"rc=0 wall_s={self.quick_wall}\n")
        put("suite-full.time", "rc=0 wall_s=140.2\n")
        put("hook-healthcheck.time", f"rc=0 wall_s={self.hook_wall}\n")
        put("hook-sanity.json", json.dumps(report([check("gpu_sanity", "pass", [
            m("sanity_errors", 0, 0), m("sanity_s", self.sanity_s, 0, "s")])])))
        sizes = [256 << 20, 1 * GIB, 2 * GIB]
        for t in ("nvlink", "ib"):
            put(f"allreduce-{t}-vigil.json",
                json.dumps(vigil_allreduce([(s, self.vigil_busbw) for s in sizes])))
            put(f"allreduce-{t}-nccl-tests.txt", nccl_tests_log([(s, self.ref_busbw)
                                                                 for s in sizes]))
        put("nvidia-smi.xml", SMI_XML.replace("{temp}", str(self.smi_temp)))
        return self.dir

    def summary(self):
        r = run("--summary-only", self.write())
        return r.returncode, r.stdout + r.stderr

    def remove(self):
        shutil.rmtree(self.dir)


class GpuValidate(unittest.TestCase):
    def setUp(self):
        self.run_dir = RunDir()

    def tearDown(self):
        self.run_dir.remove()

    def line(self, text, item):
        found = [l for l in text.splitlines() if f"| {item}" in l]
        self.assertTrue(found, f"no line for {item!r} in:\n{text}")
        return found[0]

    @unittest.skipUnless(shutil.which("shellcheck"), "shellcheck not installed")
    def test_script_passes_shellcheck(self):
        r = subprocess.run(["shellcheck", SCRIPT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_arguments_are_validated_before_anything_runs(self):
        self.assertEqual(run("--help").returncode, 0)
        for args, says in [(["--bogus"], "unknown argument"), (["--ranks", "two"], "--ranks"),
                           (["--max-bytes", "lots"], "--max-bytes"), (["--out"], "needs a value"),
                           ([], "--nccl-tests DIR is required"),
                           (["--nccl-tests", self.run_dir.dir], "no src/all_reduce.cu"),
                           (["--summary-only", "/nonexistent-dir"], "no such directory")]:
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(says, r.stderr, args)

    def test_healthy_run_passes_every_item(self):
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 0, text)
        self.assertIn("pass | quick suite wall time | 31.4 s", text)
        self.assertIn("pass | all-reduce nvlink: busbw vs all_reduce_perf", text)
        self.assertIn("lowest ratio 0.997", text)
        self.assertIn("pass | HBM gpu0 | 3100 GB/s = 0.93 x spec 3350", text)
        self.assertIn("info | GEMM gpu0 | 720 TFLOP/s = 0.73 x dense BF16 spec 989", text)
        self.assertIn("pass | NVML figures vs nvidia-smi -q | 6 figures compared, equal", text)
        self.assertIn("| 1073741824 | 360.00 | 361.00 | 0.997 |", text)
        self.assertIn("pass | hook healthcheck wall time | 0.90 s", text)
        self.assertIn("pass | hook gpu_sanity | pass", text)
        with open(os.path.join(self.run_dir.dir, "summary.md")) as f:
            self.assertEqual(f.read(), text)

    def test_slow_hook_and_slow_sanity_check_fail(self):
        self.run_dir.hook_wall = 2.4
        self.run_dir.sanity_s = 0.25
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertIn("fail | hook healthcheck wall time | 2.40 s (goal < 2 s)", text)
        self.assertIn("fail | hook gpu_sanity time per GPU | max 0.250 s (gpu0", text)

    def test_slow_quick_suite_fails(self):
        self.run_dir.quick_wall = 75.0
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertTrue(self.line(text, "quick suite wall time").startswith("| fail"))

    def test_allreduce_below_99_percent_of_nccl_tests_fails(self):
        self.run_dir.vigil_busbw = 355.0  # 0.983
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertIn("fail | all-reduce ib: busbw vs all_reduce_perf at >= 1 GiB | lowest "
                      "ratio 0.983", text)

    def test_hbm_below_90_percent_of_spec_fails(self):
        self.run_dir.hbm = 2900.0  # 0.87 of 3350
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertTrue(self.line(text, "HBM gpu0").startswith("| fail"))

    def test_a_fail_on_a_healthy_node_is_a_false_fail(self):
        self.run_dir.status = "fail"
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertIn("fail | no false fail (quick) | failed: nvml_temperature", text)

    def test_nvml_figure_differing_from_nvidia_smi_fails(self):
        self.run_dir.smi_temp = 45  # Vigil read 35 C
        rc, text = self.run_dir.summary()
        self.assertEqual(rc, 1)
        self.assertIn("gpu0 gpu_temperature vigil 35 nvidia-smi 45", text)

    def test_missing_inputs_fail_their_items(self):
        self.run_dir.write()
        os.remove(os.path.join(self.run_dir.dir, "allreduce-ib-nccl-tests.txt"))
        os.remove(os.path.join(self.run_dir.dir, "nvidia-smi.xml"))
        r = run("--summary-only", self.run_dir.dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("fail | all-reduce ib: busbw vs all_reduce_perf at >= 1 GiB | missing", r.stdout)
        self.assertIn("fail | NVML figures vs nvidia-smi -q | no nvidia-smi.xml", r.stdout)


class NcclTestsTable(unittest.TestCase):
    """The summary reads all_reduce_perf's out-of-place busbw and #wrong from a genuine log."""

    def test_genuine_log_columns(self):
        sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
        sys.path.insert(0, os.path.join(REPO, "scripts", "lib"))
        import gpu_validate_summary
        path = os.path.join(REPO, "tests", "fixtures", "nccl-tests-logs",
                            "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt")
        with open(path) as f:
            rows = gpu_validate_summary.parse_nccl_tests(f.read())
        self.assertEqual(rows[1048576], (3.09, "0"))
        self.assertEqual(rows[8388608], (15.06, "0"))
        self.assertNotIn(0, rows)


if __name__ == "__main__":
    unittest.main(verbosity=2)
