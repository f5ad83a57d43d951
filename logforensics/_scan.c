/* The statistics scan of ``FastPath.consume`` in C (optional: _fastpath.py has the same
 * logic in Python and uses it when this module is not built).
 *
 * A serving log is mostly batch-statistics and HTTP access lines, with frequent lines that
 * only count (a known warning, a plain message, a 5xx answer). The analysis learns, through
 * its full pipeline, which line *templates* (the line with every digit made '0') are such
 * lines; ``Templates.scan`` then walks a block of complete lines and consumes every line
 * whose template is a learned statistics one (or that is a --log-requests line by its head),
 * stopping at the first line that is not: a new template (the caller learns it), any other
 * line (the caller feeds it to the full pipeline). It returns the counts and the positions of
 * the lines that represent the stretch, so the caller feeds only those through the full
 * pipeline. No Python object is made per line.
 *
 * Categories are small ints shared with _fastpath.py (a test checks they agree). The marks a
 * statistics line is tested for come from the log's dialect (``dialects.base.StatsMarks``),
 * given when a table is made: ``Templates(request_mark=…, request_min_len=…,
 * request_window=…)``; a table made without them counts no request-log lines. An ACCESS
 * template is learned with the place of its status (``status_at``): a line of it is ACCESS
 * below 500, SERVER_ERROR from 500 (the full path reads a 5xx answer to a health path).
 *
 * The serving series (``serving.Series``): a DECODE template may be learned with its *layout*,
 * the spans of its time parts and of its figures (the same in every line of the template, whose
 * digits sit at fixed places). ``scan`` then reads every decode line's time and figures there
 * and sums them per time bucket of ``width`` seconds (integers: milli-units), so the series is
 * built from every statistics line, not a sample, without a Python object per line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { OTHER = 0, DECODE = 1, PREFILL = 2, ACCESS = 3, REQUEST = 4, BLANK = 5, NOTE = 6, WARN = 7, SERVER_ERROR = 8,
       ERROR_LINE = 9 };
#define CATEGORIES (ERROR_LINE + 1)

#define MAX_TEMPLATE 1024 /* _fastpath.TEMPLATE_MAX_BYTES: longer lines are never statistics */
#define TIME_PARTS 6      /* serving.TIME_PARTS: year (length 0: not printed), month, day, h, m, s */
#define FIGURES 4         /* len(serving.SERIES_FIELDS) */
#define SPANS (TIME_PARTS + FIGURES)
#define AGG (1 + 3 * FIGURES) /* serving.Series bucket: lines, then count, sum, max of each figure */
#define NO_YEAR 2000      /* serving.NO_YEAR: the year of a time printed without one */
#define WRAPPERS 16       /* _fastpath.WRAPPER_CLASSES: the wrapper classes a scan keeps a last line of */

typedef struct {
    uint64_t hash;
    PyObject *template; /* bytes, owned; NULL = empty slot */
    int category;
    int has_layout;
    Py_ssize_t status_at; /* ACCESS: where the status's first digit is; -1 none */
    int health;           /* ACCESS: a health-check path (a 5xx answer to it is not counted) */
    int wrapper;          /* the class of the lines' wrapper (their stream's outer part), 0..WRAPPERS-1 */
    Py_ssize_t spans[SPANS][2]; /* (offset, length) in the line; length 0: absent */
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *slots;
    Py_ssize_t capacity; /* a power of two */
    Py_ssize_t used;
    /* the dialect's marks: a request-log line is longer than request_min_len and holds
     * request_mark in its first request_window bytes */
    char request_mark[MAX_TEMPLATE];
    Py_ssize_t request_mark_len;
    Py_ssize_t request_min_len;
    Py_ssize_t request_window;
} TemplatesObject;

/* A fast hash over 8-byte words, the last one zero-padded, then the length (the key is
 * verified with memcmp, so it only has to spread). ``line_template`` computes the same as it
 * makes a line's template. */
#define HASH_SEED 0x9E3779B97F4A7C15ULL
#define HASH_MIX(h, w) ((h) = ((h) ^ (w)) * 0xFF51AFD7ED558CCDULL, (h) ^= (h) >> 32)

