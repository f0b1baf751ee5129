#!/usr/bin/env python3
"""Keeps Vigil's layout true (docs/architecture.md).

Fails (exit 1, one line per violation) when:
  - a source file includes a Vigil header of a component its component may not depend on;
  - a CMake target links a Vigil target its component may not depend on;
  - a production source file is longer than MAX_LINES;
  - a source of the drainer core (the vigil_drainer_core target's sources, and the drainer
    headers they include) includes a listener, an HTTP client library, a YAML parser or a header
    of the drainer program, or the core target links one of those libraries;
  - anything in the repository reads a path outside it (../shared and the like).

  check_layout.py REPO         check the repository at REPO
  check_layout.py --self-test  plant one violation of each kind in a temporary tree and
                               require the checker to report every one of them
"""
import os
import re
import sys
import tempfile

MAX_LINES = 600

# Component of a path (first match wins) -> the Vigil header namespaces (vigil/<ns>/...) and
# CMake targets (vigil::<name> / vigil_<name>) it may use. Its own are always allowed.
COMPONENTS = [
    ("libs/base/", "base"),
    ("libs/munge/", "munge"),
    ("libs/report/src/report_client", "report_client"),
    ("libs/report/include/vigil/report/report_client", "report_client"),
    ("libs/report/", "report"),
    ("libs/slurm/", "slurm"),
    ("libs/kube/", "kube"),
    ("libs/detect/", "detect"),
    ("libs/config/", "config"),
    ("nccl-bench/", "ncclbench"),
    ("checks/submit/", "submit"),
    ("checks/hook/", "hook"),
    ("checks/src/main.cpp", "check_program"),
    ("checks/src/cli_util", "check_program"),
    ("checks/src/commands", "check_program"),
    ("checks/", "checks"),
    ("drainer/", "drainer"),
]
ALLOWED = {
    "base": set(),
    "config": set(),
    "report": {"base"},
    "munge": {"base"},
    "report_client": {"report", "munge", "base"},
    "slurm": {"base"},
    "kube": {"base"},
    "detect": {"report", "base"},
    "ncclbench": {"base"},
    "ncclbench_mpi": {"ncclbench", "base"},
    "checks": {"report", "report_client", "base", "ncclbench", "detect", "config"},
    "submit": {"slurm", "base", "report", "report_client"},
    "hook": {"checks", "report", "report_client", "slurm", "base"},
    "check_program": {"checks", "hook", "report", "report_client", "slurm", "base"},
    "drainer_core": {"report", "slurm", "kube", "base", "detect"},
    "drainer": {"drainer_core", "report", "slurm", "kube", "base", "detect", "munge", "config"},
}
# Targets that belong to a component without being named after it.
TARGET_COMPONENT = {
    "vigil-check": "check_program",
    "vigil-submit": "submit",
    "vigil-drainer": "drainer",
    "vigil-allreduce": "ncclbench_mpi",
    "report_client": "report_client",
    "ncclbench_mpi": "ncclbench_mpi",
    # The libslurm-free half of libs/slurm (scontrol backend, reasons): the same component.
    # That vigil-check links no libslurm is checked by its own test
    # (vigil_check_does_not_link_libslurm), on the binary.
    "slurm_cli": "slurm",
    "kube_api": "kube",  # libs/kube's interface alone (headers, no client)
    "drainer_core": "drainer_core",
}
# Targets other components may never link, whatever ALLOWED says: nothing depends on the check
# runner but the vigil-check program (tests excepted).
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
PRODUCTION_ROOTS = ("libs/", "checks/", "nccl-bench/", "drainer/")
OUTSIDE_PATTERNS = [
    re.compile(r"\.\./shared\b"),
    re.compile(r"PROJECT_SOURCE_DIR\}/\.\."),
    re.compile(r"CMAKE_SOURCE_DIR\}/\.\."),
]
SKIP_DIRS = {".git", "build", "node_modules", ".vigil-tmp", "fixtures"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]vigil/([a-z_]+)/')
LINK_RE = re.compile(r"target_link_libraries\(\s*([\w\-]+)(.*?)\)", re.S)
VIGIL_TARGET_RE = re.compile(r"\bvigil(?:::|_)([a-z_]+)\b")


