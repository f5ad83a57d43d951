"""Types of the C scan (``_scan.c``): the fast path's template tables."""

# A category's places in a scan: (count, first_index, first_offset, last_index, last_offset), -1 when absent.
Places = tuple[int, int, int, int, int]
# A wrapper class's last line in a scan: (class, index, offset, category).
WrapperLast = tuple[int, int, int, int]
# (end, lines, decode, prefill, access, request, note, warn, server_error, error_line, wrappers, buckets)
Scanned = tuple[int, int, Places, Places, Places, Places, Places, Places, Places, Places, list[WrapperLast],
                list[tuple[int, ...]]]

DECODE: int
PREFILL: int
ACCESS: int
REQUEST: int
BLANK: int
NOTE: int
WARN: int
SERVER_ERROR: int
ERROR_LINE: int
MAX_TEMPLATE: int
TIME_PARTS: int
FIGURES: int
NO_YEAR: int
WRAPPERS: int

class Templates:
    def __init__(self, *, request_mark: bytes = ..., request_min_len: int = ..., request_window: int = ...) -> None: ...
    def add(self, template: bytes, category: int, layout: tuple[tuple[int, ...], ...] = ..., status_at: int = ...,
            health: bool = ..., wrapper: int = ..., /) -> None:
        """Learn a template (digits as '0', no newline), its category, for a decode template the
        spans of its time parts and figures (serving.layout), for an access template the place
        of its status and whether its path is a health check's, and the class (0..WRAPPERS-1)
        of its lines' wrapper."""
    def scan(self, block: bytes, pos: int, heads: Templates, end: int, width: int = ..., /) -> Scanned:
        """The statistics lines of block[pos:end]; wrappers: each wrapper class's last line;
        buckets: the decode lines' figures summed per bucket of width seconds."""
