#!/usr/bin/env python3
"""Build logx's index of SGLang's failure sites (``logforensics/data/sglang_sites.idx``).

SGLang's released wheels are the ground truth for what it can print when it fails. This
script downloads every release from 0.4.6 to the newest the registry lists (``pip download
sglang==X --no-deps``, cached under ``.cache/sglang-wheels/``, which git ignores), parses every
module under ``sglang/`` with :mod:`ast` and records each failure site: ``raise``, ``assert``,
``parser.error`` and ``logger.error``/``warning``/``critical``/``exception`` calls whose text
announces a failure. A site is kept once per (kind, exception type, message template, file,
function), with the release ranges in which exactly that template exists.

It also records the ``ServerArgs`` defaults that changed from one release to the next
(``logforensics/data/sglang_defaults.json``, read by ``logx diff``): a field's default as the
dataclass writes it, when it is a literal (many defaults are ``None`` there and resolved at
start-up from the GPU and model; those are not known to the index).

Usage (re-run it when SGLang releases; see README, "Keeping up with a new SGLang release")::

    python tools/index_sglang.py                 # every release >= 0.4.6 on the registry
    python tools/index_sglang.py --versions 0.5.23 0.5.24 --cache DIR --out FILE
    python tools/index_sglang.py --defaults-only # only the changed defaults (reads server_args.py)
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from logforensics._sites import index_bytes  # noqa: E402  (the index format logx reads)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "sglang-wheels"
OUT = ROOT / "logforensics" / "data" / "sglang_sites.idx"
DEFAULTS_OUT = ROOT / "logforensics" / "data" / "sglang_defaults.json"
FIRST = Version("0.4.6")

LOG_LEVELS = {"error": "log.error", "critical": "log.error", "exception": "log.error",
              "warning": "log.warning", "warn": "log.warning"}
# A warning is a failure site only when it says something failed or was refused.
FAILURE_WORDS = re.compile(
    r"(?i)\b(?:fail\w*|error\w*|not supported|unsupported|invalid|cannot|can't|could not|"
    r"unable|exceed\w*|must|mismatch\w*|not (?:found|enough|available|compatible|allowed)|"
    r"incompatible|out of memory|abort\w*|timed? ?out|crash\w*|disabl\w*|fall(?:ing)? ?back)\b")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
ENV = re.compile(r"\b(?:SGLANG|SGL|CUDA|NCCL|NVSHMEM|TORCH|PYTORCH|HF|TRANSFORMERS|FLASHINFER|"
                 r"TRITON|MC|ASCEND|HIP|ROCM|HSA|GLOO|MOONCAKE|NIXL|DEEPEP|VLLM)_[A-Z0-9_]*[A-Z0-9]\b")
ARG_ATTR = re.compile(r"\b(?:self\.)?server_args\.([a-z_][a-z0-9_]*)")
SELF_ATTR = re.compile(r"\bself\.([a-z_][a-z0-9_]*)")
HOLE_CHARS = re.compile(r"[^0-9a-zA-Z_]+")
MAX_TEXT = 300  # a condition's source text is cut here


def versions_on_registry(package: str = "sglang", first: Version = FIRST) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package],
                         capture_output=True, text=True, check=True).stdout
    listed = re.search(r"Available versions: (.*)", out)
    if not listed:
        raise SystemExit(f"pip index versions {package} listed no versions")
    found = [v.strip() for v in listed.group(1).split(",")]
    return sorted((v for v in found if Version(v) >= first), key=Version)


def wheel_for(version: str, cache: Path, package: str = "sglang") -> Path:
    """The release's wheel, downloaded into ``cache`` unless it is there already."""
    for path in cache.glob(f"{package}-{version}-*.whl"):
        return path
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps",
                    "--only-binary", ":all:", "-d", str(cache), "-q"], check=True)
    for path in cache.glob(f"{package}-{version}-*.whl"):
        return path
    raise SystemExit(f"no wheel for {package} {version} after download")


# — message templates ————————————————————————————————————————————————————————————————


def hole_name(node: ast.AST) -> str:
    """A name for a hole from the expression that fills it: ``self.server_args.tp_size`` →
    ``tp_size``, ``len(layers)`` → ``layers``, ``cfg["dtype"]`` → ``dtype``."""
    while True:
        if isinstance(node, ast.Attribute):
            return _ident(node.attr)
        if isinstance(node, ast.Name):
            return _ident(node.id)
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                return _ident(node.slice.value)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.args[0] if node.args else node.func
        elif isinstance(node, ast.FormattedValue):
            node = node.value
        else:
            return "value"


