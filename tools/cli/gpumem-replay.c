/*
 * gpumem-replay: replay a recorded trace's allocations and frees against
 * gpumem's own pool and the native pool, to choose a pool and a release
 * threshold from one's own workload (as RMM's replay benchmark does).
 *
 *   gpumem-replay [--release-threshold SIZE] [--repeat N] [--all-kinds] TRACE
 *
 * TRACE is a GPUMEM_TRACE file: a header line ending in "traceEvents":[, one
 * event per line, then "]}".  The reader is strict about that format and
 * about the fields it reads (the rules of gpumem-replay(1), "TRACE RULES",
 * which gpumem-viz applies too): a malformed line is an error naming its line
 * and column.  It skips the events it does not replay: an allocation or free
 * of a kind it does not replay is skipped before any field but its kind is
 * read, and one whose ptr is 0x0 (no address: it cannot be paired with its
 * free) is counted and skipped.  Replayed, in the trace's
 * order: the allocations and frees of kind stream_ordered (with --all-kinds,
 * of every kind, each served by the pool as a stream-ordered allocation),
 * on one gpumem stream per traced stream (the default stream for null),
 * and the synchronisations (where the release threshold acts).  A free whose
 * allocation is not in the trace (a trace cut by GPUMEM_TRACE_MAX) is
 * skipped; what is still live at the end is freed untimed.  Every pool of
 * the trace is replayed on one pool of device memory on the current device.
 *
 * Printed per pool: the median over the repetitions of the time per
 * allocation and per free (the timer's own cost subtracted), and the peaks
 * the pool reports (RESERVED_MEM_HIGH, USED_MEM_HIGH) beside the trace's own
 * peak of live requested bytes.  Public API only, plain C11.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gpumem/gpumem.h>

#include "../bench/bench_util.h"

static const char *g_path = "";

static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) {
        fprintf(stderr, "gpumem-replay: out of host memory (%zu bytes)\n", size);
        exit(1);
    }
    return q;
}

static void die(const char *what, gpumem_status_t st)
{
    fprintf(stderr, "gpumem-replay: %s failed: %s: %s\n", what, gpumem_status_string(st),
            gpumem_last_error_message());
    exit(1);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        gpumem_status_t st_ = (call);                                                              \
        if (st_ != GPUMEM_SUCCESS)                                                                 \
            die(#call, st_);                                                                       \
    } while (0)

/* ------------------------------------------------------------------------ */
/* A strict JSON reader for one line: values as a tree of nodes             */
/* ------------------------------------------------------------------------ */

enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

struct jnode {
    int type;
    const char *key; /* member name (raw, without quotes) when in an object */
    size_t key_len;
    const char *str; /* J_STRING: raw text between the quotes */
    size_t len;
    const char *at; /* where the value starts in the line: its column in errors */
    double number;
    int integer; /* J_NUMBER: written with neither fraction nor exponent */
    int first, next; /* children and siblings, as indexes; -1 = none */
};

struct jparser {
    const char *s, *p, *end;
    struct jnode *nodes;
    int count, cap;
    const char *error; /* what is wrong; at p */
};

static int jnew(struct jparser *j, int type)
{
    if (j->count == j->cap) {
        j->cap = j->cap ? j->cap * 2 : 64;
        j->nodes = xrealloc(j->nodes, sizeof *j->nodes * (size_t)j->cap);
    }
    struct jnode *n = &j->nodes[j->count];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->at = j->p;
    n->first = n->next = -1;
    return j->count++;
}

static void jspace(struct jparser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
        j->p++;
}

static int jfail(struct jparser *j, const char *why)
{
    if (!j->error)
        j->error = why;
    return -1;
}

/* A string's raw text (escapes checked, not decoded: our names and values need none). */
static int jstring(struct jparser *j, const char **out, size_t *len)
{
    if (j->p >= j->end || *j->p != '"')
        return jfail(j, "expected a string");
    const char *start = ++j->p;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20)
            return jfail(j, "control character in a string");
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
                return jfail(j, "bad escape in a string");
            if (*j->p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (j->p + i >= j->end || !strchr("0123456789abcdefABCDEF", j->p[i]))
                        return jfail(j, "bad \\u escape in a string");
                j->p += 4;
            }
        }
        j->p++;
    }
    if (j->p >= j->end)
        return jfail(j, "unterminated string");
    *out = start;
    *len = (size_t)(j->p - start);
    j->p++;
    return 0;
}