static uint64_t
hash_end(uint64_t h, Py_ssize_t len)
{
    h = (h ^ (uint64_t)len) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

static uint64_t
hash_bytes(const unsigned char *p, Py_ssize_t len)
{
    uint64_t h = HASH_SEED;
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        HASH_MIX(h, w);
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(len - i));
        HASH_MIX(h, w);
    }
    return hash_end(h, len);
}

static Entry *
find_slot(Entry *slots, Py_ssize_t capacity, uint64_t hash, const unsigned char *key, Py_ssize_t len)
{
    Py_ssize_t mask = capacity - 1;
    Py_ssize_t i = (Py_ssize_t)(hash & (uint64_t)mask);
    for (;;) {
        Entry *e = &slots[i];
        if (e->template == NULL)
            return e;
        if (e->hash == hash && PyBytes_GET_SIZE(e->template) == len
                && memcmp(PyBytes_AS_STRING(e->template), key, (size_t)len) == 0)
            return e;
        i = (i + 1) & mask;
    }
}

static int
grow(TemplatesObject *self)
{
    Py_ssize_t capacity = self->capacity ? self->capacity * 2 : 64;
    Entry *slots = PyMem_Calloc((size_t)capacity, sizeof(Entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->capacity; i++) {
        Entry *old = &self->slots[i];
        if (old->template == NULL)
            continue;
        Entry *e = find_slot(slots, capacity, old->hash, (const unsigned char *)PyBytes_AS_STRING(old->template),
                             PyBytes_GET_SIZE(old->template));
        *e = *old;
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->capacity = capacity;
    return 0;
}

static void
Templates_dealloc(TemplatesObject *self)
{
    for (Py_ssize_t i = 0; i < self->capacity; i++)
        Py_CLEAR(self->slots[i].template);
    PyMem_Free(self->slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject TemplatesType;

static int
Templates_init(TemplatesObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"request_mark", "request_min_len", "request_window", NULL};
    const char *mark = "";
    Py_ssize_t mark_len = 0, min_len = 0, window = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$y#nn:Templates", keywords, &mark, &mark_len, &min_len,
                                     &window))
        return -1;
    if (mark_len > MAX_TEMPLATE || window < 0 || window > MAX_TEMPLATE || min_len < 0) {
        PyErr_SetString(PyExc_ValueError, "request_mark and request_window must fit the template cap");
        return -1;
    }
    memcpy(self->request_mark, mark, (size_t)mark_len);
    self->request_mark_len = mark_len;
    self->request_min_len = min_len;
    self->request_window = window;
    return 0;
}

/* ``layout``: () or SPANS (offset, length) pairs lying in a line of the template's length. */
static int
read_layout(PyObject *layout, Py_ssize_t len, Py_ssize_t spans[SPANS][2], int *has_layout)
{
    *has_layout = 0;
    if (layout == NULL || PyTuple_GET_SIZE(layout) == 0)
        return 0;
    if (PyTuple_GET_SIZE(layout) != SPANS)
        goto bad;
    for (int i = 0; i < SPANS; i++) {
        PyObject *pair = PyTuple_GET_ITEM(layout, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
            goto bad;
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1));
        if (PyErr_Occurred())
            return -1;
        if (at < 0 || n < 0 || n > 18 || at + n > len)
            goto bad;
        spans[i][0] = at;
        spans[i][1] = n;
    }
    *has_layout = 1;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "layout must be () or 10 (offset, length) spans inside the template");
    return -1;
}