def _ident(text: str) -> str:
    name = HOLE_CHARS.sub("_", text).strip("_") or "value"
    return name if not name[0].isdigit() else "v" + name


Part = str | tuple[str]  # a literal piece, or (hole name,)


def template(node: ast.AST | None) -> list[Part]:
    """The message ``node`` builds, as literal pieces and named holes."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        return [str(node.value)] if isinstance(node.value, str | int | float) else [(hole_name(node),)]
    if isinstance(node, ast.JoinedStr):
        out: list[Part] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out.append(str(value.value))
            else:
                out.append((hole_name(value),))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template(node.left) + template(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_str(node.left):
        return percent_template(node.left.value, node.right)  # type: ignore[attr-defined]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "format" and _is_str(node.func.value):
        return format_template(node.func.value.value, node.args, node.keywords)  # type: ignore[attr-defined]
    return [(hole_name(node),)]


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


_PERCENT = re.compile(r"%(?:\((\w+)\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?[hlL]?([diouxXeEfFgGcrsa%])")


def percent_template(text: str, args: ast.AST) -> list[Part]:
    values = list(args.elts) if isinstance(args, ast.Tuple) else [args]
    out: list[Part] = []
    pos = 0
    i = 0
    for m in _PERCENT.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        if m.group(2) == "%":
            out.append("%")
        elif m.group(1):
            out.append((_ident(m.group(1)),))
        else:
            out.append((hole_name(values[i]) if i < len(values) else "value",))
            i += 1
    out.append(text[pos:])
    return out


_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def format_template(text: str, args: list[ast.expr], keywords: list[ast.keyword]) -> list[Part]:
    named = {k.arg: k.value for k in keywords if k.arg}
    out: list[Part] = []
    pos = 0
    auto = 0
    for m in _FIELD.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        if m.group(1) is None:
            out.append(m.group(0)[0])
            continue
        key = re.split(r"[!:.\[]", m.group(1), maxsplit=1)[0]
        if key == "":
            value = args[auto] if auto < len(args) else None
            auto += 1
        elif key.isdigit():
            value = args[int(key)] if int(key) < len(args) else None
        else:
            value = named.get(key)
            if value is None:
                out.append((_ident(key),))
                continue
        out.append((hole_name(value) if value is not None else "value",))
    out.append(text[pos:])
    return out


_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()]")


def to_regex(parts: list[Part]) -> str:
    """Literal pieces escaped, holes as lazy named groups (``(?P<n>.*?)``: one quantifier
    between two literals, never nested). Repeated names get a numeric suffix."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for part in _merge(parts):
        if isinstance(part, str):
            out.append(_SPECIAL.sub(r"\\\g<0>", part))
            continue
        name = part[0]
        seen[name] = seen.get(name, 0) + 1
        out.append(f"(?P<{name if seen[name] == 1 else f'{name}_{seen[name]}'}>.*?)")
    return "".join(out)