# The drainer core (issue 25): what it may not include or link, whatever ALLOWED says.
CORE_CMAKE = "drainer/CMakeLists.txt"
CORE_TARGET = "vigil_drainer_core"
PROGRAM_TARGET = "vigil_drainer"
CORE_FORBIDDEN_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](httplib\.h|microhttpd\.h|yaml-cpp/[^>"]*)[>"]')
# vigil::slurm and vigil::kube are the clients (libslurm, cpp-httplib, yaml-cpp); the core links
# their rules and interfaces only (vigil::slurm_cli, vigil::kube_api).
CORE_FORBIDDEN_LINK = ("httplib::httplib", "PkgConfig::MHD", "yaml-cpp::yaml-cpp", "vigil::slurm",
                       "vigil::kube", "vigil_slurm", "vigil_kube")
DRAINER_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"(vigil/drainer/[\w.]+|[\w.]+\.h)"')


def target_sources(cmake_text, target):
    m = re.search(r"add_library\(\s*" + re.escape(target) + r"\b(.*?)\)", cmake_text, re.S)
    return re.findall(r"src/[\w.]+", m.group(1)) if m else []


def drainer_header(repo, name):
    """The path of a drainer header named in an #include, or None."""
    for cand in ("drainer/include/" + name, "drainer/src/" + name):
        if os.path.exists(os.path.join(repo, cand)):
            return cand
    return None


def check_drainer_core(repo):
    problems = []
    try:
        with open(os.path.join(repo, CORE_CMAKE)) as fh:
            cmake = fh.read()
    except OSError:
        return problems
    core = ["drainer/" + s for s in target_sources(cmake, CORE_TARGET)]
    program = {os.path.basename(s)[:-len(".cpp")] for s in target_sources(cmake, PROGRAM_TARGET)}
    seen, todo = set(), list(core)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        try:
            with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            if m := CORE_FORBIDDEN_INCLUDE.match(line):
                problems.append(f"{rel}:{n}: the drainer core may not include {m.group(1)} "
                                "(listener, HTTP client and YAML belong to the program)")
            if m := DRAINER_INCLUDE_RE.match(line):
                stem = os.path.basename(m.group(1))[:-len(".h")]
                if stem in program:
                    problems.append(f"{rel}:{n}: the drainer core may not include the program's "
                                    f"{m.group(1)}")
                elif (h := drainer_header(repo, m.group(1))) is not None:
                    todo.append(h)
    for m in LINK_RE.finditer(cmake):
        if m.group(1) == CORE_TARGET:
            for lib in CORE_FORBIDDEN_LINK:
                if re.search(re.escape(lib) + r"(?![\w])", m.group(2)):
                    problems.append(f"{CORE_CMAKE}: target {CORE_TARGET} may not link {lib}")
    return problems


def component_of(rel):
    for prefix, comp in COMPONENTS:
        if rel.startswith(prefix):
            return comp
    return None


def walk(repo):
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for f in files:
            path = os.path.join(root, f)
            yield os.path.relpath(path, repo).replace(os.sep, "/"), path


def check(repo):
    problems = []
    for rel, path in walk(repo):
        comp = component_of(rel)
        is_source = rel.endswith(SOURCE_EXT)
        is_cmake = rel.endswith("CMakeLists.txt") or rel.endswith(".cmake")
        is_script = rel.endswith((".sh", ".py")) and not rel.startswith("tests/architecture/")
        if not (is_source or is_cmake or is_script):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as e:
            problems.append(f"{rel}: unreadable: {e}")
            continue
        for pat in OUTSIDE_PATTERNS:
            if pat.search(text):
                problems.append(f"{rel}: reads a path outside the repository ({pat.pattern})")
        if is_source and comp:
            allowed = ALLOWED[comp] | {comp}
            for n, line in enumerate(text.splitlines(), 1):
                m = INCLUDE_RE.match(line)
                if m and m.group(1) not in allowed:
                    problems.append(
                        f"{rel}:{n}: {comp} may not include vigil/{m.group(1)}/ "
                        f"(allowed: {', '.join(sorted(allowed))})")
            lines = text.count("\n")
            if rel.startswith(PRODUCTION_ROOTS) and lines > MAX_LINES:
                problems.append(f"{rel}: {lines} lines (production files stay under {MAX_LINES})")
        if is_cmake and comp:
            for m in LINK_RE.finditer(text):
                target = m.group(1)
                name = target[len("vigil_"):] if target.startswith("vigil_") else target
                tcomp = TARGET_COMPONENT.get(target) or TARGET_COMPONENT.get(name)
                if tcomp is None:
                    tcomp = name if name in ALLOWED else comp
                allowed = ALLOWED[tcomp] | {tcomp}
                for dep in VIGIL_TARGET_RE.findall(m.group(2)):
                    if dep.endswith("_external"):
                        continue
                    dep = TARGET_COMPONENT.get(dep, dep)
                    if dep not in allowed:
                        problems.append(
                            f"{rel}: target {target} ({tcomp}) may not link vigil::{dep} "
                            f"(allowed: {', '.join(sorted(allowed))})")
    return problems + check_drainer_core(repo) + check_drainer_tests(repo)


# Every drainer source file has a test file of its name, but the program's main.cpp (its
# commands run in commands_test.cpp and the cluster tests).
DRAINER_UNTESTED_BY_NAME = {"main"}


def check_drainer_tests(repo):
    src = os.path.join(repo, "drainer", "src")
    if not os.path.isdir(src):
        return []
    problems = []
    for f in sorted(os.listdir(src)):
        unit = f[:-len(".cpp")] if f.endswith(".cpp") else None
        if unit is None or unit in DRAINER_UNTESTED_BY_NAME:
            continue
        if not os.path.exists(os.path.join(repo, "tests", "drainer", unit + "_test.cpp")):
            problems.append(f"drainer/src/{f}: no tests/drainer/{unit}_test.cpp")
    return problems


def self_test():
    planted = {
        "libs/base/src/x.cpp": '#include "vigil/report/report.h"\n',
        "drainer/src/y.cpp": '#include "vigil/checks/check.h"\n',
        "libs/report/src/long.cpp": "int x;\n" * (MAX_LINES + 1),
        "checks/submit/CMakeLists.txt": "target_link_libraries(vigil_submit PUBLIC vigil::drainer)\n",
        "nccl-bench/CMakeLists.txt": "target_link_libraries(vigil_ncclbench PUBLIC vigil::checks)\n",
        "tests/x/CMakeLists.txt": 'set(D "${PROJECT_SOURCE_DIR}/../shared")\n',
        "libs/slurm/src/ok.cpp": '#include "vigil/slurm/slurm_api.h"\n#include "vigil/base/result.h"\n',
        "drainer/CMakeLists.txt": (
            "add_library(vigil_drainer_core\n  src/core_a.cpp\n  src/core_b.cpp\n)\n"
            "target_link_libraries(vigil_drainer_core PUBLIC vigil::slurm_cli vigil::kube\n"
            "  PRIVATE yaml-cpp::yaml-cpp)\n"
            "add_library(vigil_drainer\n  src/front.cpp\n)\n"),
        "drainer/src/core_a.cpp": '#include "core_a.h"\n#include "front.h"\n',
        "drainer/src/core_a.h": "#include <httplib.h>\n",
        "drainer/src/core_b.cpp": "#include <nlohmann/json.hpp>\n",
        "drainer/src/front.cpp": "#include <microhttpd.h>\n",
        "drainer/src/front.h": "",
        "tests/drainer/core_a_test.cpp": "",
        "tests/drainer/core_b_test.cpp": "",
        "tests/drainer/y_test.cpp": "",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in planted.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
        found = check(tmp)
    expected = ["libs/base/src/x.cpp:1", "drainer/src/y.cpp:1", "libs/report/src/long.cpp:",
                "target vigil_submit", "target vigil_ncclbench", "tests/x/CMakeLists.txt",
                "drainer/src/core_a.h:1: the drainer core may not include httplib.h",
                "drainer/src/core_a.cpp:2: the drainer core may not include the program's front.h",
                "target vigil_drainer_core may not link yaml-cpp::yaml-cpp",
                "target vigil_drainer_core may not link vigil::kube",
                "drainer/src/front.cpp: no tests/drainer/front_test.cpp"]
    missing = [e for e in expected if not any(e in p for p in found)]
    extra = [p for p in found
             if "ok.cpp" in p or "core_b" in p or ("front.cpp" in p and "front_test" not in p)
             or "may not link vigil::slurm" in p]
    for p in found:
        print("planted and found:", p)
    if missing or extra:
        print("self-test FAILED; not reported:", missing, "wrongly reported:", extra)
        return 1
    print(f"self-test passed: {len(expected)} planted violations reported, the clean file not")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"layout: {len(problems)} violation(s); see docs/architecture.md for the allowed arrows")
        return 1
    print("layout: every include and link follows the allowed arrows; no file over "
          f"{MAX_LINES} lines; nothing outside the repository is read")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
