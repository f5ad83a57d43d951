#!/usr/bin/env python3
"""Build logx's table of SGLang's flag spellings per release (``logforensics/data/sglang_flags.json.gz``).

A fix names flags; SGLang renames them (``--mamba-scheduler-strategy`` became
``--mamba-radix-cache-strategy`` in 0.5.14, the old spelling went in 0.5.20). This script reads
every release's argument definitions from the same wheels as ``tools/index_sglang.py``
(``parser.add_argument("--x", dest=…)`` calls, and since the dataclass-driven parser the
``Arg(cli_name=…, aliases=[…])`` of ``sglang/srt/arg_groups/fields``) and links each spelling to
the ServerArgs field it sets. Spellings that ever set one field (an alias of the new name, the
field renamed with it) are one *setting*; the table gives each setting's spellings with the
releases in which each was the setting's own name (an alias that only warns is not). A
deprecated spelling registered with ``new_flag=`` (``--disable-cuda-graph``'s
``--cuda-graph-backend-{decode,prefill}=disabled``) has what it names as its field's new name:
the old field may have no flag of its own left (``no_cli``).

    python tools/index_sglang_flags.py                 # every release >= 0.4.6 (wheels cached)
    python tools/index_sglang_flags.py --versions 0.5.13 0.5.14 --out FILE

Only settings whose name changed are stored: the rest need no translation.
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_sglang import release_data_args, wheel_for, write_data  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "logforensics" / "data" / "sglang_flags.json.gz"
ARG_FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/")
# actions that keep an old spelling working while they warn: an alias, never the name
DEPRECATED_ACTIONS = ("Deprecated",)


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _strings(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.List | ast.Tuple):
        return [s for s in (_const_str(e) for e in node.elts) if s]
    one = _const_str(node)
    return [one] if one else []


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


REPLACED = "replaced by the new_flag of "  # the pseudo-field of a deprecated spelling and its replacement
_BRACES = re.compile(r"(\S*)\{([^{}]+)\}(\S*)")


def expand_braces(text: str) -> str:
    """A replacement as a command line spells it: ``--x-{a,b}=v`` is ``--x-a=v --x-b=v``."""
    return _BRACES.sub(lambda m: " ".join(m[1] + part + m[3] for part in m[2].split(",")), text)


def spellings_of_source(source: str) -> list[tuple[str, str, bool]]:
    """``(flag, field, own_name)`` for each long flag a module defines: ``own_name`` False for
    a deprecated alias (its action warns and points at another spelling). A deprecated alias
    with ``new_flag=`` sets, as far as names go, a field of its own (``REPLACED`` + the flag)
    whose own name is the spelling it names, a value included
    (``--cuda-graph-backend-prefill=disabled``): several old flags that now set one field to
    different values each keep their own replacement."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[tuple[str, str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [a for a in (_const_str(x) for x in node.args) if a and a.startswith("--")]
            if not flags:
                continue
            dest = _const_str(_kw(node, "dest")) or _dest_of(flags[0])
            action = _kw(node, "action")
            action_name = ast.unparse(action) if action is not None else ""
            own = not any(word in action_name for word in DEPRECATED_ACTIONS)
            replacement = None if own else _const_str(_kw(node, "new_flag"))
            if replacement:  # the spelling its warning says to use instead: its setting's new name
                out += [(flag, REPLACED + flags[0], False) for flag in flags]
                out.append((expand_braces(replacement), REPLACED + flags[0], True))
            else:
                out += [(flag, dest, own) for flag in flags]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out += _field_spellings(node.target.id, node.annotation)
    return out