static int jvalue(struct jparser *j, int depth);

static int jcontainer(struct jparser *j, int node, int object, int depth)
{
    char close = object ? '}' : ']';
    int last = -1;
    j->p++;
    jspace(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return node;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        if (object) {
            jspace(j);
            if (jstring(j, &key, &key_len) < 0)
                return -1;
            jspace(j);
            if (j->p >= j->end || *j->p != ':')
                return jfail(j, "expected ':' after a member name");
            j->p++;
        }
        int child = jvalue(j, depth + 1);
        if (child < 0)
            return -1;
        j->nodes[child].key = key;
        j->nodes[child].key_len = key_len;
        if (last < 0)
            j->nodes[node].first = child;
        else
            j->nodes[last].next = child;
        last = child;
        jspace(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return node;
        }
        return jfail(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* At most this many arrays and objects one inside another on a line: an event
 * nests 3 (the event, args, backtrace), and the bound keeps the recursion
 * small whatever the file holds.  gpumem-viz applies the same bound. */
#define MAX_NESTING 32

static int jvalue(struct jparser *j, int depth)
{
    jspace(j);
    if (j->p >= j->end)
        return jfail(j, "unexpected end of line");
    char c = *j->p;
    if (c == '{' || c == '[') {
        if (depth >= MAX_NESTING)
            return jfail(j, "nested too deeply: more than 32 arrays and objects one inside another");
        int node = jnew(j, c == '{' ? J_OBJECT : J_ARRAY);
        return jcontainer(j, node, c == '{', depth);
    }
    if (c == '"') {
        int node = jnew(j, J_STRING);
        const char *s;
        size_t len;
        if (jstring(j, &s, &len) < 0)
            return -1;
        j->nodes[node].str = s;
        j->nodes[node].len = len;
        return node;
    }
    static const struct {
        const char *word;
        int type;
    } words[] = {{"null", J_NULL}, {"true", J_BOOL}, {"false", J_BOOL}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i].word, n) == 0) {
            int node = jnew(j, words[i].type);
            j->p += n;
            return node;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        /* JSON's number grammar, checked before strtod (which takes more). */
        const char *q = j->p;
        int integer = 1;
        if (*q == '-')
            q++;
        if (q >= j->end || !(*q >= '0' && *q <= '9'))
            return jfail(j, "bad number");
        if (*q == '0')
            q++;
        else
            while (q < j->end && *q >= '0' && *q <= '9')
                q++;
        if (q < j->end && *q == '.') {
            integer = 0;
            q++;
            if (q >= j->end || !(*q >= '0' && *q <= '9'))
                return jfail(j, "bad number");
            while (q < j->end && *q >= '0' && *q <= '9')
                q++;
        }
        if (q < j->end && (*q == 'e' || *q == 'E')) {
            integer = 0;
            q++;
            if (q < j->end && (*q == '+' || *q == '-'))
                q++;
            if (q >= j->end || !(*q >= '0' && *q <= '9'))
                return jfail(j, "bad number");
            while (q < j->end && *q >= '0' && *q <= '9')
                q++;
        }
        char buf[64];
        size_t n = (size_t)(q - j->p);
        if (n >= sizeof buf)
            return jfail(j, "number too long");
        memcpy(buf, j->p, n);
        buf[n] = 0;
        int node = jnew(j, J_NUMBER);
        j->nodes[node].number = strtod(buf, NULL);
        j->nodes[node].integer = integer;
        j->p = q;
        return node;
    }
    return jfail(j, "expected a value");
}

/* Parse [s, s+len) as exactly one JSON value; the root node or -1 (j->error says why). */
static int jparse(struct jparser *j, const char *s, size_t len)
{
    j->s = j->p = s;
    j->end = s + len;
    j->count = 0;
    j->error = NULL;
    int root = jvalue(j, 0);
    if (root < 0)
        return -1;
    jspace(j);
    if (j->p != j->end)
        return jfail(j, "text after the value");
    return root;
}

static int jget(const struct jparser *j, int object, const char *key)
{
    if (object < 0 || j->nodes[object].type != J_OBJECT)
        return -1;
    size_t n = strlen(key);
    for (int c = j->nodes[object].first; c >= 0; c = j->nodes[c].next)
        if (j->nodes[c].key_len == n && memcmp(j->nodes[c].key, key, n) == 0)
            return c;
    return -1;
}

static int jis_string(const struct jparser *j, int node, const char *text)
{
    return node >= 0 && j->nodes[node].type == J_STRING && j->nodes[node].len == strlen(text) &&
           memcmp(j->nodes[node].str, text, j->nodes[node].len) == 0;
}

/* ------------------------------------------------------------------------ */
/* The trace                                                                */
/* ------------------------------------------------------------------------ */

enum { OP_ALLOC, OP_FREE, OP_SYNC };

struct op {
    int type;
    int slot;   /* OP_ALLOC, OP_FREE: the allocation's slot */
    int stream; /* index into streams; -1 = the default stream (OP_SYNC: the device) */
    size_t bytes;
};

struct trace {
    struct op *ops;
    size_t nops, cap;
    uint64_t *streams; /* traced stream handles, in order of appearance */
    int nstreams;
    int nslots;             /* allocations replayed */
    size_t frees, syncs;    /* replayed */
    size_t unmatched_frees; /* allocation not in the trace: skipped */
    size_t other_kinds;     /* allocations and frees of kinds not replayed */
    size_t other_events;    /* events not replayed */
    size_t no_address;      /* allocations and frees with ptr 0x0: skipped */
    size_t events;          /* every event of the trace */
    size_t *slot_lines;     /* the line of each replayed allocation */
    uint64_t dropped;       /* otherData.dropped */
    uint64_t live, peak_live;
};

/* Live pointers -> slots: open addressing over the pointer value. */
struct live_map {
    uint64_t *keys; /* 0 = empty */
    int *slots;
    size_t *bytes;
    size_t cap, count;
};

static size_t live_find(const struct live_map *m, uint64_t key)
{
    size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void live_grow(struct live_map *m)
{
    struct live_map n = {0};
    n.cap = m->cap ? m->cap * 2 : 1024;
    n.keys = calloc(n.cap, sizeof *n.keys);
    n.slots = calloc(n.cap, sizeof *n.slots);
    n.bytes = calloc(n.cap, sizeof *n.bytes);
    if (!n.keys || !n.slots || !n.bytes) {
        fprintf(stderr, "gpumem-replay: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t k = live_find(&n, m->keys[i]);
            n.keys[k] = m->keys[i];
            n.slots[k] = m->slots[i];
            n.bytes[k] = m->bytes[i];
            n.count++;
        }
    free(m->keys);
    free(m->slots);
    free(m->bytes);
    *m = n;
}

/* Backward-shift deletion keeps every probe sequence unbroken. */
static void live_erase(struct live_map *m, size_t i)
{
    size_t j = i;
    m->keys[i] = 0;
    m->count--;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->keys[j])
            return;
        size_t home = (size_t)(m->keys[j] * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->keys[i] = m->keys[j];
            m->slots[i] = m->slots[j];
            m->bytes[i] = m->bytes[j];
            m->keys[j] = 0;
            i = j;
        }
    }
}

static void push_op(struct trace *t, struct op op)
{
    if (t->nops == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 4096;
        t->ops = xrealloc(t->ops, sizeof *t->ops * t->cap);
    }
    t->ops[t->nops++] = op;
}

/* A malformed line: the file, the line and the column (from 1, in bytes) of what is wrong. */
static _Noreturn void malformed_at(size_t line, size_t column, const char *why)
{
    fprintf(stderr, "gpumem-replay: %s:%zu:%zu: malformed event: %s\n", g_path, line, column, why);
    exit(1);
}

/* What is wrong is `node`, or where it is absent, the object that lacks it. */
static _Noreturn void malformed(size_t line, const struct jparser *j, int node, int object, const char *why)
{
    malformed_at(line, (size_t)(j->nodes[node >= 0 ? node : object].at - j->s) + 1, why);
}

/* An address or handle as gpumem writes it: "0x" and 1 to 16 lowercase hexadecimal digits,
 * with no leading 0 (so "0x0" is the only spelling of 0).  One spelling per value: gpumem-viz,
 * which pairs a free with its allocation by the text, then pairs them as this program does by
 * the value.  Returns 0 and the value, or -1. */
static int parse_hex(const struct jparser *j, int node, uint64_t *out)
{
    if (node < 0 || j->nodes[node].type != J_STRING)
        return -1;
    const char *s = j->nodes[node].str;
    size_t len = j->nodes[node].len;
    if (len < 3 || len > 18 || s[0] != '0' || s[1] != 'x' || (s[2] == '0' && len > 3))
        return -1;
    uint64_t v = 0;
    for (size_t i = 2; i < len; i++) {
        int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* A stream: null (the default stream) or a non-zero handle. */
static int parse_handle(const struct jparser *j, int node, uint64_t *out)
{
    if (node >= 0 && j->nodes[node].type == J_NULL) {
        *out = 0;
        return 0;
    }
    return parse_hex(j, node, out) < 0 || !*out ? -1 : 0;
}

/* A byte count: a JSON integer (neither fraction nor exponent) from 0 to 2^53 - 1, the
 * integers a double holds exactly (gpumem-viz's page holds sizes as JavaScript numbers). */
static int parse_bytes(const struct jparser *j, int node, size_t *out)
{
    if (node < 0 || j->nodes[node].type != J_NUMBER || !j->nodes[node].integer || j->nodes[node].number < 0 ||
        j->nodes[node].number > 9007199254740991.0)
        return -1;
    *out = (size_t)j->nodes[node].number;
    return 0;
}

static int stream_index(struct trace *t, uint64_t handle)
{
    if (!handle)
        return -1;
    for (int i = 0; i < t->nstreams; i++)
        if (t->streams[i] == handle)
            return i;
    t->streams = xrealloc(t->streams, sizeof *t->streams * (size_t)(t->nstreams + 1));
    t->streams[t->nstreams] = handle;
    return t->nstreams++;
}

static void read_event(struct trace *t, struct live_map *live, struct jparser *j, int root, size_t line,
                       int all_kinds)
{
    t->events++;
    if (j->nodes[root].type != J_OBJECT)
        malformed(line, j, root, root, "an event is a JSON object");
    int name = jget(j, root, "name");
    if (name < 0 || j->nodes[name].type != J_STRING)
        malformed(line, j, name, root, "no \"name\" string");
    int is_alloc = jis_string(j, name, "alloc"), is_free = jis_string(j, name, "free");
    int is_sync = jis_string(j, name, "sync");
    if (!is_alloc && !is_free && !is_sync) {
        t->other_events++;
        return;
    }
    int args = jget(j, root, "args");
    if (args < 0 || j->nodes[args].type != J_OBJECT)
        malformed(line, j, args, root, "no \"args\" object");
    uint64_t ptr = 0;
    if (!is_sync) {
        /* The kind first: an allocation or free of a kind not replayed is skipped, whatever its other fields. */
        int kind = jget(j, args, "kind");
        if (kind < 0 || j->nodes[kind].type != J_STRING)
            malformed(line, j, kind, args, "no args.kind string");
        if (!all_kinds && !jis_string(j, kind, "stream_ordered")) {
            t->other_kinds++;
            return;
        }
        int p = jget(j, args, "ptr");
        if (parse_hex(j, p, &ptr) < 0)
            malformed(line, j, p, args,
                      "args.ptr is not an address as gpumem writes it: \"0x\" and 1 to 16 lowercase hexadecimal "
                      "digits, with no leading 0");
        if (!ptr) {
            t->no_address++; /* cannot be paired with its free (or its allocation) */
            return;
        }
    }
    uint64_t stream;
    int s = jget(j, args, "stream");
    if (parse_handle(j, s, &stream) < 0)
        malformed(line, j, s, args,
                  "args.stream is neither null (the default stream) nor a handle as gpumem writes it: \"0x\" and 1 "
                  "to 16 lowercase hexadecimal digits, with no leading 0, not 0x0");
    if (is_sync) {
        push_op(t, (struct op){OP_SYNC, -1, stream_index(t, stream), 0});
        t->syncs++;
        return;
    }
    size_t n;
    int bytes = jget(j, args, "bytes");
    if (parse_bytes(j, bytes, &n) < 0)
        malformed(line, j, bytes, args,
                  "args.bytes is not a byte count: a whole number from 0 to 2^53 - 1, written without fraction or "
                  "exponent");
    if (live->count * 2 >= live->cap)
        live_grow(live);
    size_t at = live_find(live, ptr);
    if (is_alloc) {
        if (live->keys[at]) {
            fprintf(stderr,
                    "gpumem-replay: %s:%zu:%zu: malformed trace: alloc of 0x%" PRIx64 ", which is live already "
                    "(allocated on line %zu and not freed since)\n",
                    g_path, line, (size_t)(j->nodes[jget(j, args, "ptr")].at - j->s) + 1, ptr,
                    t->slot_lines[live->slots[at]]);
            exit(1);
        }
        live->keys[at] = ptr;
        live->slots[at] = t->nslots;
        live->bytes[at] = n;
        live->count++;
        if ((size_t)t->nslots % 4096 == 0)
            t->slot_lines = xrealloc(t->slot_lines, sizeof *t->slot_lines * ((size_t)t->nslots + 4096));
        t->slot_lines[t->nslots] = line;
        push_op(t, (struct op){OP_ALLOC, t->nslots++, stream_index(t, stream), n});
        t->live += n;
        if (t->live > t->peak_live)
            t->peak_live = t->live;
    } else if (!live->keys[at]) {
        t->unmatched_frees++; /* allocated before the trace's window */
    } else {
        push_op(t, (struct op){OP_FREE, live->slots[at], stream_index(t, stream), live->bytes[at]});
        t->live -= live->bytes[at];
        t->frees++;
        live_erase(live, at);
    }
}

static _Noreturn void not_a_trace(const char *path, size_t column, const char *why)
{
    fprintf(stderr, "gpumem-replay: %s:1:%zu: not a GPUMEM_TRACE file: %s\n", path, column, why);
    exit(1);
}

static void read_trace(const char *path, struct trace *t, int all_kinds)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpumem-replay: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    struct jparser j = {0};
    struct live_map live = {0};
    live_grow(&live);
    char *line = NULL;
    size_t cap = 0, lineno = 0, last_len = 0;
    ssize_t got;
    int closed = 0;
    static const char tail[] = "\"traceEvents\":[";
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            len--;
        last_len = len;
        if (lineno == 1) {
            /* The header: with "]}" appended it is one JSON object, whose otherData we check. */
            if (len < sizeof tail - 1 || memcmp(line + len - (sizeof tail - 1), tail, sizeof tail - 1) != 0)
                not_a_trace(path, 1, "the first line must end with \"traceEvents\":[ (is it a snapshot? "
                                     "gpumem-viz draws those)");
            char *head = xrealloc(NULL, len + 3);
            memcpy(head, line, len);
            memcpy(head + len, "]}", 3);
            int root = jparse(&j, head, len + 2);
            if (root < 0)
                not_a_trace(path, (size_t)(j.p - j.s) + 1, j.error);
            int other = jget(&j, root, "otherData");
            int magic = jget(&j, other, "gpumem_trace");
            if (magic < 0 || j.nodes[magic].type != J_NUMBER || j.nodes[magic].number != 1)
                not_a_trace(path, (size_t)(j.nodes[magic >= 0 ? magic : other >= 0 ? other : root].at - j.s) + 1,
                            "no otherData.gpumem_trace = 1");
            int dropped = jget(&j, other, "dropped");
            if (dropped >= 0 && j.nodes[dropped].type == J_NUMBER)
                t->dropped = (uint64_t)j.nodes[dropped].number;
            free(head);
            continue;
        }
        size_t first = 0;
        while (first < len && (line[first] == ' ' || line[first] == '\t'))
            first++;
        if (first == len)
            continue;
        if (closed)
            malformed_at(lineno, first + 1, "text after the closing ]}");
        if (len - first == 2 && memcmp(line + first, "]}", 2) == 0) {
            closed = 1;
            continue;
        }
        if (line[len - 1] == ',')
            len--;
        int root = jparse(&j, line, len);
        if (root < 0)
            malformed_at(lineno, (size_t)(j.p - j.s) + 1, j.error);
        read_event(t, &live, &j, root, lineno, all_kinds);
    }
    if (ferror(f)) {
        fprintf(stderr, "gpumem-replay: cannot read %s: %s\n", path, strerror(errno));
        exit(1);
    }
    if (lineno == 0) {
        fprintf(stderr, "gpumem-replay: %s is empty: not a GPUMEM_TRACE file\n", path);
        exit(1);
    }
    if (!closed) {
        fprintf(stderr,
                "gpumem-replay: %s:%zu:%zu: the trace ends without its closing ]} (cut short? the program must "
                "reach gpumem_finalize or exit for its trace to be complete)\n",
                path, lineno, last_len + 1);
        exit(1);
    }
    fclose(f);
    free(line);
    free(j.nodes);
    free(live.keys);
    free(live.slots);
    free(live.bytes);
}

/* ------------------------------------------------------------------------ */
/* Replay                                                                   */
/* ------------------------------------------------------------------------ */

struct result {
    double alloc_ns, free_ns; /* medians per operation */
    uint64_t reserved_high, used_high;
};

/* What one now_ns() pair costs, to subtract from each timed call. */
static double timer_overhead_ns(void)
{
    double v[101];
    for (int i = 0; i < 101; i++) {
        double best = 1e30;
        for (int k = 0; k < 50; k++) {
            double a = now_ns(), b = now_ns();
            if (b - a < best)
                best = b - a;
        }
        v[i] = best;
    }
    return median(v, 101);
}

/* One pass over the trace on a fresh pool; returns 0, or the status of a pool that cannot be made. */
static gpumem_status_t replay_once(const struct trace *t, int implementation, uint64_t threshold, int set_threshold,
                                   gpumem_stream_t *streams, void **ptrs, double overhead, double *alloc_ns,
                                   double *free_ns, uint64_t *reserved_high, uint64_t *used_high)
{
    int32_t device;
    CHECK(gpumem_get_device(&device));
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.device = device;
    props.implementation = implementation;
    gpumem_pool_t pool;
    gpumem_status_t st = gpumem_pool_create(&pool, &props);
    if (st != GPUMEM_SUCCESS)
        return st;
    if (set_threshold)
        CHECK(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    memset(ptrs, 0, sizeof *ptrs * (size_t)t->nslots);
    double a_ns = 0, f_ns = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const struct op *op = &t->ops[i];
        gpumem_stream_t s = op->stream >= 0 ? streams[op->stream] : NULL;
        if (op->type == OP_ALLOC) {
            double t0 = now_ns();
            st = gpumem_malloc_from_pool_async(&ptrs[op->slot], op->bytes, pool, s);
            a_ns += now_ns() - t0 - overhead;
            if (st != GPUMEM_SUCCESS) {
                fprintf(stderr, "gpumem-replay: allocation %d (%zu bytes) of the trace failed: %s: %s\n", op->slot,
                        op->bytes, gpumem_status_string(st), gpumem_last_error_message());
                exit(1);
            }
        } else if (op->type == OP_FREE) {
            double t0 = now_ns();
            st = gpumem_free_async(ptrs[op->slot], s);
            f_ns += now_ns() - t0 - overhead;
            if (st != GPUMEM_SUCCESS)
                die("gpumem_free_async", st);
            ptrs[op->slot] = NULL;
        } else if (op->stream >= 0) {
            CHECK(gpumem_stream_synchronize(s));
        } else {
            CHECK(gpumem_device_synchronize());
        }
    }
    for (int k = 0; k < t->nslots; k++)
        if (ptrs[k])
            CHECK(gpumem_free_async(ptrs[k], NULL));
    CHECK(gpumem_device_synchronize());
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, reserved_high));
    CHECK(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, used_high));
    CHECK(gpumem_pool_destroy(pool));
    *alloc_ns = t->nslots ? a_ns / t->nslots : 0;
    *free_ns = t->frees ? f_ns / (double)t->frees : 0;
    return GPUMEM_SUCCESS;
}