static PyObject *
Templates_add(TemplatesObject *self, PyObject *args)
{
    PyObject *template, *layout = NULL;
    int category, health = 0, wrapper = 0;
    Py_ssize_t status_at = -1;
    if (!PyArg_ParseTuple(args, "Si|O!npi:add", &template, &category, &PyTuple_Type, &layout, &status_at, &health,
                          &wrapper))
        return NULL;
    if (wrapper < 0 || wrapper >= WRAPPERS) {
        PyErr_SetString(PyExc_ValueError, "wrapper must be a class 0..15");
        return NULL;
    }
    if (category < OTHER || (category > WARN && category != ERROR_LINE)) {
        PyErr_SetString(PyExc_ValueError,
                        "category must be OTHER, DECODE, PREFILL, ACCESS, REQUEST, BLANK, NOTE, WARN or ERROR_LINE");
        return NULL;
    }
    if (PyBytes_GET_SIZE(template) > MAX_TEMPLATE) {
        PyErr_SetString(PyExc_ValueError, "template longer than the template cap");
        return NULL;
    }
    Py_ssize_t len = PyBytes_GET_SIZE(template);
    Py_ssize_t spans[SPANS][2] = {{0}};
    int has_layout;
    if (read_layout(layout, len, spans, &has_layout) < 0)
        return NULL;
    if (status_at < -1 || status_at >= len) {
        PyErr_SetString(PyExc_ValueError, "status_at must be -1 or inside the template");
        return NULL;
    }
    if ((self->used + 1) * 2 > self->capacity && grow(self) < 0)
        return NULL;
    const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(template);
    uint64_t hash = hash_bytes(key, len);
    Entry *e = find_slot(self->slots, self->capacity, hash, key, len);
    if (e->template == NULL) {
        Py_INCREF(template);
        e->template = template;
        e->hash = hash;
        self->used++;
    }
    e->category = category;
    e->has_layout = has_layout;
    e->status_at = status_at;
    e->health = health;
    e->wrapper = wrapper;
    memcpy(e->spans, spans, sizeof(spans));
    Py_RETURN_NONE;
}

/* serving.milli: the number in ``n`` bytes at ``p`` ("456.78") in thousandths, extra decimals
 * dropped; -1 when the span is absent. */
static int64_t
milli(const char *p, Py_ssize_t n)
{
    if (n == 0)
        return -1;
    int64_t whole = 0, frac = 0;
    int decimals = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (p[k] == '.') {
            decimals = 0;
        } else if (decimals < 0) {
            whole = whole * 10 + (p[k] - '0');
        } else if (decimals < 3) {
            frac = frac * 10 + (p[k] - '0');
            decimals++;
        }
    }
    for (decimals = decimals < 0 ? 0 : decimals; decimals < 3; decimals++)
        frac *= 10;
    return whole * 1000 + frac;
}

static int64_t
number(const char *p, Py_ssize_t n, int64_t absent)
{
    if (n == 0)
        return absent;
    int64_t v = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        v = v * 10 + (p[k] - '0');
    return v;
}

/* serving.days_from_civil: days since 1970-01-01 (Howard Hinnant's algorithm, year >= 1). */
static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = y / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* serving.point: the line's time (seconds) and figures (milli-units, -1 absent). */
static int64_t
line_point(const char *line, const Entry *e, int64_t figures[FIGURES])
{
    int64_t t[TIME_PARTS];
    for (int i = 0; i < TIME_PARTS; i++)
        t[i] = number(line + e->spans[i][0], e->spans[i][1], i == 0 ? NO_YEAR : 0);
    for (int i = 0; i < FIGURES; i++)
        figures[i] = milli(line + e->spans[TIME_PARTS + i][0], e->spans[TIME_PARTS + i][1]);
    return days_from_civil(t[0], t[1], t[2]) * 86400 + t[3] * 3600 + t[4] * 60 + t[5];
}

static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Append the bucket ``key`` summed in ``agg`` to ``out`` as (key, lines, count0, sum0, max0, …). */
static int
flush_bucket(PyObject *out, int64_t key, const int64_t agg[AGG])
{
    PyObject *item = PyTuple_New(AGG + 1);
    if (item == NULL)
        return -1;
    PyTuple_SET_ITEM(item, 0, PyLong_FromLongLong(key));
    for (int i = 0; i < AGG; i++)
        PyTuple_SET_ITEM(item, i + 1, PyLong_FromLongLong(agg[i]));
    for (int i = 0; i <= AGG; i++) {
        if (PyTuple_GET_ITEM(item, i) == NULL) {
            Py_DECREF(item);
            return -1;
        }
    }
    int rc = PyList_Append(out, item);
    Py_DECREF(item);
    return rc;
}

static void
translate(const char *line, Py_ssize_t len, unsigned char *out)
{
    for (Py_ssize_t k = 0; k < len; k++) {
        unsigned char ch = (unsigned char)line[k];
        out[k] = (ch >= '1' && ch <= '9') ? '0' : ch;
    }
}

