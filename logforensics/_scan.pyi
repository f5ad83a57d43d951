"""Types of the C scan (``_scan.c``): the fast path's template tables."""

# A category's places in a scan: (count, first_index, first_offset, last_index, last_offset), -1 when absent.
Places = tuple[int, int, int, int, int]

class Templates:
    def __init__(self, *, ok_end: bytes = ..., request_mark: bytes = ..., request_min_len: int = ...,
                 request_window: int = ...) -> None: ...
    def add(self, template: bytes, category: int, layout: tuple[tuple[int, ...], ...] = ..., /) -> None:
        """Learn a template (digits as '0', no newline), its category and, for a decode
        template, the spans of its time parts and figures (serving.layout)."""
    def scan(self, block: bytes, pos: int, heads: Templates, end: int, width: int = ..., /
             ) -> tuple[int, int, Places, Places, Places, Places, list[tuple[int, ...]]]:
        """(end, lines, decode, prefill, access, request, buckets): the statistics lines of
        block[pos:end]; buckets: the decode lines' figures summed per bucket of width seconds."""