static void replay(const struct trace *t, const char *label, int implementation, uint64_t threshold,
                   int set_threshold, int repeat, gpumem_stream_t *streams, double overhead)
{
    void **ptrs = xrealloc(NULL, sizeof *ptrs * (size_t)(t->nslots ? t->nslots : 1));
    double *a = xrealloc(NULL, sizeof *a * (size_t)repeat), *f = xrealloc(NULL, sizeof *f * (size_t)repeat);
    uint64_t reserved = 0, used = 0;
    for (int r = 0; r < repeat; r++) {
        uint64_t rh, uh;
        gpumem_status_t st =
            replay_once(t, implementation, threshold, set_threshold, streams, ptrs, overhead, &a[r], &f[r], &rh, &uh);
        if (st != GPUMEM_SUCCESS) {
            printf("%-8s pool: unavailable on this backend (%s: %s)\n", label, gpumem_status_string(st),
                   gpumem_last_error_message());
            goto out;
        }
        /* The peaks of the last run: the replay is deterministic, so they repeat. */
        reserved = rh;
        used = uh;
    }
    printf("%-8s pool: alloc %.1f ns/op, free %.1f ns/op (median of %d runs); peak reserved %" PRIu64
           " bytes, peak used %" PRIu64 " bytes; reserved/used %.3f, used/peak live %.3f\n",
           label, median(a, repeat), median(f, repeat), repeat, reserved, used,
           used ? (double)reserved / (double)used : 0.0, t->peak_live ? (double)used / (double)t->peak_live : 0.0);
out:
    free(ptrs);
    free(a);
    free(f);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: gpumem-replay [--release-threshold SIZE] [--repeat N] [--all-kinds] TRACE\n"
                "       gpumem-replay --version | --help\n"
                "  TRACE                     a GPUMEM_TRACE file\n"
                "  --release-threshold SIZE  the pools' RELEASE_THRESHOLD (default: the pool's own, 0): bytes\n"
                "                            with an optional unit K, M, G or T, or KiB, MiB, GiB, TiB (any\n"
                "                            case; powers of 1024, as GPUMEM_LIMIT reads them: 256M = 268435456)\n"
                "  --repeat N                runs per pool; times are their medians (default 5)\n"
                "  --all-kinds               replay every kind of allocation as a pool allocation, not only\n"
                "                            stream_ordered\n"
                "  --version                 print the versions of gpumem-replay and of the library it loaded\n"
                "  An option's value may follow it (--repeat 9) or be joined with '=' (--repeat=9).\n"
                "  Exit status: 0 replayed; 1 an unreadable or malformed trace, or a failed pool call;\n"
                "  2 a usage error; 3 nothing to replay (no allocation of a replayed kind in the trace).\n");
}