/* The length of the line at ``line``: up to the first newline before ``end``, -1 when there is
 * none. memchr (the C library's, vectorised) finds it faster than a loop of ours could, and a
 * long line (a --log-requests line, a dumped config) is then never translated: only lines
 * within the template cap have a template. */
static Py_ssize_t
line_length(const char *line, const char *end)
{
    Py_ssize_t left = end - line;
    Py_ssize_t head = left < MAX_TEMPLATE + 1 ? left : MAX_TEMPLATE + 1;
    const char *nl = memchr(line, '\n', (size_t)head);
    if (nl == NULL && left > head)
        nl = memchr(line + head, '\n', (size_t)(left - head));
    return nl == NULL ? -1 : nl - line;
}

/* The template of the ``len`` (<= MAX_TEMPLATE) bytes at ``line`` (every byte '1'..'9' made
 * '0') in ``out`` (MAX_TEMPLATE + BLOCK bytes), and its ``hash_bytes``, in one pass: sixteen
 * bytes at a time with SSE2, which every x86-64 has; eight elsewhere. Whole blocks first, with
 * no test per block; the last, partial one may be read past the line while it lies before
 * ``end`` (the bytes past the line are neither hashed nor compared). */
#if defined(__SSE2__)
#include <emmintrin.h>
#define BLOCK 16
#else
#define BLOCK 8
#endif

/* The low ``n`` (0..8) bytes of ``w`` (little-endian order: the first n bytes in memory). */
static inline uint64_t
low_bytes(uint64_t w, Py_ssize_t n)
{
    return n >= 8 ? w : w & ((1ULL << (8 * n)) - 1);
}

/* One block of ``src`` with its digits as '0', stored at ``out``; its words in ``w``. */
static inline void
zero_digits(const char *src, unsigned char *out, uint64_t w[BLOCK / 8])
{
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)src);
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0')), _mm_cmplt_epi8(v, _mm_set1_epi8(':')));
    v = _mm_andnot_si128(_mm_and_si128(digit, _mm_set1_epi8(0x0F)), v); /* '1'..'9' -> '0' */
    _mm_storeu_si128((__m128i *)out, v);
    w[0] = (uint64_t)_mm_cvtsi128_si64(v);
    w[1] = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
#else
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL, zeros = 0x30 * ones;
    uint64_t x;
    memcpy(&x, src, 8);
    uint64_t t = x ^ zeros;              /* a digit's byte is now 0..9 */
    uint64_t low = t & ~high;
    uint64_t nonzero = (low + 0x7F * ones) & high;  /* >= 1 */
    uint64_t ten_up = (low + 0x76 * ones) & high;   /* >= 10 */
    uint64_t digit = nonzero & ~ten_up & ~(t & high); /* '1'..'9' */
    x = (x & ~((digit >> 7) * 0xFF)) | (zeros & ((digit >> 7) * 0xFF));
    memcpy(out, &x, 8);
    w[0] = x;
#endif
}

static uint64_t
line_template(const char *line, Py_ssize_t len, const char *end, unsigned char *out)
{
    uint64_t h = HASH_SEED, w[BLOCK / 8];
    Py_ssize_t i = 0;
    for (; i + BLOCK <= len; i += BLOCK) {
        zero_digits(line + i, out + i, w);
        for (int k = 0; k < BLOCK / 8; k++)
            HASH_MIX(h, w[k]);
    }
    if (i < len) {
        unsigned char tmp[BLOCK];
        const char *src = line + i;
        if (end - src < BLOCK) { /* the block's last bytes: never read past its end */
            memset(tmp, 0, BLOCK);
            memcpy(tmp, src, (size_t)(end - src));
            src = (const char *)tmp;
        }
        zero_digits(src, out + i, w);
        for (int k = 0; k < BLOCK / 8 && i + 8 * k < len; k++)
            HASH_MIX(h, low_bytes(w[k], len - i - 8 * k));
    }
    return hash_end(h, len);
}

static Entry *
lookup(TemplatesObject *table, const unsigned char *key, Py_ssize_t len)
{
    if (table->capacity == 0)
        return NULL;
    Entry *e = find_slot(table->slots, table->capacity, hash_bytes(key, len), key, len);
    return e->template == NULL ? NULL : e;
}

/* The first ``mark`` (``mark_len`` > 0 bytes) lying wholly in the ``n`` bytes at ``p``
 * (memmem is not portable). */
