#!/usr/bin/env python3
"""Convert NVIDIA's Xid catalogue workbook into checks/data/xid-catalogue.json.

The workbook (Xid-Catalog.xlsx) is the "reference guide as a spreadsheet"
linked from https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html.
It extracts the rows of sheets "Xids" and "Xid 144-150 Decode" (whitespace
collapsed, masks as-is; no trigger-condition or resolution-bucket prose), plus
the workbook's sha256 and dcterms:modified date.

The output is NVIDIA's data only. Vigil's own policy (what it does about each
Xid) lives in checks/data/xid-policy.json, which is hand-written, not generated.

Standard library only. Input problems (numbering gaps, malformed masks) are
warned about on stderr, never fixed silently. Usage:
    python3 scripts/xid-catalogue-from-xlsx.py Xid-Catalog.xlsx > checks/data/xid-catalogue.json
"""
import hashlib
import json
import posixpath
import re
import sys
import zipfile
import xml.etree.ElementTree as ET

PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
NS = {
    "m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "pr": "http://schemas.openxmlformats.org/package/2006/relationships",
    "dcterms": "http://purl.org/dc/terms/",
}
GPUS = ("A100", "H100", "B100", "GB200")
MASK = re.compile(r"[01-]{32}")


def warn(msg):
    print("xid-catalogue: warning: " + msg, file=sys.stderr)


def clean(text):
    """Trim and collapse whitespace runs (including newlines) to one space."""
    return " ".join(text.split())


def text_of(node):
    """Concatenated <t> text of a shared-string item or inline string,
    skipping phonetic runs (<rPh>)."""
    out = []
    for child in node:
        tag = child.tag.split("}")[1]
        if tag == "t":
            out.append(child.text or "")
        elif tag == "r":
            out.extend(t.text or "" for t in child.findall("m:t", NS))
    return "".join(out)


def col_index(ref):
    """'C12' -> 2 (zero-based column from the cell reference letters)."""
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group(0):
        n = n * 26 + ord(ch) - 64
    return n - 1


def read_sheets(zf):
    """Return {sheet name: [row, ...]} with rows as lists of strings."""
    shared = []
    if "xl/sharedStrings.xml" in zf.namelist():
        root = ET.fromstring(zf.read("xl/sharedStrings.xml"))
        shared = [text_of(si) for si in root.findall("m:si", NS)]
    rels = ET.fromstring(zf.read("xl/_rels/workbook.xml.rels"))
    target = {r.get("Id"): r.get("Target") for r in rels.findall("pr:Relationship", NS)}
    book = ET.fromstring(zf.read("xl/workbook.xml"))
    sheets = {}
    for sheet in book.findall("m:sheets/m:sheet", NS):
        path = target[sheet.get("{%s}id" % NS["r"])]
        path = path.lstrip("/") if path.startswith("/") else posixpath.normpath("xl/" + path)
        root = ET.fromstring(zf.read(path))
        rows = []
        for row in root.findall("m:sheetData/m:row", NS):
            cells = {}
            for c in row.findall("m:c", NS):
                kind, v = c.get("t", "n"), c.find("m:v", NS)
                if kind == "inlineStr":
                    is_ = c.find("m:is", NS)
                    val = text_of(is_) if is_ is not None else ""
                elif v is None or v.text is None:
                    val = ""
                elif kind == "s":
                    val = shared[int(v.text)]
                elif kind == "n" and re.fullmatch(r"-?\d+\.0+", v.text):
                    val = v.text.split(".")[0]
                else:
                    val = v.text
                cells[col_index(c.get("r"))] = val
            width = max(cells) + 1 if cells else 0
            rows.append([cells.get(i, "") for i in range(width)])
        sheets[sheet.get("name")] = rows
    return sheets


