#!/usr/bin/env python3
"""Checks Vigil's hand-declared NVML ABI (checks/src/nvml/nvml_api.h) against facts taken
from NVIDIA's published nvml.h, which is not installed on build machines.

The facts file (nvml_abi_facts.txt, next to this script) holds only what Vigil relies on:
entry point names and prototypes, struct sizes and field offsets, enum sizes and constant
values. Lines:

    function <symbol> <return type>(<parameter types>)   enum types written as int
    size <type> <bytes>
    offset <type> <field> <bytes>
    value <nvml.h name> <decimal value> [<Vigil name>]   Vigil name defaults to the nvml.h name

Commands:
  extract --header nvml.h --source TEXT [--facts F]
      Re-derives every value in F from a real nvml.h (compiles a small C probe with $CC, reads
      prototypes from the header text) and rewrites F with TEXT as its source line. The names
      to look up are the ones already in F: add a line (any value) and run extract.
  check --facts F --api nvml_api.h --loader nvml_loader.cpp --fake-source fake_nvml.cpp
        --fake-lib libnvidia-ml.so.1 --cxx C++ -I DIR...
      1. every symbol the loader resolves and every nvml* symbol the fake exports is a
         `function` fact, and the fake exports every symbol the loader resolves;
      2. every struct and every NVML_* / kNvml* constant in nvml_api.h is covered by facts;
      3. compiles static_asserts (sizeof, offsetof, values, the type of each loader entry
         point against the real prototype) and the fake against the real prototypes.
  selftest  (same arguments as check): breaks each kind of fact in a copy and requires
      check to fail on every one, so the check is known to be able to fail (the unmodified
      facts passing is the check test's job).
Exit status 0 when everything matches; 1 with one line per mismatch otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


# --- facts file -----------------------------------------------------------------------------

def read_facts(path):
    facts = {"function": {}, "size": {}, "offset": {}, "value": {}, "comments": []}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                if line.startswith("#"):
                    facts["comments"].append(line)
                continue
            kind, _, rest = line.partition(" ")
            where = f"{path}:{n}"
            if kind == "function":
                name, _, proto = rest.partition(" ")
                facts["function"][name] = proto.strip()
            elif kind == "size":
                name, value = rest.split()
                facts["size"][name] = value
            elif kind == "offset":
                typ, field, value = rest.split()
                facts["offset"][(typ, field)] = value
            elif kind == "value":
                parts = rest.split()
                if len(parts) not in (2, 3):
                    sys.exit(f"{where}: value needs <name> <value> [<vigil name>]")
                facts["value"][parts[0]] = (parts[1], parts[2] if len(parts) == 3 else parts[0])
            else:
                sys.exit(f"{where}: unknown fact kind {kind!r}")
    return facts


def write_facts(path, facts, header_lines):
    out = list(header_lines)
    out.append("")
    for name, proto in sorted(facts["function"].items()):
        out.append(f"function {name} {proto}")
    out.append("")
    for name, value in sorted(facts["size"].items()):
        out.append(f"size {name} {value}")
    for (typ, field), value in sorted(facts["offset"].items(), key=lambda kv: (kv[0][0],
                                                                             int(kv[1]))):
        out.append(f"offset {typ} {field} {value}")
    out.append("")
    for name, (value, vigil) in sorted(facts["value"].items()):
        out.append(f"value {name} {value}" + (f" {vigil}" if vigil != name else ""))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# --- extract from a real nvml.h -------------------------------------------------------------

def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def enum_types(text):
    names = set(re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text, flags=re.S))
    names.discard("nvmlReturn_t")  # Vigil declares it as a typedef of int: same type
    return names


def normalise_type(decl, enums):
    """'nvmlPciInfo_t *pci' -> 'nvmlPciInfo_t*'; enum typedefs -> 'int'."""
    decl = re.sub(r"\s+", " ", decl.strip())
    stars = decl.count("*")
    words = decl.replace("*", " ").split()
    if words == ["void"] or not words:
        return "void"
    # Drop the parameter name: the last word, when more than one word remains and the last
    # is not part of a type spelled with several words.
    type_words = {"unsigned", "signed", "long", "int", "char", "short", "const"}
    if len(words) > 1 and words[-1] not in type_words:
        words = words[:-1]
    words = ["int" if w in enums else w for w in words]
    return " ".join(words) + "*" * stars


def prototype(text, name, enums):
    m = re.search(r"([^;{}#]*?)\b" + re.escape(name) + r"\s*\(([^)]*)\)\s*;", text)
    if not m:
        return None
    # The return type shares the line with the name; earlier lines are other declarations.
    ret = m.group(1).rsplit("\n", 1)[-1]
    ret = re.sub(r"DEPRECATED\s*\([^)]*\)|DECLDIR|NVML_EXPORT", " ", ret)
    ret = normalise_type(ret + " x", enums)  # the dummy name keeps normalise_type uniform
    params = [p for p in m.group(2).split(",") if p.strip()]
    types = [normalise_type(p, enums) for p in params]
    if types == ["void"]:
        types = []
    return f"{ret}({', '.join(types)})"


def extract(args):
    facts = read_facts(args.facts)
    with open(args.header) as f:
        text = strip_comments(f.read())
    enums = enum_types(text)
    problems = []
    for name in facts["function"]:
        proto = prototype(text, name, enums)
        if proto is None:
            problems.append(f"{name}: no prototype in {args.header}")
        else:
            facts["function"][name] = proto

    # Sizes, offsets and values: compile and run a C probe against the header.
    lines = ["#include <stddef.h>", "#include <stdio.h>", f'#include "{os.path.abspath(args.header)}"',
             "int main(void) {"]
    for name in facts["size"]:
        lines.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
    for typ, field in facts["offset"]:
        lines.append(f'  printf("offset {typ} {field} %zu\\n", offsetof({typ}, {field}));')
    for name in facts["value"]:
        lines.append(f'  printf("value {name} %llu\\n", (unsigned long long)({name}));')
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-std=c11", "-o", exe, src], check=True)
        output = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    for line in output.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "size":
            name, value = rest.split()
            facts["size"][name] = value
        elif kind == "offset":
            typ, field, value = rest.split()
            facts["offset"][(typ, field)] = value
        else:
            name, value = rest.split()
            facts["value"][name] = (value, facts["value"][name][1])
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    header = [
        "# Facts about the NVML C ABI that Vigil relies on (tests/fake_nvml/nvml_abi.py check).",
        f"# Source: {args.source}",
        "# Regenerate: tests/fake_nvml/nvml_abi.py extract --header nvml.h --source '...'",
        "# Enum parameters are written as int (Vigil declares them so; every NVML enum is 4 bytes,",
        "# see the size facts of the enum types below).",
    ]
    write_facts(args.facts, facts, header)
    return 0


# --- check Vigil against the facts ----------------------------------------------------------

def loader_symbols(path):
    """symbol -> Api member, from resolve(handle, "symbol", a.member) calls."""
    with open(path) as f:
        text = f.read()
    out = {}
    for symbol, member in re.findall(r'resolve\(\s*handle\s*,\s*"(\w+)"\s*,\s*a\.(\w+)\s*\)',
                                     text):
        out.setdefault(symbol, member)
    return out


def api_declarations(path):
    """Structs with their fields, NVML_* enumerators and kNvml* constants of nvml_api.h."""
    with open(path) as f:
        text = strip_comments(f.read())
    structs = {}
    for name, body in re.findall(r"struct\s+(nvml\w+_t)\s*\{([^}]*)\}\s*;", text):
        fields = re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body)
        structs[name] = fields
    enumerators = set(re.findall(r"\b(NVML_[A-Z0-9_]+)\s*=", text))
    constants = set(re.findall(r"constexpr\s+[\w\s]+?\b(kNvml\w+)\s*=", text))
    return structs, enumerators, constants


def exported_symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines()
            if line.split() and line.split()[-1].startswith("nvml")}


def static_asserts(facts, loader):
    lines = ['#include <cstddef>', '#include <type_traits>', '#include "nvml_api.h"',
             '#include "nvml_loader.h"', ""]
    for name, value in facts["size"].items():
        lines.append(f'static_assert(sizeof({name}) == {value}, "sizeof({name}) is {value} in '
                     f'nvml.h");')
    for (typ, field), value in facts["offset"].items():
        lines.append(f'static_assert(offsetof({typ}, {field}) == {value}, "offsetof({typ}, '
                     f'{field}) is {value} in nvml.h");')
    for name, (value, vigil) in facts["value"].items():
        lines.append(f'static_assert(static_cast<unsigned long long>({vigil}) == {value}ULL, '
                     f'"{vigil}: {name} is {value} in nvml.h");')
    for symbol, member in loader.items():
        proto = facts["function"].get(symbol)
        if not proto:
            continue
        ret, params = proto.split("(", 1)
        lines.append(f"static_assert(std::is_same_v<decltype(vigil::nvml::Api::{member}), "
                     f"{ret} (*)({params}>, \"Api::{member} does not match {symbol}{proto[len(ret):]} "
                     f"in nvml.h\");")
    return "\n".join(lines) + "\n"


def real_prototypes(facts):
    lines = ['extern "C" {']
    for name, proto in facts["function"].items():
        ret, params = proto.split("(", 1)
        lines.append(f"{ret} {name}({params};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def compile_cxx(cxx, includes, source_text=None, source_file=None, force_include=None):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [cxx, "-std=c++20", "-fsyntax-only"] + [f"-I{d}" for d in includes]
        if force_include is not None:
            inc = os.path.join(tmp, "nvml_real_prototypes.h")
            with open(inc, "w") as f:
                f.write(force_include)
            cmd += ["-include", "nvml_api.h", "-include", inc]
        if source_text is not None:
            source_file = os.path.join(tmp, "nvml_abi_asserts.cpp")
            with open(source_file, "w") as f:
                f.write(source_text)
        r = subprocess.run(cmd + [source_file], capture_output=True, text=True)
        return r.returncode, r.stderr


def check(args, quiet=False):
    facts = read_facts(args.facts)
    loader = loader_symbols(args.loader)
    structs, enumerators, constants = api_declarations(args.api)
    fake = exported_symbols(args.fake_lib)
    problems = []
    for symbol in sorted(loader):
        if symbol not in facts["function"]:
            problems.append(f"loader resolves {symbol}, which nvml.h does not declare")
        if symbol not in fake:
            problems.append(f"the fake library does not export {symbol}, which the loader resolves")
    for symbol in sorted(fake):
        if symbol not in facts["function"]:
            problems.append(f"the fake library exports {symbol}, which nvml.h does not declare")
    for name, fields in structs.items():
        if name not in facts["size"]:
            problems.append(f"nvml_api.h declares {name}; no size fact")
        for field in fields:
            if (name, field) not in facts["offset"]:
                problems.append(f"nvml_api.h declares {name}::{field}; no offset fact")
    vigil_names = {vigil for _, vigil in facts["value"].values()}
    for name in sorted(enumerators | constants):
        if name not in vigil_names:
            problems.append(f"nvml_api.h declares {name}; no value fact")
    if quiet and problems:  # selftest: the first stage that finds something is enough
        return 1
    rc, err = compile_cxx(args.cxx, args.include, source_text=static_asserts(facts, loader))
    if quiet and rc != 0:
        return 1
    if rc != 0:
        problems += [line for line in err.splitlines() if "static assert" in line or
                     "error" in line] or [err]
    rc, err = compile_cxx(args.cxx, args.include, source_file=args.fake_source,
                          force_include=real_prototypes(facts))
    if rc != 0:
        problems += ["fake library vs nvml.h prototypes: " + line for line in err.splitlines()
                     if "error" in line] or [err]
    if not quiet:
        for p in problems:
            print(p)
        if not problems:
            print(f"NVML ABI matches {len(facts['function'])} functions, {len(facts['size'])} "
                  f"sizes, {len(facts['offset'])} offsets, {len(facts['value'])} values "
                  f"({args.facts})")
    return 1 if problems else 0


def selftest(args):
    """Each mutation of a correct facts file must make check fail."""
    with open(args.facts) as f:
        original = f.read().splitlines()

    def first(prefix):
        return next(i for i, line in enumerate(original) if line.startswith(prefix))

    def bump(line):
        head, _, value = line.rpartition(" ")
        if not value.isdigit():  # value fact with a Vigil name: the value is the 3rd token
            parts = line.split()
            parts[2] = str(int(parts[2]) + 1)
            return " ".join(parts)
        return f"{head} {int(value) + 4}"

    mutations = {
        "struct size": (first("size nvmlPciInfo_t"), bump),
        "field offset": (first("offset nvmlEventData_t eventData"), bump),
        "constant value": (first("value nvmlClocksThrottleReasonHwSlowdown"), bump),
        "enumerator value": (first("value NVML_ERROR_GPU_IS_LOST"), bump),
        "prototype": (first("function nvmlDeviceGetPciInfo_v3"),
                      lambda l: l.replace("nvmlPciInfo_t*", "unsigned int*")),
        "missing symbol": (first("function nvmlEventSetWait_v2"), lambda l: "# " + l),
        # nvmlInit is exported by the fake only: caught by compiling the fake alone.
        "fake prototype": (first("function nvmlInit "), lambda l: l.replace("()", "(int)")),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, (index, mutate) in mutations.items():
            lines = list(original)
            lines[index] = mutate(lines[index])
            path = os.path.join(tmp, "facts.txt")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            mutated = argparse.Namespace(**{**vars(args), "facts": path})
            caught = check(mutated, quiet=True) != 0
            print(f"{'caught' if caught else 'MISSED'}: {what} ({lines[index]})")
            failures += 0 if caught else 1
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    here = os.path.dirname(os.path.abspath(__file__))
    default_facts = os.path.join(here, "nvml_abi_facts.txt")
    e = sub.add_parser("extract")
    e.add_argument("--header", required=True)
    e.add_argument("--source", required=True)
    e.add_argument("--facts", default=default_facts)
    for name in ("check", "selftest"):
        c = sub.add_parser(name)
        c.add_argument("--facts", default=default_facts)
        c.add_argument("--api", required=True)
        c.add_argument("--loader", required=True)
        c.add_argument("--fake-source", required=True)
        c.add_argument("--fake-lib", required=True)
        c.add_argument("--cxx", required=True)
        c.add_argument("-I", dest="include", action="append", default=[])
    args = p.parse_args()
    for attr in ("facts", "header", "api", "loader", "fake_source", "fake_lib"):
        path = getattr(args, attr, None)
        if path is not None and not os.path.isfile(path):
            print(f"nvml_abi.py: {attr.replace('_', '-')}: no such file: {path}", file=sys.stderr)
            return 2
    return {"extract": extract, "check": check, "selftest": selftest}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