static const char *
find_mark(const char *p, Py_ssize_t n, const char *mark, Py_ssize_t mark_len)
{
    const char *end = p + n;
    while (end - p >= mark_len) {
        const char *c = memchr(p, mark[0], (size_t)(end - p - mark_len + 1));
        if (c == NULL)
            return NULL;
        if (memcmp(c, mark, (size_t)mark_len) == 0)
            return c;
        p = c + 1;
    }
    return NULL;
}

/* Whether ``line`` is a --log-requests line by its head (``[…] Receive: obj=``), as
 * _fastpath.FastPath._is_request_log decides: the head's template is a known REQUEST head and
 * the line holds no carriage return: that head's entry, else NULL. */
static const Entry *
request_head(TemplatesObject *self, const char *line, Py_ssize_t len, TemplatesObject *heads)
{
    if (self->request_mark_len == 0 || len <= self->request_min_len)
        return NULL;
    Py_ssize_t window = len < self->request_window ? len : self->request_window;
    const char *obj = find_mark(line, window, self->request_mark, self->request_mark_len);
    if (obj == NULL)
        return NULL;
    unsigned char head[MAX_TEMPLATE];
    Py_ssize_t head_len = obj - line + self->request_mark_len;
    translate(line, head_len, head);
    Entry *e = lookup(heads, head, head_len);
    return e != NULL && e->category == REQUEST && memchr(line, '\r', (size_t)len) == NULL ? e : NULL;
}

/* scan(block, pos, heads, end, width=0)
 *     -> (end, lines, decode, prefill, access, request, note, warn, server_error, error_line, wrappers, buckets)
 * Consumes the lines of block[pos:end] while each is a statistics line: its template is a learned DECODE, PREFILL,
 * ACCESS, NOTE, WARN, ERROR_LINE (while a serving line follows it) or BLANK one, or it is a request-log line by ``heads``. ``end`` is the offset
 * of the first line not consumed (``len(block)`` when all were), ``lines`` how many were. Each
 * category gives (count, first_index, first_offset, last_index, last_offset): indexes count
 * lines from ``pos``, offsets are byte offsets of line starts in ``block``; -1 when the
 * category has no line. ``wrappers`` lists, per wrapper class with a line (its templates'
 * ``wrapper``), its last line as (class, index, offset, category). With ``width`` > 0, ``buckets`` lists the decode lines of templates
 * learned with a layout, summed per bucket of ``width`` seconds (key = time // width), one
 * tuple (key, lines, count, sum, max of each figure) per run of lines in one bucket. */
