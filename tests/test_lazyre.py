"""``lazy``: a module-level regex compiled at its first use, alike to ``re.compile``'s."""

import copy
import pickle
import re
import subprocess
import sys

from conftest import FIXTURES

from logforensics._lazyre import lazy

HEALTHY = FIXTURES / "none__healthy_tp1.log"


def test_a_lazy_pattern_matches_as_the_compiled_one():
    rx = lazy(r"(?P<n>\d+) GB", re.IGNORECASE)
    compiled = re.compile(r"(?P<n>\d+) GB", re.IGNORECASE)
    for text in ("used 12 gb of 80", "none", "7 GB"):
        assert (rx.search(text) and rx.search(text).groupdict()) == (compiled.search(text) and
                                                                     compiled.search(text).groupdict())
    assert rx.sub("#", "1 GB, 2 GB") == "#, #"
    assert rx.pattern == compiled.pattern and rx.flags == compiled.flags
    assert lazy(rb"\d+").findall(b"a1b22") == [b"1", b"22"]


def test_a_lazy_pattern_compiles_at_its_first_use_only(monkeypatch):
    compiled = []
    real = re.compile

    def counting(*args):
        compiled.append(args)
        return real(*args)

    monkeypatch.setattr(re, "compile", counting)
    rx = lazy(r"a+b")
    assert compiled == []
    assert rx.match("aab") and rx.match("ab") and not rx.match("b")
    assert compiled == [(r"a+b", 0)]


def test_a_lazy_pattern_survives_pickle_and_copy():
    rx = lazy(r"x(\d)")
    rx.search("x1")  # compiled: its found attributes are not what is pickled
    for twin in (pickle.loads(pickle.dumps(rx)), copy.copy(rx), copy.deepcopy(rx)):
        assert twin.search("ax7").group(1) == "7"


def test_reading_a_small_log_compiles_few_module_regexes():
    """Importing the whole analysis and reading a healthy log compiles only the regexes the
    log reaches: a module-level ``re.compile`` on the hot path (instead of ``lazy``) fails this."""
    probe = (
        "import re, sys\n"
        "real, sources = re.compile, []\n"
        "def counting(*args, **kwargs):\n"
        "    if sys._getframe(1).f_globals['__name__'].startswith('logforensics'):\n"
        "        sources.append(args[0])\n"
        "    return real(*args, **kwargs)\n"
        "re.compile = counting\n"
        "import logforensics._analysis as analysis\n"
        "at_import = len(sources)\n"
        f"analysis.explain({str(HEALTHY)!r})\n"
        "print(at_import, len(sources))\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    at_import, after_reading = map(int, res.stdout.split())
    assert at_import <= 2, res.stdout
    assert after_reading < 60, res.stdout