def _field_spellings(field: str, annotation: ast.AST) -> list[tuple[str, str, bool]]:
    """A dataclass field the parser is derived from (``A[T, "help"]`` or ``A[T, Arg(...)]``,
    ``A`` being ``Annotated``): ``--field-name`` or its ``cli_name``, and its aliases. A
    field without that metadata, or ``Arg(no_cli=True)``, has no flag."""
    if not (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
            and annotation.value.id in ("A", "Annotated") and isinstance(annotation.slice, ast.Tuple)):
        return []
    meta = annotation.slice.elts[1:]
    arg = next((m for m in meta if isinstance(m, ast.Call) and isinstance(m.func, ast.Name)
                and m.func.id == "Arg"), None)
    if arg is None:
        return [("--" + field.replace("_", "-"), field, True)] if any(_const_str(m) for m in meta) else []
    no_cli = _kw(arg, "no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return []
    name = _const_str(_kw(arg, "cli_name")) or "--" + field.replace("_", "-")
    own = not any(word in ast.unparse(_kw(arg, "action") or ast.Constant("")) for word in DEPRECATED_ACTIONS)
    return [(name, field, own)] + [(alias, field, own) for alias in _strings(_kw(arg, "aliases"))
                                   if alias.startswith("--")]


def spellings_of_wheel(path: Path) -> list[tuple[str, str, bool]]:
    with zipfile.ZipFile(path) as z:
        return [s for name in z.namelist() if name.endswith(".py") and name.startswith(ARG_FILES)
                for s in spellings_of_source(z.read(name).decode("utf-8", "replace"))]


def build(versions: list[str], cache: Path) -> dict:
    """The renamed settings of the releases' wheels (``settings_of``)."""
    return settings_of({v: spellings_of_wheel(wheel_for(v, cache)) for v in versions})


def settings_of(per_release: dict[str, list[tuple[str, str, bool]]]) -> dict:
    """The renamed settings: ``{"releases": [...], "settings": [{flag: [[first, last], ...]}]}``
    (a spelling's ranges are the releases where it is the setting's own name). A replacement
    (``--x=v``) is the name from the first release that names it for as long as its flags are
    own names: it outlives the deprecated alias that pointed to it."""
    versions = list(per_release)
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for found in per_release.values():  # a flag and every field it ever set are one setting
        for flag, field, _own in found:
            parent[find("flag:" + flag)] = find("field:" + field)
    owned: dict[str, dict[str, list[int]]] = {}
    replacements = {flag for found in per_release.values() for flag, field, own in found
                    if own and field.startswith(REPLACED)}
    named: set[str] = set()
    for i, v in enumerate(versions):
        own_flags = {flag for flag, _field, own in per_release[v] if own}
        named |= own_flags & replacements
        alive = {r for r in named if all(_flag_of(word) in own_flags for word in r.split() if word.startswith("--"))}
        for flag in sorted(own_flags | alive):
            runs = owned.setdefault(find("flag:" + flag), {}).setdefault(flag, [])
            if not runs or runs[-1] != i:  # a flag defined twice in a release is one name
                runs.append(i)
    settings = []
    for spellings in owned.values():
        if len(spellings) < 2:
            continue
        primary = {}
        for flag, idx in spellings.items():
            runs, start = [], idx[0]
            for a, b in zip(idx, idx[1:] + [None], strict=True):
                if b != a + 1:
                    runs.append([versions[start], versions[a]])
                    start = b
            primary[flag] = runs
        if any(r != next(iter(primary.values())) for r in primary.values()):  # not plain synonyms
            settings.append(dict(sorted(primary.items())))
    settings.sort(key=lambda s: sorted(s))
    return {"releases": versions, "settings": settings}


def _flag_of(word: str) -> str:
    """The flag of a command-line word: ``--x=v`` is ``--x``."""
    return word.split("=", 1)[0]


def main(argv: list[str] | None = None) -> int:
    versions, ns = release_data_args(__doc__.split("\n\n")[0], OUT, argv)
    data = build(versions, ns.cache)
    write_data(data, ns.out)
    print(f"{len(versions)} releases, {len(data['settings'])} renamed settings, "
          f"{ns.out.stat().st_size} bytes -> {ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