static PyObject *
Templates_scan(TemplatesObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos;
    TemplatesObject *heads;
    Py_ssize_t size;
    long long width = 0;
    if (!PyArg_ParseTuple(args, "y*nO!n|L:scan", &view, &pos, &TemplatesType, &heads, &size, &width))
        return NULL;
    const char *data = view.buf;
    if (size < 0 || size > view.len || pos < 0 || pos > size || width < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "pos and end must satisfy 0 <= pos <= end <= len(block), width >= 0");
        return NULL;
    }
    PyObject *buckets = PyList_New(0);
    if (buckets == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int64_t key = 0, agg[AGG] = {0};
    Py_ssize_t lines = 0, counts[CATEGORIES] = {0};
    Py_ssize_t first[CATEGORIES], last[CATEGORIES], first_at[CATEGORIES], last_at[CATEGORIES];
    for (int c = 0; c < CATEGORIES; c++)
        first[c] = last[c] = first_at[c] = last_at[c] = -1;
    /* the last line of each wrapper class and its category: a headless line after the scan
     * belongs to the stream of its wrapper's last line (_tracebacks), which may be no
     * category's last */
    Py_ssize_t wrapper_last[WRAPPERS], wrapper_last_at[WRAPPERS];
    int wrapper_cat[WRAPPERS];
    for (int w = 0; w < WRAPPERS; w++) {
        wrapper_last[w] = wrapper_last_at[w] = -1;
        wrapper_cat[w] = OTHER;
    }
    /* An error line is counted only when a serving line (a batch, an access line below 500)
     * follows it in the scan: from it the scan holds what it had counted before it, and goes
     * back there at a second one or at its end, so that the caller reads that line whole (the
     * error lines after a run's last serving line may name its cause). */
    struct {
        Py_ssize_t pos, lines, counts[CATEGORIES], first[CATEGORIES], first_at[CATEGORIES], last[CATEGORIES],
            last_at[CATEGORIES], wrapper_last[WRAPPERS], wrapper_last_at[WRAPPERS];
        int wrapper_cat[WRAPPERS];
    } held;
    int holding = 0;
    unsigned char buf[MAX_TEMPLATE + BLOCK];
    while (pos < size) {
        const char *line = data + pos;
        Py_ssize_t len = line_length(line, data + size);
        if (len < 0)
            break;
        int category = OTHER;
        const Entry *e = NULL;
        if (len <= MAX_TEMPLATE && self->capacity) {
            uint64_t hash = line_template(line, len, data + size, buf);
            e = find_slot(self->slots, self->capacity, hash, buf, len);
            if (e->template == NULL)
                e = NULL;
        }
        if (e != NULL) {
            category = e->category;
            if (category == DECODE && e->has_layout && width > 0) {
                int64_t figures[FIGURES];
                int64_t k = floor_div(line_point(line, e, figures), width);
                if (agg[0] && k != key) {
                    if (flush_bucket(buckets, key, agg) < 0)
                        goto fail;
                    memset(agg, 0, sizeof(agg));
                }
                if (!agg[0])
                    for (int i = 0; i < FIGURES; i++)
                        agg[3 + 3 * i] = -1;
                key = k;
                agg[0]++;
                for (int i = 0; i < FIGURES; i++) {
                    if (figures[i] < 0)
                        continue;
                    agg[1 + 3 * i]++;
                    agg[2 + 3 * i] += figures[i];
                    if (figures[i] > agg[3 + 3 * i])
                        agg[3 + 3 * i] = figures[i];
                }
            }
            if (category == ACCESS && (e->status_at < 0 || line[e->status_at] >= '5'))
                category = e->status_at >= 0 && !e->health ? SERVER_ERROR : OTHER; /* a 5xx; to a health path: read */
        }
        if (category == OTHER) { /* a request-log line by its head, whatever its template */
            e = request_head(self, line, len, heads);
            if (e == NULL)
                break; /* a new template (the caller learns it) or a line to read whole */
            category = REQUEST;
        }
        if (category == ERROR_LINE) {
            if (holding)
                break; /* a second one before a serving line: back to the first */
            held.pos = pos;
            held.lines = lines;
            memcpy(held.counts, counts, sizeof(counts));
            memcpy(held.first, first, sizeof(first));
            memcpy(held.first_at, first_at, sizeof(first_at));
            memcpy(held.last, last, sizeof(last));
            memcpy(held.last_at, last_at, sizeof(last_at));
            memcpy(held.wrapper_last, wrapper_last, sizeof(wrapper_last));
            memcpy(held.wrapper_last_at, wrapper_last_at, sizeof(wrapper_last_at));
            memcpy(held.wrapper_cat, wrapper_cat, sizeof(wrapper_cat));
            holding = 1;
        } else if (category == DECODE || category == PREFILL || category == ACCESS) {
            holding = 0;
        }
        counts[category]++;
        if (first[category] < 0) {
            first[category] = lines;
            first_at[category] = pos;
        }
        last[category] = lines;
        last_at[category] = pos;
        if (category != BLANK) {
            wrapper_last[e->wrapper] = lines;
            wrapper_last_at[e->wrapper] = pos;
            wrapper_cat[e->wrapper] = category;
        }
        lines++;
        pos += len + 1;
    }
    if (holding) { /* (no decode line since: the buckets are as they were) */
        pos = held.pos;
        lines = held.lines;
        memcpy(counts, held.counts, sizeof(counts));
        memcpy(first, held.first, sizeof(first));
        memcpy(first_at, held.first_at, sizeof(first_at));
        memcpy(last, held.last, sizeof(last));
        memcpy(last_at, held.last_at, sizeof(last_at));
        memcpy(wrapper_last, held.wrapper_last, sizeof(wrapper_last));
        memcpy(wrapper_last_at, held.wrapper_last_at, sizeof(wrapper_last_at));
        memcpy(wrapper_cat, held.wrapper_cat, sizeof(wrapper_cat));
    }
    PyBuffer_Release(&view);
    if (agg[0] && flush_bucket(buckets, key, agg) < 0) {
        Py_DECREF(buckets);
        return NULL;
    }
    PyObject *wrappers = PyList_New(0);
    if (wrappers == NULL) {
        Py_DECREF(buckets);
        return NULL;
    }
    for (int w = 0; w < WRAPPERS; w++) {
        if (wrapper_last[w] < 0)
            continue;
        PyObject *item = Py_BuildValue("(innn)", w, wrapper_last[w], wrapper_last_at[w], (Py_ssize_t)wrapper_cat[w]);
        if (item == NULL || PyList_Append(wrappers, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(wrappers);
            Py_DECREF(buckets);
            return NULL;
        }
        Py_DECREF(item);
    }
#define PLACES(c) counts[c], first[c], first_at[c], last[c], last_at[c]
    return Py_BuildValue("(nn(nnnnn)(nnnnn)(nnnnn)(nnnnn)(nnnnn)(nnnnn)(nnnnn)(nnnnn)NN)", pos, lines,
                         PLACES(DECODE), PLACES(PREFILL), PLACES(ACCESS), PLACES(REQUEST), PLACES(NOTE), PLACES(WARN),
                         PLACES(SERVER_ERROR), PLACES(ERROR_LINE), wrappers, buckets);
#undef PLACES
fail:
    PyBuffer_Release(&view);
    Py_DECREF(buckets);
    return NULL;
}

static PyMethodDef Templates_methods[] = {
    {"add", (PyCFunction)Templates_add, METH_VARARGS,
     "add(template, category, layout=(), status_at=-1, health=False, wrapper=0): learn a template (digits as "
     "'0', no newline), its category, for a decode template the spans of its time parts and figures "
     "(serving.layout), for an access template the place of its status and whether its path is a "
     "health check's, and the class of its lines' wrapper."},
    {"scan", (PyCFunction)Templates_scan, METH_VARARGS,
     "scan(block, pos, heads, end, width=0) -> (end, lines, decode, prefill, access, request, note, warn, "
     "server_error, error_line, wrappers, buckets): consume the statistics lines of block[pos:end] (request-log "
     "lines by the templates of their heads in heads); each category is (count, first_index, first_offset, "
     "last_index, last_offset); wrappers: each wrapper class's last line (class, index, offset, category); buckets: the decode lines' figures summed per bucket of width seconds."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TemplatesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "logforensics._scan.Templates",
    .tp_doc = PyDoc_STR("Learned statistics-line templates and the scan that counts their lines."),
    .tp_basicsize = sizeof(TemplatesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Templates_init,
    .tp_dealloc = (destructor)Templates_dealloc,
    .tp_methods = Templates_methods,
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "logforensics._scan",
    .m_doc = PyDoc_STR("C scan of statistics lines for logforensics._fastpath (optional)."),
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    if (PyType_Ready(&TemplatesType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&scan_module);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Templates", (PyObject *)&TemplatesType) < 0
            || PyModule_AddIntConstant(module, "DECODE", DECODE) < 0
            || PyModule_AddIntConstant(module, "PREFILL", PREFILL) < 0
            || PyModule_AddIntConstant(module, "ACCESS", ACCESS) < 0
            || PyModule_AddIntConstant(module, "REQUEST", REQUEST) < 0
            || PyModule_AddIntConstant(module, "BLANK", BLANK) < 0
            || PyModule_AddIntConstant(module, "NOTE", NOTE) < 0
            || PyModule_AddIntConstant(module, "WARN", WARN) < 0
            || PyModule_AddIntConstant(module, "SERVER_ERROR", SERVER_ERROR) < 0
            || PyModule_AddIntConstant(module, "ERROR_LINE", ERROR_LINE) < 0
            || PyModule_AddIntConstant(module, "MAX_TEMPLATE", MAX_TEMPLATE) < 0
            || PyModule_AddIntConstant(module, "TIME_PARTS", TIME_PARTS) < 0
            || PyModule_AddIntConstant(module, "FIGURES", FIGURES) < 0
            || PyModule_AddIntConstant(module, "NO_YEAR", NO_YEAR) < 0
            || PyModule_AddIntConstant(module, "WRAPPERS", WRAPPERS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