def _merge(parts: list[Part]) -> list[Part]:
    """Adjacent literals joined; adjacent holes merged (two lazy groups in a row would
    only make the match ambiguous)."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += part
                continue
        elif out and not isinstance(out[-1], str):
            continue
        out.append(part)
    return out


# — sites ——————————————————————————————————————————————————————————————————————————


def _src(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


class SiteFinder(ast.NodeVisitor):
    """Walks one module; ``sites`` gets one dict per failure site."""

    def __init__(self, file: str):
        self.file = file
        self.scope: list[str] = []  # class and function names
        self.conditions: list[str] = []
        self.sites: list[dict] = []

    # scopes
    def _scoped(self, node, name: str) -> None:
        self.scope.append(name)
        saved, self.conditions = self.conditions, []
        self.generic_visit(node)
        self.conditions = saved
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:  # noqa: N802
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node) -> None:  # noqa: N802
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_If(self, node: ast.If) -> None:  # noqa: N802
        self.visit(node.test)
        test = _src(node.test)
        self.conditions.append(test)
        for child in node.body:
            self.visit(child)
        self.conditions.pop()
        self.conditions.append(f"not ({test})")
        for child in node.orelse:
            self.visit(child)
        self.conditions.pop()

    # sites
    def visit_Raise(self, node: ast.Raise) -> None:  # noqa: N802
        exc = node.exc
        if exc is None:
            return
        if isinstance(exc, ast.Call):
            exc_type = _dotted(exc.func)
            message = exc.args[0] if exc.args else None
        else:
            exc_type, message = _dotted(exc), None
        if not exc_type or not exc_type.rsplit(".", 1)[-1][:1].isupper():
            return  # ``raise e`` / ``raise self._error(...)``: re-raises, not a site
        self._add("raise", exc_type.rsplit(".", 1)[-1], message, node, list(self.conditions))
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:  # noqa: N802
        self._add("assert", "AssertionError", node.msg, node,
                  list(self.conditions) + [f"not ({_src(node.test)})"])

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        func = node.func
        if isinstance(func, ast.Attribute) and node.args:
            owner = (_dotted(func.value) or "").rsplit(".", 1)[-1].lower()
            if func.attr == "error" and owner.endswith("parser"):
                self._add("parser.error", "argparse", node.args[0], node, list(self.conditions))
            elif func.attr in LOG_LEVELS and owner.endswith(("logger", "log", "logging")):
                parts = template(node.args[0] if len(node.args) == 1 else
                                 ast.BinOp(node.args[0], ast.Mod(), ast.Tuple(list(node.args[1:]))))
                literal = " ".join(p for p in parts if isinstance(p, str))
                if LOG_LEVELS[func.attr] == "log.error" or FAILURE_WORDS.search(literal):
                    self._add_parts(LOG_LEVELS[func.attr], "", parts, node, list(self.conditions))
        self.generic_visit(node)

    def arg_fields(self, text: str, code: str) -> set[str]:
        """The server arguments a site reads: ``server_args.X`` in its ``text`` (message,
        conditions, source), and ``self.X`` in its ``code`` inside ServerArgs itself."""
        args = set(ARG_ATTR.findall(text))
        if self.file.endswith("server_args.py"):
            args |= set(SELF_ATTR.findall(code))
        return args

    def _add(self, kind: str, exc_type: str, message, node, conditions: list[str]) -> None:
        self._add_parts(kind, exc_type, template(message), node, conditions)

    def _add_parts(self, kind: str, exc_type: str, parts: list[Part], node, conditions) -> None:
        function = ".".join(self.scope) or "<module>"
        texts = [p for p in parts if isinstance(p, str)] + conditions
        source = _src(node)
        joined = " ".join(texts + [source])
        args = self.arg_fields(joined, " ".join(conditions + [source]))
        flags = set(FLAG.findall(" ".join(texts)))
        self.sites.append({
            "k": kind, "t": exc_type, "re": to_regex(parts), "f": self.file, "fn": function,
            "c": conditions[-4:],
            "flags": sorted(flags), "env": sorted(set(ENV.findall(joined))),
            "args": sorted(args - {"server_args"}),
        })


def is_test(name: str) -> bool:
    """A server's own tests ship in the wheel; what they raise is never a server's failure."""
    parts = name.split("/")
    return any(p in ("test", "tests") for p in parts[:-1]) or parts[-1].startswith("test_")


def sites_of_wheel(path: Path, parsed: dict[tuple[str, bytes], list[dict]], package: str = "sglang",
                   finder_for: Callable[[str, zipfile.ZipFile], SiteFinder] | None = None,
                   skip: Callable[[str], bool] = is_test) -> list[dict]:
    """Every site of one wheel (the modules under ``package/`` that ``skip`` keeps), each walked
    by ``finder_for(file, wheel)`` (default: ``SiteFinder``). ``parsed`` remembers each
    (file, content hash) already walked: most modules do not change between two releases."""
    out: list[dict] = []
    with zipfile.ZipFile(path) as wheel:
        for name in sorted(wheel.namelist()):
            if not (name.startswith(f"{package}/") and name.endswith(".py")) or skip(name):
                continue
            data = wheel.read(name)
            key = (name, hashlib.sha1(data).digest())
            if key not in parsed:
                try:
                    tree = ast.parse(data)
                except (SyntaxError, ValueError):
                    tree = None
                finder = finder_for(name, wheel) if finder_for else SiteFinder(name)
                if tree is not None:
                    finder.visit(tree)
                parsed[key] = finder.sites
            out += parsed[key]
    return out


def ranges(indices: list[int], releases: list[str]) -> list[list[str]]:
    """``[[first, last], ...]``: consecutive release indices folded into ranges."""
    out: list[list[int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [[releases[a], releases[b]] for a, b in out]


def build(versions: list[str], cache: Path, package: str = "sglang",
          sites_of: Callable[[Path, dict], list[dict]] | None = None) -> dict:
    """The index over ``versions`` of ``package`` (``sites_of(wheel, parsed)``: a wheel's sites,
    default ``sites_of_wheel``)."""
    merged: dict[tuple, dict] = {}
    seen_in: dict[tuple, set[int]] = {}
    parsed: dict[tuple[str, bytes], list[dict]] = {}
    total = 0
    for index, version in enumerate(versions):
        wheel = wheel_for(version, cache, package)
        found = sites_of(wheel, parsed) if sites_of else sites_of_wheel(wheel, parsed)
        total += len(found)
        for site in found:
            key = (site["k"], site["t"], site["re"], site["f"], site["fn"])
            merged[key] = site  # the newest release's conditions, flags and line win
            seen_in.setdefault(key, set()).add(index)
        print(f"{version}: {len(found)} sites", file=sys.stderr)
    sites = []
    for key, site in merged.items():
        site["r"] = ranges(sorted(seen_in[key]), versions)
        sites.append({k: v for k, v in site.items() if v not in ([], "")})
    sites.sort(key=lambda s: (s["f"], s["fn"], s.get("re", "")))
    return {"releases": versions, "site_count_all_releases": total, "sites": sites}


# — ServerArgs defaults ————————————————————————————————————————————————————————————————


def defaults_of_wheel(path: Path) -> dict[str, object] | None:
    """``{field: default}`` of the release's ``ServerArgs`` dataclass, for the fields whose
    default is a literal; None when the wheel has no ``sglang/srt/server_args.py``."""
    with zipfile.ZipFile(path) as wheel:
        try:
            tree = ast.parse(wheel.read("sglang/srt/server_args.py"))
        except (KeyError, SyntaxError, ValueError):
            return None
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ServerArgs"), None)
    out: dict[str, object] = {}
    for stmt in cls.body if cls is not None else ():
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            try:
                out[stmt.target.id] = ast.literal_eval(stmt.value)
            except ValueError:  # a call or a name: resolved at run time
                continue
    return out


def build_defaults(versions: list[str], cache: Path) -> dict:
    """``{"releases": [...], "changes": {field: [[release, old, new], ...]}}``: each default
    that changed, in the release that changed it."""
    changes: dict[str, list] = {}
    previous: dict[str, object] | None = None
    read: list[str] = []
    for version in versions:
        defaults = defaults_of_wheel(wheel_for(version, cache))
        if defaults is None:
            continue
        read.append(version)
        for name, value in defaults.items() if previous is not None else ():
            if name in previous and previous[name] != value:
                changes.setdefault(name, []).append([version, previous[name], value])
        previous = defaults
    return {"releases": read, "changes": dict(sorted(changes.items()))}


def release_data_parser(description: str, out: Path) -> argparse.ArgumentParser:
    """The options shared by the scripts that build data from the wheels (``--versions``,
    ``--cache``, ``--out``)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--versions", nargs="*", help="releases to read (default: every one >= 0.4.6)")
    ap.add_argument("--cache", type=Path, default=CACHE, help="where wheels are kept")
    ap.add_argument("--out", type=Path, default=out)
    return ap