/* A whole decimal number (never octal or hex: "010" is ten), then, where units are allowed, the
 * units the size variables take (docs/semantics.md): K, M, G, T alone or with "i", "iB" or "B",
 * in any case, or B; all powers of 1024. */
static int parse_u64(const char *s, uint64_t *out, int units)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; ++s) {
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (*s && !units)
        return -1;
    unsigned shift = 0;
    const char *unit = *s ? strchr("KMGT", toupper((unsigned char)*s)) : NULL;
    if (unit) {
        shift = 10 * (unsigned)(unit - "KMGT" + 1);
        ++s;
        if (*s && strcasecmp(s, "iB") != 0 && strcasecmp(s, "B") != 0 && strcasecmp(s, "i") != 0)
            return -1;
    } else if (*s && strcasecmp(s, "B") != 0) {
        return -1;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

/* The value of option `name` at argv[*i], given as "--name VALUE" or "--name=VALUE"; NULL
 * when argv[*i] is another option.  *missing is set when the option is there without a value. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 < argc)
        return argv[++*i];
    *missing = 1;
    return NULL;
}

static int bad_value(const char *option, const char *wants, const char *value)
{
    fprintf(stderr, "gpumem-replay: %s takes %s, not %s%s%s\n", option, wants, value ? "'" : "nothing",
            value ? value : "", value ? "'" : "");
    return 2;
}

static void free_trace(struct trace *t)
{
    free(t->ops);
    free(t->streams);
    free(t->slot_lines);
}

int main(int argc, char **argv)
{
    uint64_t threshold = 0, repeat = 5;
    int set_threshold = 0, all_kinds = 0;
    const char *path = NULL, *value;
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        static const char size_wants[] = "a size (bytes, or with a unit: 256M, 1GiB)";
        static const char count_wants[] = "a count from 1 to 1000";
        if ((value = option_value(argc, argv, &i, "--release-threshold", &missing)) || missing) {
            if (parse_u64(value, &threshold, 1) < 0)
                return bad_value("--release-threshold", size_wants, value);
            set_threshold = 1;
        } else if ((value = option_value(argc, argv, &i, "--repeat", &missing)) || missing) {
            if (parse_u64(value, &repeat, 0) < 0 || repeat < 1 || repeat > 1000)
                return bad_value("--repeat", count_wants, value);
        } else if (strcmp(argv[i], "--all-kinds") == 0) {
            all_kinds = 1;
        } else if (strcmp(argv[i], "--version") == 0) {
            /* The tool's version is the headers' it was built with; the library's is the one loaded. */
            int32_t v = gpumem_version();
            printf("gpumem-replay (gpumem) %d.%d.%d, library %d.%d.%d\n", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR,
                   GPUMEM_VERSION_PATCH, v / 10000, v / 100 % 100, v % 100);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            const char *eq = strchr(argv[i], '=');
            if (eq && (strncmp(argv[i], "--all-kinds=", 12) == 0 || strncmp(argv[i], "--version=", 10) == 0 ||
                       strncmp(argv[i], "--help=", 7) == 0))
                fprintf(stderr, "gpumem-replay: %.*s takes no value, not '%s'\n", (int)(eq - argv[i]), argv[i],
                        eq + 1);
            else
                fprintf(stderr, "gpumem-replay: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "gpumem-replay: one trace at a time, got '%s' and '%s'\n", path, argv[i]);
            usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "gpumem-replay: no trace given: name a GPUMEM_TRACE file\n");
        usage(stderr);
        return 2;
    }
    g_path = path;

    struct trace t = {0};
    read_trace(path, &t, all_kinds);
    if (t.nslots == 0) {
        /* Timings and ratios of no allocation would be zeros that read as results. */
        fprintf(stderr, "gpumem-replay: %s: nothing to replay: ", path);
        if (!t.events)
            fprintf(stderr, "the trace holds no event (the program allocated nothing while it was traced)\n");
        else if (!all_kinds && t.other_kinds)
            fprintf(stderr, "no allocation of kind stream_ordered among its %zu events; --all-kinds replays its %zu "
                            "allocations and frees of other kinds\n", t.events, t.other_kinds);
        else if (t.no_address)
            fprintf(stderr, "no allocation with an address among its %zu events (%zu allocations and frees have "
                            "ptr 0x0: they cannot be paired)\n", t.events, t.no_address);
        else
            fprintf(stderr, "no allocation%s among its %zu events\n", all_kinds ? "" : " of kind stream_ordered",
                    t.events);
        free_trace(&t);
        return 3;
    }

    CHECK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t backend, device;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_get_backend(&backend));
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));
    printf("gpumem-replay: %s\n", path);
    printf("device:  %d: %s, backend %s\n", device, info.name, gpumem_backend_name(backend));
    printf("trace:   %d allocations, %zu frees, %zu synchronisations replayed on %d streams (+ the default)",
           t.nslots, t.frees, t.syncs, t.nstreams);
    printf("; skipped: %zu frees of allocations before the trace (%" PRIu64 " events dropped), %zu of other kinds, "
           "%zu other events\n",
           t.unmatched_frees, t.dropped, t.other_kinds, t.other_events);
    if (t.no_address)
        printf("         also skipped: %zu allocations and frees without an address (ptr 0x0: they cannot be "
               "paired)\n", t.no_address);
    printf("trace peak live: %" PRIu64 " bytes (requested sizes)\n", t.peak_live);
    if (set_threshold)
        printf("release threshold: %" PRIu64 " bytes\n", threshold);

    gpumem_stream_t *streams = xrealloc(NULL, sizeof *streams * (size_t)(t.nstreams ? t.nstreams : 1));
    for (int i = 0; i < t.nstreams; i++)
        CHECK(gpumem_stream_create(&streams[i]));
    double overhead = timer_overhead_ns();
    replay(&t, "builtin", GPUMEM_POOL_BUILTIN, threshold, set_threshold, (int)repeat, streams, overhead);
    if (info.memory_pools == GPUMEM_SUPPORT_NATIVE) {
        if (backend == GPUMEM_BACKEND_HOST)
            printf("note:    the host backend's native pool is gpumem's own allocator too\n");
        replay(&t, "native", GPUMEM_POOL_NATIVE, threshold, set_threshold, (int)repeat, streams, overhead);
    }
    else
        printf("%-8s pool: unavailable on this backend (the device has no native pools)\n", "native");
    for (int i = 0; i < t.nstreams; i++)
        CHECK(gpumem_stream_destroy(streams[i]));
    free(streams);
    free_trace(&t);
    CHECK(gpumem_finalize());
    return 0;
}
