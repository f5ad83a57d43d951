"""Redaction of what a log should not carry outside: tokens and keys, e-mail addresses, IP
addresses, host names and user names.

A log pasted into a public issue is read by strangers. Each secret or name becomes a stable
placeholder (``<ip-1>``, ``<host-1>``, ``<user>``, ``<token-1>``): the same value gets the same
placeholder everywhere, so the lines still read ("rank 1 at <ip-2> cannot reach <ip-1>:29500").
What the diagnosis reads stays: version strings are not addresses (``vllm==0.9.0.1``),
``0.0.0.0`` and loopback addresses are not anyone's, public sites (huggingface.co,
github.com, pytorch.org, …) are not host names to hide, and a ``key=value`` keeps its key.

``Redactor.learn`` first collects the names only a context reveals (``user@host:~$``, NCCL's
``host:pid:tid`` prefix, ``MASTER_ADDR=host``, a syslog host); ``Redactor.redact`` then replaces
them wherever they appear. ``Redactor.summary`` says what was replaced and how many times.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Iterable

import regex

from ._record import record

USER_REGEX_TIMEOUT = 0.25  # seconds per search with a --redact regex (a user's regex may backtrack)

# What each kind of placeholder stands for, in the order the summary lists them.
KINDS = {
    "token": ("token or key", "tokens and keys"),
    "email": ("e-mail address", "e-mail addresses"),
    "ipv4": ("IPv4 address", "IPv4 addresses"),
    "ipv6": ("IPv6 address", "IPv6 addresses"),
    "host": ("host name", "host names"),
    "user": ("user name", "user names"),
    "custom": ("--redact match", "--redact matches"),
}
_PLACEHOLDER_NAME = {"token": "token", "email": "email", "ipv4": "ip", "ipv6": "ipv6", "host": "host",
                     "user": "user", "custom": "redacted"}

# — tokens and keys ———————————————————————————————————————————————————————————————————
_TOKENS = re.compile(
    r"\bhf_[A-Za-z0-9]{30,}\b"                       # Hugging Face
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"       # OpenAI / Anthropic style
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_\w{30,}"  # GitHub
    r"|\beyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}"      # a JWT
)
_BEARER = re.compile(r"(\bBearer\s+)([\w.~+/=-]{8,})")
# key=value / key: value / 'key': 'value' where the key names a secret (HF_TOKEN=…, api_key='…',
# "password": "…"); the key and the quoting stay.
_SECRET_KV = re.compile(
    r"(?i)((?:\b[\w-]{0,40}?(?:api[_-]?key|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?access)?(?:[_-]?key)?|password"
    r"|passwd|(?:hf|hub|access|auth|api|bearer|refresh|session|github|gh)[_-]?token)|(?<![\w-])token)"
    r"['\"]?\s{0,3}[=:]\s{0,3}['\"]?)"
    r"([^\s'\",;(){}\[\]]{1,512}+)(?!\()")  # a value followed by "(" is code: torch.zeros(
_SECRET_FLAG = re.compile(r"(--[\w-]*(?:api-key|token|secret|password)[ =])(?!--)([^\s'\"]{1,512})")
_URL_USERINFO = re.compile(r"(://)([^\s/:@]{1,128}):([^\s/@]{1,256})@")
_NOT_A_SECRET = frozenset({"none", "null", "nil", "true", "false", "", "***", "redacted", "<redacted>"})

# — addresses ——————————————————————————————————————————————————————————————————————————
_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
                    r"\.[A-Za-z]{2,24}\b")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\d)")
_VERSION_BEFORE = re.compile(r"(?:[=<>~!]=|version:?\s?)$", re.I)  # "vllm==0.9.0.1", "version 1.2.3.4"
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")

# — host names —————————————————————————————————————————————————————————————————————————
# A dotted name is a host only when it ends in a top-level domain; the list leaves out the
# TLDs that are also file extensions in these logs (.py, .so, .sh, .cc, .cu, .in, .pl, .rs, .md)
# or attribute names in code (.app, .dev, .id, .me, .info).
_TLDS = ("com|net|org|io|ai|co|internal|local|lan|corp|localdomain|svc|cluster|cloud|edu|gov|"
         "uk|de|fr|cn|jp|kr|ru|nl|eu|ca|au|sg|hk|tw|ch|se|fi|br")
_FQDN = re.compile(rf"(?i)(?<![\w.-])(?!self\.|cls\.)(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.){{1,8}}(?:{_TLDS})"
                   r"(?![\w(-]|\.\w)")  # not code: self.app(…)
PUBLIC_DOMAINS = (
    "huggingface.co", "hf.co", "hf-mirror.com", "github.com", "githubusercontent.com", "github.io", "pytorch.org",
    "nvidia.com", "python.org", "pypi.org", "pythonhosted.org", "sglang.ai", "vllm.ai", "readthedocs.io",
    "flashinfer.ai", "docker.com", "docker.io", "ubuntu.com", "anaconda.org", "anaconda.com", "conda.io",
    "modelscope.cn", "openai.com", "google.com", "googleapis.com", "microsoft.com", "example.com",
    "stackoverflow.com", "nccl.dev", "ray.io", "anyscale.com", "triton-lang.org", "fastapi.tiangolo.com",
    "uvicorn.org", "gnu.org", "kernel.org", "debian.org", "microsoft.com", "amd.com", "intel.com",
)
# Contexts that say a word is a host or a user name (learned, then replaced everywhere).
_HOST_CONTEXTS = (
    re.compile(r"^([A-Za-z0-9][\w.-]{0,62}):\d+:\d+ \[\d+\] NCCL"),  # NCCL's "host:pid:tid [dev] NCCL …"
    re.compile(r"(?i)\b(?:hostname|host_name|nodename|node_name|master_addr|dist_init_addr|host)['\"]?\s{0,3}[=:]\s{0,3}"
               r"['\"]?\[?([A-Za-z][\w.-]{0,62})"),
    re.compile(r"\[([A-Za-z][\w.-]{0,62})\]:\d{2,5}\b"),  # torch's SocketImpl "addr=[host]:port"
    re.compile(r"\b[a-z_][\w.-]{0,31}@([A-Za-z][\w-]{0,62})(?=[:\s\]]\S*[$#])"),  # shell prompt "user@host:~$"
    re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.]+\S*) ([A-Za-z][\w.-]{0,62}) "
               r"[\w./-]+(?:\[\d+\])?: "),  # syslog / journald "Mar 23 14:01:38 host prog[123]: "
)
_NOT_A_HOST = frozenset({"localhost", "none", "null", "true", "false", "auto", "default", "unknown", "ip", "host",
                         "port", "0.0.0.0"})
_USER_PATHS = re.compile(r"(/home/|/Users/|\b[A-Z]:\\Users\\)([A-Za-z0-9._-]{1,64})")
_USER_CONTEXTS = (
    re.compile(r"\b([a-z_][\w.-]{0,31})@[A-Za-z][\w-]{0,62}(?=[:\s\]]\S*[$#])"),  # shell prompt
    re.compile(r"\b(?:USER|LOGNAME|user|username)=['\"]?([A-Za-z_][\w.-]{0,31})"),
)
_NOT_A_USER = frozenset({"root", "<user>", "user"})


@record(frozen=True)
class Replacement:
    """One kind of redaction in a summary: ``distinct`` values replaced ``count`` times."""

    kind: str
    distinct: int
    count: int
    placeholders: tuple[str, ...]

    @property
    def what(self) -> str:
        singular, plural = KINDS[self.kind]
        return singular if self.distinct == 1 else plural

    def to_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, "distinct": self.distinct, "count": self.count,
                "placeholders": list(self.placeholders)}


class RedactionError(ValueError):
    """A ``--redact`` regex that is invalid or too slow; the message is one line."""


class Redactor:
    """Replace secrets and names with stable placeholders; count what was replaced.

    ``patterns``: extra regexes (``--redact``), replaced whole by ``<redacted-N>``. With
    ``enabled=False`` only those extra patterns apply (``--no-redact --redact X``)."""

    def __init__(self, patterns: Iterable[str] = (), enabled: bool = True):
        self.enabled = enabled
        self.patterns = tuple(patterns)
        try:
            self.custom = [regex.compile(p) for p in self.patterns]
        except regex.error as exc:
            raise RedactionError(f"--redact: not a valid regex: {exc}") from None
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        self._counts: Counter[str] = Counter()
        self.hosts: set[str] = set()  # learned from context; replaced wherever they appear
        self.users: set[str] = set()
        self._names_rx: re.Pattern | None = None

    def fresh(self) -> Redactor:
        """A redactor with the same settings and nothing seen yet."""
        return Redactor(self.patterns, self.enabled)

    # — placeholders ——————————————————————————————————————————————————————————————————
    def placeholder(self, kind: str, value: str) -> str:
        """The stable placeholder of ``value`` (one per distinct value, numbered by first sight)."""
        known = self._maps[kind]
        if value not in known:
            n = len(known) + 1
            name = _PLACEHOLDER_NAME[kind]
            known[value] = f"<{name}>" if kind == "user" and n == 1 else f"<{name}-{n}>"
        self._counts[kind] += 1
        return known[value]

    # — learning names from context ———————————————————————————————————————————————————
    def learn(self, lines: Iterable[str]) -> None:
        """Collect host and user names that only a context shows (a shell prompt, NCCL's
        prefix, ``MASTER_ADDR=…``), so every occurrence is replaced, earlier lines included."""
        if not self.enabled:
            return
        for text in lines:
            for rx in _HOST_CONTEXTS:
                for m in rx.finditer(text):
                    self._learn_host(m.group(1))
            for rx in _USER_CONTEXTS:
                for m in rx.finditer(text):
                    self._learn_user(m.group(1))
            for m in _USER_PATHS.finditer(text):
                self._learn_user(m.group(2))
        self._names_rx = None

    def _learn_host(self, name: str) -> None:
        name = name.rstrip(".-")
        if (len(name) < 2 or name.lower() in _NOT_A_HOST or _is_public(name) or _IPV4.fullmatch(name)
                or name.startswith("<")):
            return
        self.hosts.add(name)

    def _learn_user(self, name: str) -> None:
        if len(name) >= 2 and name not in _NOT_A_USER and not name.startswith("<"):
            self.users.add(name)

    def _names(self) -> re.Pattern | None:
        """One regex for the learned names that are safe to replace as words anywhere: a name
        with a digit, a dot or a hyphen (``gpu-node-01``, ``a1b2c3d4e5f6``). A plain word
        (a host called ``sglang``) is replaced only where a context names it."""
        if self._names_rx is None:
            words = sorted((n for n in self.hosts | self.users if re.search(r"[\d.-]", n)), key=len, reverse=True)
            if not words:
                return None
            alternatives = "|".join(re.escape(w) for w in words)
            self._names_rx = re.compile(rf"(?<![\w.<-])(?:{alternatives})(?![\w-]|\.\w)")
        return self._names_rx

    # — redaction —————————————————————————————————————————————————————————————————————
    def redact(self, text: str) -> str:
        """``text`` with every secret and name replaced by its placeholder."""
        for rx in self.custom:
            text = _sub_timed(rx, lambda m: self.placeholder("custom", m.group(0)), text)
        if not self.enabled:
            return text
        text = _TOKENS.sub(lambda m: self.placeholder("token", m.group(0)), text)
        text = _BEARER.sub(lambda m: m.group(1) + self.placeholder("token", m.group(2)), text)
        text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{self._user(m.group(2))}:"
                                           f"{self.placeholder('token', m.group(3))}@", text)
        text = _SECRET_KV.sub(self._secret_value, text)
        text = _SECRET_FLAG.sub(self._secret_value, text)
        text = _EMAIL.sub(lambda m: self.placeholder("email", m.group(0)), text)
        text = _USER_PATHS.sub(lambda m: m.group(1) + self._user(m.group(2)), text)
        text = self._context_names(text)
        names = self._names()
        if names is not None:
            text = names.sub(lambda m: self._name(m.group(0)), text)
        text = _FQDN.sub(self._fqdn, text)
        text = _IPV6.sub(self._ipv6, text)
        return _IPV4.sub(self._ipv4, text)

    def redact_all(self, texts: Iterable[str]) -> list[str]:
        """Learn from all ``texts`` first, then redact each (placeholders stable across them)."""
        texts = list(texts)
        self.learn(texts)
        return [self.redact(t) for t in texts]

    def _user(self, name: str) -> str:
        if name in _NOT_A_USER or name.startswith("<"):
            return name
        return self.placeholder("user", name)

    def _name(self, name: str) -> str:
        return self.placeholder("host", name) if name in self.hosts else self._user(name)

    def _context_names(self, text: str) -> str:
        """Learned names in the contexts that named them (also the plain-word ones)."""
        for rx in _USER_CONTEXTS:  # first: a prompt's user is only seen beside its host's name
            text = _sub_group(rx, text, lambda v: self._user(v) if v in self.users else v)
        for rx in _HOST_CONTEXTS:
            text = _sub_group(rx, text, lambda v: self.placeholder("host", v) if v in self.hosts else v)
        return text

    def _secret_value(self, m: re.Match) -> str:
        key, value = m.group(1), m.group(2)
        bare_token = re.match(r"(?i)token\b", key)
        if (value.lower() in _NOT_A_SECRET or value.startswith("<") or value.isdigit()
                or re.fullmatch(r"[\d.eE+-]+", value)
                or (bare_token and not _looks_like_a_key(value))):
            return m.group(0)
        return key + self.placeholder("token", value)

    def _fqdn(self, m: re.Match) -> str:
        name = m.group(0)
        return name if _is_public(name) else self.placeholder("host", name)

    def _ipv4(self, m: re.Match) -> str:
        value = m.group(0)
        before = m.string[max(0, m.start() - 8):m.start()]
        if _VERSION_BEFORE.search(before) or _keeps_address(value):
            return value
        return self.placeholder("ipv4", value)

    def _ipv6(self, m: re.Match) -> str:
        value = m.group(0)
        if sum(1 for g in value.split(":") if g) < 2 or not re.search(r"\d", value):
            return value  # "c10::", "a::b": C++ names, not addresses
        try:
            addr = ipaddress.IPv6Address(value)
        except ValueError:
            return value  # "14:02:10" and other colon-separated numbers
        if addr.is_loopback or addr.is_unspecified:
            return value
        return self.placeholder("ipv6", value)

    # — the summary ———————————————————————————————————————————————————————————————————
    def summary(self) -> list[Replacement]:
        """What was replaced: per kind, the distinct values and the number of replacements."""
        return [Replacement(kind, len(self._maps[kind]), self._counts[kind],
                            tuple(dict.fromkeys(self._maps[kind].values())))
                for kind in KINDS if self._counts[kind]]


def _looks_like_a_key(value: str) -> bool:
    """A bare ``token: …`` value is a secret only when it looks like one (long, letters and
    digits): ``#token: 1234`` in a batch line is a count."""
    return len(value) >= 12 and bool(re.search(r"\d", value)) and bool(re.search(r"[A-Za-z]", value))


def _is_public(name: str) -> bool:
    lower = name.lower().rstrip(".")
    return any(lower == d or lower.endswith("." + d) for d in PUBLIC_DOMAINS)


def _keeps_address(value: str) -> bool:
    """Addresses that are nobody's: unspecified, loopback, a first octet of 0, broadcast."""
    return value.startswith(("0.", "127.", "255."))


def _sub_group(rx: re.Pattern, text: str, replace: Callable[[str], str]) -> str:
    """Replace group 1 of each match of ``rx`` in ``text`` by ``replace(group)``."""
    out, last = [], 0
    for m in rx.finditer(text):
        out.append(text[last:m.start(1)])
        out.append(replace(m.group(1)))
        last = m.end(1)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _sub_timed(rx: regex.Pattern, replace: Callable, text: str) -> str:
    """``rx.sub`` with a timeout. A user's regex that backtracks stops the excerpt: a line it
    could not finish might still hold what it was meant to hide."""
    try:
        return rx.sub(replace, text, timeout=USER_REGEX_TIMEOUT)
    except TimeoutError:
        raise RedactionError(f"--redact {rx.pattern!r}: too slow on a line of {len(text)} characters "
                             "(a regex that backtracks); simplify it") from None