def release_data_args(description: str, out: Path, argv: list[str] | None) -> tuple[list[str], argparse.Namespace]:
    """The releases to read and the shared options, parsed."""
    ns = release_data_parser(description, out).parse_args(argv)
    return sorted(ns.versions or versions_on_registry(), key=Version), ns


def write_data(data: dict, out: Path) -> None:
    """``data`` as deterministic gzipped JSON (no timestamp: a rebuild is byte-identical)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    with open(out, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(payload)


def main(argv: list[str] | None = None) -> int:
    ap = release_data_parser(__doc__.split("\n\n")[0], OUT)
    ap.add_argument("--defaults-out", type=Path, default=DEFAULTS_OUT)
    ap.add_argument("--defaults-only", action="store_true", help="only the changed ServerArgs defaults")
    ns = ap.parse_args(argv)
    versions = sorted(ns.versions or versions_on_registry(), key=Version)
    defaults = build_defaults(versions, ns.cache)
    ns.defaults_out.write_text(json.dumps(defaults, indent=1, sort_keys=True) + "\n")
    print(f"{len(defaults['changes'])} ServerArgs defaults changed over {len(defaults['releases'])} releases "
          f"-> {ns.defaults_out}", file=sys.stderr)
    if ns.defaults_only:
        return 0
    write(build(versions, ns.cache), ns.out)
    return 0


def write(data: dict, out: Path) -> None:
    """A site index in the format logx reads (``logforensics._sites.index_bytes``: a rebuild is
    byte-identical), and what it holds."""
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = index_bytes(data["releases"], data["sites"], data["site_count_all_releases"])
    out.write_bytes(raw)
    templates = {(s.get("t", ""), s.get("re", "")) for s in data["sites"]}
    print(f"{len(data['releases'])} releases, {data['site_count_all_releases']} sites in all, "
          f"{len(data['sites'])} distinct sites, {len(templates)} unique templates, "
          f"{len(raw)} bytes -> {out}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