def columns(header, wanted):
    """Map each key of wanted to the index of the first header cell whose
    whitespace-collapsed text starts with the given prefix."""
    heads = [clean(h) for h in header]
    found = {}
    for key, prefix in wanted.items():
        idx = [i for i, h in enumerate(heads) if h.startswith(prefix)]
        if not idx:
            sys.exit("xid-catalogue: no column starting %r in %r" % (prefix, heads))
        found[key] = idx[0]
    return found


def data_rows(rows):
    for row in rows[1:]:
        if any(cell.strip() for cell in row):
            yield lambda i, row=row: row[i] if i < len(row) else ""


def xid_rows(rows):
    col = columns(rows[0], dict(
        code="Code", mnemonic="Mnemonic", description="Description",
        immediate="Resolution Bucket (Immediate Action)",
        investigatory="Resolution Bucket (Investigatory Action)",
        **{g: "Applies to " + g for g in GPUS}))
    out = []
    for cell in data_rows(rows):
        out.append({
            "xid": int(cell(col["code"]).strip()),
            "mnemonic": clean(cell(col["mnemonic"])),
            "description": clean(cell(col["description"])),
            "immediate": clean(cell(col["immediate"])),
            "investigatory": clean(cell(col["investigatory"])),
            "gpus": [g for g in GPUS if cell(col[g]).strip().upper() == "YES"],
        })
    numbers = [e["xid"] for e in out]
    if numbers != list(range(1, len(numbers) + 1)):
        warn("Xids sheet is not numbered 1..%d without gaps" % len(numbers))
    return out


def decode_rows(rows):
    col = columns(rows[0], dict(
        xid="Xid", subcode="Subcode",
        v1="(V1(<R575)) IntrInfo decode", v2="(V2(>=R575)) IntrInfo decode",
        status="Error Status",
        immediate="Resolution Bucket (Data Center Recovery Action)",
        action2="Action 2", severity="Severity"))
    out = []
    for n, cell in enumerate(data_rows(rows), start=2):
        entry = {
            "xid": int(cell(col["xid"]).strip()),
            "subcode": clean(cell(col["subcode"])),
            "intr_info_v1": cell(col["v1"]).strip(),
            "intr_info_v2": cell(col["v2"]).strip(),
            "error_status": [s.strip() for s in cell(col["status"]).split("/") if s.strip()],
            "immediate": clean(cell(col["immediate"])),
            "action2": clean(cell(col["action2"])),
            "severity": clean(cell(col["severity"])),
        }
        for key in ("intr_info_v1", "intr_info_v2"):
            if not MASK.fullmatch(entry[key]):
                warn("decode row %d (Xid %d %s): %s %r is not 32 chars of 0/1/-"
                     % (n, entry["xid"], entry["subcode"], key, entry[key]))
        out.append(entry)
    return out


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s Xid-Catalog.xlsx > checks/data/xid-catalogue.json" % argv[0])
    with open(argv[1], "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with zipfile.ZipFile(argv[1]) as zf:
        core = ET.fromstring(zf.read("docProps/core.xml"))
        sheets = read_sheets(zf)
    modified = core.find("dcterms:modified", NS)
    catalogue = {
        "title": "NVIDIA Xid Catalog (Xid-Catalog.xlsx)",
        "page": PAGE,
        "sha256": digest,
        "modified": (modified.text or "")[:10] if modified is not None else "",
        "generated_by": "scripts/xid-catalogue-from-xlsx.py",
    }

    def array(entries):
        lines = ["    " + json.dumps(e, ensure_ascii=False) for e in entries]
        return "[\n" + ",\n".join(lines) + "\n  ]" if lines else "[]"
    head = json.dumps(catalogue, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    xids = array(xid_rows(sheets["Xids"]))
    decode = array(decode_rows(sheets["Xid 144-150 Decode"]))
    sys.stdout.write('{\n  "schema": 1,\n  "catalogue": %s,\n  "xids": %s,\n'
                     '  "nvlink5_decode": %s\n}\n' % (head, xids, decode))


if __name__ == "__main__":
    main(sys.argv)
