/*
 * fuzz_api: a seeded API-sequence tester.
 *
 * It keeps a model of every live object it made (allocations of every kind
 * with a shadow copy of their bytes, streams, events, pools, VMM handles,
 * reservations and mappings, buffers), mixes valid and invalid calls of every
 * family, and after each step checks:
 *   - the status of every call against the contract (docs/semantics.md);
 *   - data: an object's bytes, read back through gpumem_memcpy, equal its shadow;
 *   - statistics: current bytes and live counts per kind equal the model's;
 *   - the trace: ALLOC minus FREE bytes per kind equal the model's.
 * Freed memory of every kind is used again, by the calls that release and by
 * copies and fills: INVALID_POINTER, nothing changed, never a crash.
 * Shareable pools and memory handles are exported and imported again, by this
 * process (an imported pointer aliases its exporter's bytes and shadow) and
 * by a second process (this program again, `--child SOCKET`, which imports
 * what it is sent, checks it and writes new bytes for the model); every call
 * on an imported object is asked and its answer checked (docs/semantics.md,
 * "Imported pools, pointers and memory handles").
 * A run is deterministic per seed.  On the first failure it prints the seed,
 * the step and the calls that led there, and exits 1.
 *
 *   fuzz_api [--seeds FIRST-LAST] [--steps N] [--quiet]
 *
 * The backend and settings come from the environment (GPUMEM_BACKEND,
 * GPUMEM_DISABLE, GPUMEM_FALLBACK, the fakes' variables).  The expected
 * statuses follow the device's support levels, read at each init.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1

#include <gpumem/gpumem.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- random numbers (xorshift64*, one stream per seed) ------------------ */

static uint64_t g_rng;
static uint64_t rnd(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1Dull;
}
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
static int chance(int percent) { return (int)below(100) < percent; }

/* ---- the call log: the last calls, printed on failure ------------------- */

#define LOG_LINES 48
static char g_log[LOG_LINES][200];
static unsigned g_log_next;
static uint64_t g_seed;
static long g_step;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_log[g_log_next % LOG_LINES], sizeof g_log[0], fmt, ap);
    va_end(ap);
    g_log_next++;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fuzz_api: FAIL at seed %" PRIu64 ", step %ld: %s\n", g_seed, g_step, why);
    fprintf(stderr, "  last error: \"%s\"\n  the calls that led here (oldest first):\n", gpumem_last_error_message());
    unsigned first = g_log_next > LOG_LINES ? g_log_next - LOG_LINES : 0;
    for (unsigned i = first; i < g_log_next; i++)
        fprintf(stderr, "    %s\n", g_log[i % LOG_LINES]);
    fprintf(stderr, "  rerun: fuzz_api --seeds %" PRIu64 "-%" PRIu64 " --steps %ld\n", g_seed, g_seed, g_step + 1);
    exit(1);
}

/* A call whose status must be one of a set. */
#define S(x) (1u << (x))
static gpumem_status_t expect_(gpumem_status_t st, unsigned allowed, const char *call, int line)
{
    note("%-60.60s -> %s", call, gpumem_status_string(st));
    if (!(allowed & S(st)))
        die("line %d: %s returned %s", line, call, gpumem_status_string(st));
    if (st != GPUMEM_SUCCESS && strlen(gpumem_last_error_message()) < 10)
        die("line %d: %s failed with %s but no message", line, call, gpumem_status_string(st));
    return st;
}
#define EXPECT(call, allowed) expect_((call), (allowed), #call, __LINE__)
#define OK(call) EXPECT(call, S(GPUMEM_SUCCESS))

/* ---- the model ----------------------------------------------------------- */

enum { MAX_ALLOCS = 48, MAX_STREAMS = 6, MAX_EVENTS = 6, MAX_POOLS = 4, MAX_IPOOLS = 3, MAX_HANDLES = 6, MAX_RES = 4,
       MAX_BUFS = 4, MAX_GRAVE = 16 };

typedef struct {
    int live;
    int kind;       /* GPUMEM_KIND_* */
    char *ptr;      /* what gpumem returned (the host buffer for REGISTERED) */
    size_t size;
    unsigned char *shadow;
    int pool;       /* STREAM_ORDERED: model pool index, -1 = device's current pool */
    int emulated;
    char *owned;    /* REGISTERED: the malloc'd memory (freed after unregister) */
    signed char *attr; /* MANAGED: per byte, read-mostly, preferred location, last prefetch, accessed-by bits */
    int vendor_pool; /* STREAM_ORDERED: served by the vendor's pool (not gpumem's own) */
    int imported;    /* STREAM_ORDERED: imported by gpumem_pool_import_pointer (0 bytes in the statistics) */
    int ipool;       /* imported: the model's imported pool */
    int source;      /* imported: the exporter's allocation (its shadow is this one's too) */
} alloc_t;

typedef struct { int live; gpumem_stream_t s; } stream_t;
typedef struct { int live; gpumem_event_t e; int recorded; } event_t;
typedef struct { int live; gpumem_pool_t p; int builtin; int blocks; int shareable; int exported; } pool_t;
typedef struct { int live; gpumem_pool_t p; int from; } ipool_t; /* from: PL index, -1 once destroyed */
typedef struct { int live; gpumem_mem_handle_t h; size_t size; int mapped; int imported; int shareable; } handle_t;
typedef struct {
    int live;
    char *base;
    size_t size;   /* the whole reservation */
    int handle;    /* model handle mapped at base, or -1 (none, or released while mapped) */
    size_t mapped; /* bytes mapped from base (one whole allocation), 0 = none */
    int access;    /* GPUMEM_ACCESS_* granted to device 0 over the mapping */
    unsigned char *shadow;
} res_t;
typedef struct { int live; gpumem_buffer_t b; size_t size, max; unsigned char *shadow; } buf_t;

static alloc_t A[MAX_ALLOCS];
static stream_t ST[MAX_STREAMS];
static event_t EV[MAX_EVENTS];
static pool_t PL[MAX_POOLS];
static ipool_t IP[MAX_IPOOLS];
static handle_t MH[MAX_HANDLES];
static res_t RS[MAX_RES];
static buf_t BF[MAX_BUFS];
static char *g_grave[MAX_GRAVE]; /* freed bases */
static int g_grave_kind[MAX_GRAVE]; /* what they were (GPUMEM_KIND_*) */
static size_t g_grave_size[MAX_GRAVE];
static int g_grave_vendor_pool[MAX_GRAVE]; /* a vendor pool's block */
static unsigned g_runtime; /* counts gpumem_init */
static unsigned g_grave_runtime[MAX_GRAVE]; /* the runtime that freed them */
static int g_finalizing; /* gpumem_finalize freed what is buried now */
static int g_grave_finalized[MAX_GRAVE];
static unsigned g_grave_next;
static char g_scratch[1 << 16]; /* plain host memory: a copy's other side */
static gpumem_stream_t g_dead_stream;
static gpumem_event_t g_dead_event;
static gpumem_pool_t g_dead_pool;
static gpumem_buffer_t g_dead_buffer;

/* What the device offers (read at each init). */
static gpumem_device_info_t g_info;
static int g_devices;
static size_t g_gran;

/* Whether stream-ordered blocks of the device's default and AUTO pools come from the vendor's
 * pools (a GPU backend with them) rather than gpumem's own. */
static int32_t g_backend;
static int vendor_pools(void)
{
    return g_backend != GPUMEM_BACKEND_HOST && g_info.memory_pools == GPUMEM_SUPPORT_NATIVE;
}

/* Whether gpumem knows the memory of grave i was freed once it is given back.  Not a vendor
 * pool's block freed before the last gpumem_finalize that did not free it itself: the next
 * runtime has no block of a vendor pool left to tell where the freed ones were. */
static int dead_copies_known(unsigned i)
{
    return !(g_grave_vendor_pool[i] && g_grave_runtime[i] != g_runtime && !g_grave_finalized[i]);
}

/* Stream discipline: async work goes to one stream at a time, so the model's
 * order is the device's.  `g_pending` says async work may still be running. */
static gpumem_stream_t g_last_stream;
static int g_pending;

/* Trace totals per kind (bytes allocated minus freed). */
static int64_t g_trace_bytes[GPUMEM_KIND_COUNT];
static void on_trace(const gpumem_trace_event_t *e, void *user)
{
    (void)user;
    if (e->kind < 0 || e->kind >= GPUMEM_KIND_COUNT)
        return;
    g_trace_bytes[e->kind] += e->op == GPUMEM_TRACE_ALLOC ? (int64_t)e->bytes : -(int64_t)e->bytes;
}

static unsigned char *shadow_new(size_t n)
{
    unsigned char *s = malloc(n ? n : 1);
    if (!s) {
        perror("fuzz_api: malloc");
        exit(2);
    }
    return s;
}

static void sync_all(void)
{
    if (g_pending) {
        OK(gpumem_device_synchronize());
        g_pending = 0;
    }
}

/* Before async work on `s`: order it after everything on the previous stream. */
static void use_stream(gpumem_stream_t s)
{
    if (g_pending && s != g_last_stream)
        sync_all();
    g_last_stream = s;
}

static gpumem_stream_t pick_stream(void)
{
    int n = (int)below(MAX_STREAMS + 1);
    return n < MAX_STREAMS && ST[n].live ? ST[n].s : NULL;
}

static int free_slot(void *array, size_t stride, int count)
{
    for (int i = 0; i < count; i++)
        if (!*(int *)((char *)array + stride * i))
            return i;
    return -1;
}
static int live_slot(void *array, size_t stride, int count)
{
    int start = (int)below(count);
    for (int i = 0; i < count; i++) {
        int j = (start + i) % count;
        if (*(int *)((char *)array + stride * j))
            return j;
    }
    return -1;
}
#define FREE_SLOT(arr) free_slot(arr, sizeof arr[0], (int)(sizeof arr / sizeof arr[0]))
#define LIVE_SLOT(arr) live_slot(arr, sizeof arr[0], (int)(sizeof arr / sizeof arr[0]))

static size_t pick_size(void)
{
    switch (below(4)) {
    case 0: return 1 + below(64);
    case 1: return 1 + below(4096);
    case 2: return 1 + below(256 * 1024);
    default: return 1 + below(2 << 20);
    }
}

/* Fill [p, p+n) through gpumem and its shadow alike. */
static void fill_shadowed(char *p, unsigned char *shadow, size_t n)
{
    int v = (int)below(256);
    sync_all();
    OK(gpumem_memset(p, v, n));
    memset(shadow, v, n);
}

static void bury_kind(char *p, int kind, size_t size, int vendor_pool)
{
    unsigned i = g_grave_next++ % MAX_GRAVE;
    g_grave[i] = p;
    g_grave_kind[i] = kind;
    g_grave_size[i] = size;
    g_grave_vendor_pool[i] = vendor_pool;
    g_grave_runtime[i] = g_runtime;
    g_grave_finalized[i] = g_finalizing;
}

/* True when p lies inside any live model object (then it is not "dead"). */
static int inside_live(const char *p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (A[i].live && p >= A[i].ptr && p < A[i].ptr + A[i].size)
            return 1;
    for (int i = 0; i < MAX_RES; i++)
        if (RS[i].live && p >= RS[i].base && p < RS[i].base + RS[i].size)
            return 1;
    for (int i = 0; i < MAX_BUFS; i++) {
        void *d = NULL;
        if (BF[i].live && gpumem_buffer_data(BF[i].b, &d) == GPUMEM_SUCCESS && d && p >= (char *)d &&
            p < (char *)d + BF[i].max)
            return 1;
    }
    return 0;
}

/* True when p lies in memory this program holds itself (a shadow, a registered buffer): the OS
 * may have mapped one where gpumem's freed memory was, and then it is no longer gpumem's. */
static int inside_own(const char *p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (A[i].live && ((p >= (char *)A[i].shadow && p < (char *)A[i].shadow + A[i].size) ||
                          (A[i].owned && p >= A[i].owned && p < A[i].owned + A[i].size) ||
                          (A[i].attr && p >= (char *)A[i].attr && p < (char *)A[i].attr + 4 * A[i].size)))
            return 1;
    for (int i = 0; i < MAX_RES; i++)
        if (RS[i].live && RS[i].shadow && p >= (char *)RS[i].shadow && p < (char *)RS[i].shadow + RS[i].mapped)
            return 1;
    for (int i = 0; i < MAX_BUFS; i++)
        if (BF[i].live && p >= (char *)BF[i].shadow && p < (char *)BF[i].shadow + BF[i].max)
            return 1;
    return 0;
}

/* Whether the CPU can read the byte at p (without faulting): memory somebody holds. */
static int cpu_readable(const void *p)
{
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)p, 1};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
        return 1;
    if (errno == EFAULT)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    return msync((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), (size_t)page, MS_ASYNC) == 0 || errno != ENOMEM;
}

static const char *kind_name(int k)
{
    static const char *const names[] = {"unknown", "device", "host_pinned", "host_registered", "managed",
                                        "stream_ordered", "virtual", "buffer"};
    return k >= 0 && k < GPUMEM_KIND_COUNT ? names[k] : "?";
}

/* ---- checks after each step --------------------------------------------- */

static void check_bytes(const char *what, const char *p, const unsigned char *shadow, size_t n)
{
    if (!n)
        return;
    sync_all();
    unsigned char *back = shadow_new(n);
    OK(gpumem_memcpy(back, p, n));
    if (memcmp(back, shadow, n) != 0) {
        size_t at = 0;
        while (back[at] == shadow[at])
            at++;
        die("%s %p: byte %zu is 0x%02x, the model says 0x%02x", what, (const void *)p, at, back[at], shadow[at]);
    }
    free(back);
}

static void check_books(void)
{
    uint64_t bytes[GPUMEM_KIND_COUNT] = {0}, live[GPUMEM_KIND_COUNT] = {0};
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (A[i].live) {
            bytes[A[i].kind] += A[i].imported ? 0 : A[i].size; /* an import's bytes are its exporter's */
            live[A[i].kind]++;
        }
    for (int i = 0; i < MAX_HANDLES; i++)
        if (MH[i].live) {
            bytes[GPUMEM_KIND_VIRTUAL] += MH[i].size;
            live[GPUMEM_KIND_VIRTUAL]++;
        }
    for (int i = 0; i < MAX_BUFS; i++)
        if (BF[i].live) {
            bytes[GPUMEM_KIND_BUFFER] += BF[i].size;
            live[GPUMEM_KIND_BUFFER]++;
        }
    gpumem_stats_t st = GPUMEM_STATS_INIT;
    if (gpumem_get_stats(&st) != GPUMEM_SUCCESS) /* not logged: it runs after every step */
        die("gpumem_get_stats failed");
    for (int k = 1; k < GPUMEM_KIND_COUNT; k++) {
        if (st.current_bytes[k] != bytes[k])
            die("statistics: %s current_bytes %" PRIu64 ", the model holds %" PRIu64, kind_name(k),
                st.current_bytes[k], bytes[k]);
        if (st.alloc_count[k] - st.free_count[k] != live[k])
            die("statistics: %s alloc_count - free_count = %" PRIu64 ", the model holds %" PRIu64 " live",
                kind_name(k), st.alloc_count[k] - st.free_count[k], live[k]);
        if (g_trace_bytes[k] != (int64_t)bytes[k])
            die("trace: %s ALLOC - FREE = %" PRId64 " bytes, the model holds %" PRIu64, kind_name(k),
                g_trace_bytes[k], bytes[k]);
    }
}

/* ---- allocations ---------------------------------------------------------- */

static int level_ok(int32_t level) { return level != GPUMEM_SUPPORT_NONE; }

static alloc_t *new_alloc(int kind, char *p, size_t size)
{
    int i = FREE_SLOT(A);
    alloc_t *a = &A[i];
    memset(a, 0, sizeof *a);
    a->live = 1;
    a->kind = kind;
    a->ptr = p;
    a->size = size;
    a->pool = -1;
    a->shadow = shadow_new(size);
    fill_shadowed(p, a->shadow, size);
    return a;
}

static void drop_alloc(alloc_t *a)
{
    if (a->imported) { /* the shadow is the exporter's; the address is not buried (the runtime unmaps it) */
        memset(a, 0, sizeof *a);
        return;
    }
    bury_kind(a->ptr, a->kind, a->size, a->vendor_pool);
    free(a->shadow);
    free(a->owned);
    free(a->attr);
    memset(a, 0, sizeof *a);
}

/* Imported pointers are freed before their exporter frees the block (the runtimes' rule). */
static void free_imports_of(int source)
{
    for (int j = 0; j < MAX_ALLOCS; j++)
        if (A[j].live && A[j].imported && A[j].source == source) {
            sync_all();
            OK(gpumem_free(A[j].ptr));
            drop_alloc(&A[j]);
        }
}

static void free_imports_in(int ipool)
{
    for (int j = 0; j < MAX_ALLOCS; j++)
        if (A[j].live && A[j].imported && A[j].ipool == ipool) {
            sync_all();
            OK(gpumem_free(A[j].ptr));
            drop_alloc(&A[j]);
        }
}

static void op_alloc(void)
{
    if (FREE_SLOT(A) < 0)
        return;
    void *p = (void *)1;
    size_t size = chance(5) ? 0 : pick_size();
    switch (below(5)) {
    case 0:
        if (OK(gpumem_malloc(&p, size)) == GPUMEM_SUCCESS && size)
            new_alloc(GPUMEM_KIND_DEVICE, p, size);
        break;
    case 1: {
        static const uint32_t flags[] = {0, GPUMEM_HOST_PORTABLE, GPUMEM_HOST_MAPPED, GPUMEM_HOST_WRITE_COMBINED,
                                         GPUMEM_HOST_COHERENT | GPUMEM_HOST_MAPPED, GPUMEM_HOST_NONCOHERENT};
        if (chance(10)) {
            uint32_t bad = chance(50) ? (GPUMEM_HOST_COHERENT | GPUMEM_HOST_NONCOHERENT) : 0x80u;
            EXPECT(gpumem_host_alloc(&p, 64, bad), S(GPUMEM_ERROR_INVALID_VALUE));
            break;
        }
        uint32_t f = flags[below(6)];
        if (OK(gpumem_host_alloc(&p, size, f)) == GPUMEM_SUCCESS && size)
            new_alloc(GPUMEM_KIND_HOST_PINNED, p, size);
        break;
    }
    case 2: {
        if (chance(10)) {
            EXPECT(gpumem_managed_alloc(&p, 64, GPUMEM_ATTACH_SINGLE), S(GPUMEM_ERROR_INVALID_VALUE));
            break;
        }
        static const uint32_t flags[] = {0, GPUMEM_ATTACH_GLOBAL, GPUMEM_ATTACH_HOST};
        unsigned want = size == 0 || level_ok(g_info.managed_memory) ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED);
        if (EXPECT(gpumem_managed_alloc(&p, size, flags[below(3)]), want) == GPUMEM_SUCCESS && size) {
            alloc_t *a = new_alloc(GPUMEM_KIND_MANAGED, p, size);
            a->emulated = g_info.managed_memory == GPUMEM_SUPPORT_EMULATED;
            a->attr = (signed char *)shadow_new(4 * size);
            memset(a->attr, 0, size);                                /* read mostly: no */
            memset(a->attr + size, GPUMEM_LOCATION_INVALID, 2 * size); /* preferred, last prefetch: none */
            memset(a->attr + 3 * size, 0, size);                     /* accessed by: nobody */
        }
        break;
    }
    case 3: {
        if (!size)
            size = 1;
        char *mem = NULL;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if (posix_memalign((void **)&mem, page, size))
            return;
        unsigned want = level_ok(g_info.host_register) ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED);
        uint32_t flags = (uint32_t)below(4) & (GPUMEM_HOST_REGISTER_PORTABLE | GPUMEM_HOST_REGISTER_MAPPED);
        if (EXPECT(gpumem_host_register(mem, size, flags), want) == GPUMEM_SUCCESS) {
            alloc_t *a = new_alloc(GPUMEM_KIND_HOST_REGISTERED, mem, size);
            a->owned = mem;
            /* Registering an overlapping range is refused. */
            if (size > 1)
                EXPECT(gpumem_host_register(mem + 1, size - 1, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        } else {
            free(mem);
        }
        break;
    }
    default: {
        gpumem_stream_t s = pick_stream();
        int pi = LIVE_SLOT(PL);
        int from_pool = pi >= 0 && chance(50);
        unsigned want = size == 0 || level_ok(g_info.memory_pools) ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED);
        use_stream(s);
        gpumem_status_t st = from_pool ? EXPECT(gpumem_malloc_from_pool_async(&p, size, PL[pi].p, s), want)
                                       : EXPECT(gpumem_malloc_async(&p, size, s), want);
        if (st == GPUMEM_SUCCESS && size) {
            g_pending = 1;
            alloc_t *a = new_alloc(GPUMEM_KIND_STREAM_ORDERED, p, size);
            a->pool = from_pool ? pi : -1;
            a->vendor_pool = vendor_pools() && !(from_pool && PL[pi].builtin);
            if (from_pool)
                PL[pi].blocks++;
        } else if (st == GPUMEM_SUCCESS && p) {
            die("size 0 gave %p, not NULL", p);
        }
        break;
    }
    }
}

static void op_free(void)
{
    int i = LIVE_SLOT(A);
    if (i < 0)
        return;
    alloc_t *a = &A[i];
    if (!a->imported)
        free_imports_of(i);
    /* The wrong release function first: refused, nothing changes. */
    if (chance(15)) {
        if (a->kind == GPUMEM_KIND_HOST_REGISTERED)
            EXPECT(gpumem_free(a->ptr), S(GPUMEM_ERROR_INVALID_POINTER));
        else if (a->kind != GPUMEM_KIND_HOST_PINNED)
            EXPECT(gpumem_host_free(a->ptr), S(GPUMEM_ERROR_INVALID_POINTER));
        else
            EXPECT(gpumem_host_unregister(a->ptr), S(GPUMEM_ERROR_INVALID_POINTER));
    }
    if (a->size > 1 && chance(15)) {
        char *inner = a->ptr + 1 + below(a->size - 1);
        EXPECT(gpumem_free(inner), S(GPUMEM_ERROR_INVALID_POINTER));
    }
    switch (a->kind) {
    case GPUMEM_KIND_HOST_REGISTERED:
        sync_all();
        OK(gpumem_host_unregister(a->ptr));
        break;
    case GPUMEM_KIND_HOST_PINNED:
        sync_all();
        if (chance(50))
            OK(gpumem_host_free(a->ptr));
        else
            OK(gpumem_free(a->ptr));
        break;
    case GPUMEM_KIND_STREAM_ORDERED:
        if (chance(70)) {
            gpumem_stream_t s = pick_stream();
            use_stream(s);
            OK(gpumem_free_async(a->ptr, s));
            g_pending = 1;
        } else {
            sync_all();
            OK(gpumem_free(a->ptr));
        }
        if (a->pool >= 0)
            PL[a->pool].blocks--;
        break;
    default:
        sync_all();
        OK(gpumem_free(a->ptr));
        break;
    }
    drop_alloc(a);
}

/* Pointers that are dead or made up: refused by every release call, UNKNOWN to pointer info. */
/* Copies and fills on freed memory (the host backend would touch unmapped memory):
 * INVALID_POINTER, and nothing written.  Registered memory is the program's own again
 * (this one frees it too).  Memory the CPU can read there again is somebody's (the OS reused the
 * address, for this program's heap maybe): gpumem takes it as the caller's, and nothing is
 * tried there. */
static void dead_copies(unsigned i)
{
    char *p = g_grave[i];
    if (g_grave_kind[i] == GPUMEM_KIND_HOST_REGISTERED || !dead_copies_known(i))
        return;
    char *q = p + below(g_grave_size[i] < 4096 ? g_grave_size[i] : 4096);
    size_t n = 1 + below(64);
    if (inside_live(q) || inside_own(q) || inside_live(q + n - 1) || inside_own(q + n - 1))
        return; /* made memory again since */
    note("freed %s memory at %p (%zu bytes), at %p%s", kind_name(g_grave_kind[i]), (void *)p, g_grave_size[i],
         (void *)q, cpu_readable(q) ? ", readable again" : "");
    if (cpu_readable(q))
        return;
    const unsigned freed = S(GPUMEM_ERROR_INVALID_POINTER);
    gpumem_stream_t st = pick_stream();
    void *to_scratch[1] = {g_scratch}, *to_q[1] = {q};
    const void *from_q[1] = {q}, *from_scratch[1] = {g_scratch};
    char before[64];
    memcpy(before, g_scratch, n);
    EXPECT(gpumem_memcpy(g_scratch, q, n), freed);
    EXPECT(gpumem_memcpy(q, g_scratch, n), freed);
    EXPECT(gpumem_memset(q, (int)below(256), n), freed);
    EXPECT(gpumem_memcpy_async(g_scratch, q, n, st), freed);
    EXPECT(gpumem_memcpy_async(q, g_scratch, n, st), freed);
    EXPECT(gpumem_memset_async(q, 0, n, st), freed);
    EXPECT(gpumem_memcpy_batch_async(to_scratch, from_q, &n, 1, st), freed);
    EXPECT(gpumem_memcpy_batch_async(to_q, from_scratch, &n, 1, st), freed);
    if (!strstr(gpumem_last_error_message(), "freed"))
        die("a copy to freed %s memory %p is refused without saying it was freed: %s", kind_name(g_grave_kind[i]),
            (void *)q, gpumem_last_error_message());
    sync_all();
    if (memcmp(before, g_scratch, n) != 0)
        die("a refused copy from freed %s memory %p wrote its destination", kind_name(g_grave_kind[i]), (void *)q);
}

static void op_dead_pointer(void)
{
    unsigned i = (unsigned)below(MAX_GRAVE);
    char *p = g_grave[i];
    if (!p || inside_live(p))
        return;
    EXPECT(gpumem_free(p), S(GPUMEM_ERROR_INVALID_POINTER));
    EXPECT(gpumem_host_free(p), S(GPUMEM_ERROR_INVALID_POINTER));
    EXPECT(gpumem_free_async(p, NULL), S(GPUMEM_ERROR_INVALID_POINTER));
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    OK(gpumem_pointer_get_info(p, &info));
    if (info.kind != GPUMEM_KIND_UNKNOWN)
        die("pointer info of freed %p says kind %s", (void *)p, kind_name(info.kind));
    dead_copies(i);
}

static void op_pointer_info(void)
{
    int i = LIVE_SLOT(A);
    if (i < 0)
        return;
    alloc_t *a = &A[i];
    size_t off = below(a->size);
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    OK(gpumem_pointer_get_info(a->ptr + off, &info));
    /* An import maps at least its exporter's block (CUDA and HIP may map more). */
    if (info.kind != a->kind || info.base != a->ptr ||
        (a->imported ? info.alloc_size < a->size : info.alloc_size != a->size))
        die("pointer info of %p (+%zu in a %s of %zu bytes at %p): kind %s, base %p, size %zu", (void *)(a->ptr + off),
            off, kind_name(a->kind), a->size, (void *)a->ptr, kind_name(info.kind), info.base, info.alloc_size);
    if (a->kind == GPUMEM_KIND_MANAGED && info.emulated != a->emulated)
        die("managed %p: emulated %d, the device says %d", (void *)a->ptr, info.emulated, a->emulated);
}

/* ---- dma-buf export ----------------------------------------------------------- */

/* A page-aligned part of a live allocation: a descriptor of its size where the device exports
 * dma-bufs and the memory is device memory, NOT_SUPPORTED where the device cannot, and
 * INVALID_VALUE for host memory; an unaligned start, a flag and a range past the allocation's
 * end are INVALID_VALUE everywhere.  The allocation is unchanged either way (op_verify). */
static void op_dmabuf(void)
{
    int i = LIVE_SLOT(A);
    if (i < 0)
        return;
    const alloc_t *a = &A[i];
    if (a->imported)
        return; /* another process's memory: its exporter exports it */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *first = (char *)(((uintptr_t)a->ptr + page - 1) / page * page);
    char *end = a->ptr + a->size;
    if (first >= end || (size_t)(end - first) < page)
        return; /* not one whole page */
    const size_t pages = (size_t)(end - first) / page;
    char *p = first + below(pages) * page;
    const size_t n = (1 + below((size_t)(end - p) / page)) * page;
    int32_t fd = -1;
    switch (below(4)) {
    case 0:
        EXPECT(gpumem_mem_export_dmabuf(&fd, p + 1 + below(page - 1), n, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    case 1:
        EXPECT(gpumem_mem_export_dmabuf(&fd, p, n, 1u << below(32)), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    case 2:
        EXPECT(gpumem_mem_export_dmabuf(&fd, first, (pages + 1 + below(4)) * page, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    default:
        break;
    }
    unsigned want = S(GPUMEM_ERROR_INVALID_VALUE); /* host memory: pinned, registered, managed */
    if (a->kind == GPUMEM_KIND_DEVICE || a->kind == GPUMEM_KIND_STREAM_ORDERED)
        want = g_info.dmabuf == GPUMEM_SUPPORT_NATIVE ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED);
    /* A block whose stream has not run yet may not be memory to the runtime. */
    if (a->kind == GPUMEM_KIND_STREAM_ORDERED && g_info.dmabuf == GPUMEM_SUPPORT_NATIVE)
        want |= S(GPUMEM_ERROR_INVALID_VALUE);
    if (EXPECT(gpumem_mem_export_dmabuf(&fd, p, n, 0), want) != GPUMEM_SUCCESS)
        return;
    const off_t size = lseek(fd, 0, SEEK_END);
    if (size != (off_t)n)
        die("the dma-buf of %zu bytes at %p reports %lld bytes", n, (void *)p, (long long)size);
    if (close(fd) != 0)
        die("close(%d) of a dma-buf failed", (int)fd);
}

/* ---- copies and fills ------------------------------------------------------ */

/* A target: an allocation, a mapped read-write VMM range, buffer data, or plain host memory. */
typedef struct {
    char *p;
    size_t n;
    unsigned char *shadow; /* NULL for plain host memory */
    int checked;           /* gpumem refuses a range that runs past its end */
} target_t;

static int pick_target(target_t *t)
{
    switch (below(4)) {
    case 0: {
        int i = LIVE_SLOT(RS);
        if (i < 0 || !RS[i].mapped || RS[i].access != GPUMEM_ACCESS_READWRITE)
            return 0;
        *t = (target_t){RS[i].base, RS[i].mapped, RS[i].shadow, 1};
        return 1;
    }
    case 1: {
        int i = LIVE_SLOT(BF);
        void *d = NULL;
        if (i < 0 || !BF[i].size || gpumem_buffer_data(BF[i].b, &d) != GPUMEM_SUCCESS)
            return 0;
        *t = (target_t){d, BF[i].size, BF[i].shadow, 1};
        return 1;
    }
    case 2:
        *t = (target_t){g_scratch, sizeof g_scratch, NULL, 0};
        return 1;
    default: {
        int i = LIVE_SLOT(A);
        if (i < 0)
            return 0;
        /* An import's mapping may run past its exporter's block: copies past that are not refused. */
        *t = (target_t){A[i].ptr, A[i].size, A[i].shadow, !A[i].imported};
        return 1;
    }
    }
}

static void op_copy(void)
{
    target_t d, s;
    if (!pick_target(&d) || !pick_target(&s) || !d.shadow)
        return;
    size_t doff = below(d.n), soff = below(s.n);
    size_t n = 1 + below(d.n - doff < s.n - soff ? d.n - doff : s.n - soff);
    if (d.shadow == s.shadow && doff < soff + n && soff < doff + n)
        return; /* overlapping ranges of one object (or of a block and its import): undefined, as for memcpy */
    int async = chance(50);
    gpumem_stream_t st = pick_stream();
    if (chance(10) && d.checked) {
        /* Past the end of the destination: refused, nothing copied. */
        size_t over = d.n - doff + 1 + below(64);
        if (over <= s.n - soff || !s.checked) {
            if (!s.checked && soff + over > s.n)
                return; /* would read past our own scratch */
            sync_all();
            EXPECT(gpumem_memcpy(d.p + doff, s.p + soff, over), S(GPUMEM_ERROR_INVALID_VALUE));
        }
        return;
    }
    if (!s.shadow) /* plain host source: new random bytes */
        for (size_t k = 0; k < n; k++)
            g_scratch[soff + k] = (char)rnd();
    const unsigned char *from = s.shadow ? s.shadow + soff : (const unsigned char *)s.p + soff;
    if (async) {
        use_stream(st);
        OK(gpumem_memcpy_async(d.p + doff, s.p + soff, n, st));
        g_pending = 1;
        if (!s.shadow)
            sync_all(); /* the scratch is reused by the next step */
    } else {
        sync_all();
        OK(gpumem_memcpy(d.p + doff, s.p + soff, n));
    }
    memmove(d.shadow + doff, from, n);
}

/* Whether [a, a + n) and [b, b + m) share a byte. */
static int overlaps(const void *a, size_t n, const void *b, size_t m)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + m && y < x + n;
}

/* Whether [ao, ao + an) of target a and [bo, bo + bn) of target b are the same bytes somewhere: at
 * one address, or in a block and its import (one shadow, two addresses). */
static int meet(const target_t *a, size_t ao, size_t an, const target_t *b, size_t bo, size_t bn)
{
    return overlaps(a->p + ao, an, b->p + bo, bn) || (a->shadow && a->shadow == b->shadow && ao < bo + bn && bo < ao + an);
}

/* A batch of up to four copies between objects.  Its copies run in no order among themselves,
 * so a batch where a destination meets another entry's destination or source is refused and
 * changes nothing; any other lands as the model says. */
static void op_copy_batch(void)
{
    enum { MAX_BATCH = 4 };
    target_t d[MAX_BATCH], s[MAX_BATCH];
    void *dsts[MAX_BATCH];
    const void *srcs[MAX_BATCH];
    size_t sizes[MAX_BATCH], doff[MAX_BATCH], soff[MAX_BATCH];
    size_t k = 1 + below(MAX_BATCH);
    for (size_t i = 0; i < k; i++) {
        if (!pick_target(&d[i]) || !pick_target(&s[i]) || !d[i].shadow || !s[i].shadow)
            return;
        doff[i] = below(d[i].n);
        soff[i] = below(s[i].n);
        size_t room = d[i].n - doff[i] < s[i].n - soff[i] ? d[i].n - doff[i] : s[i].n - soff[i];
        sizes[i] = 1 + below(room < 4096 ? room : 4096);
        dsts[i] = d[i].p + doff[i];
        srcs[i] = s[i].p + soff[i];
        if (meet(&d[i], doff[i], sizes[i], &s[i], soff[i], sizes[i]))
            return; /* a copy onto itself: undefined, as for memcpy */
    }
    int dependent = 0, aliased = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++)
            if (i != j) {
                if (overlaps(dsts[i], sizes[i], dsts[j], sizes[j]) || overlaps(dsts[i], sizes[i], srcs[j], sizes[j]))
                    dependent = 1;
                else if (meet(&d[i], doff[i], sizes[i], &d[j], doff[j], sizes[j]) ||
                         meet(&d[i], doff[i], sizes[i], &s[j], soff[j], sizes[j]))
                    aliased = 1;
            }
    if (aliased && !dependent)
        return; /* entries that meet only through an import: gpumem cannot see it; undefined, as for memcpy */
    gpumem_stream_t st = pick_stream();
    if (dependent) {
        EXPECT(gpumem_memcpy_batch_async(dsts, srcs, sizes, k, st), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    }
    use_stream(st);
    OK(gpumem_memcpy_batch_async(dsts, srcs, sizes, k, st));
    g_pending = 1;
    for (size_t i = 0; i < k; i++)
        memmove(d[i].shadow + doff[i], s[i].shadow + soff[i], sizes[i]);
}

static void op_fill(void)
{
    target_t d;
    if (!pick_target(&d) || !d.shadow)
        return;
    size_t off = below(d.n), n = 1 + below(d.n - off);
    int v = (int)below(256);
    if (chance(10) && d.checked) {
        sync_all();
        EXPECT(gpumem_memset(d.p + off, v, d.n - off + 1 + below(4096)), S(GPUMEM_ERROR_INVALID_VALUE));
        EXPECT(gpumem_memset(NULL, v, 1), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    }
    if (chance(50)) {
        gpumem_stream_t st = pick_stream();
        use_stream(st);
        OK(gpumem_memset_async(d.p + off, v, n, st));
        g_pending = 1;
    } else {
        sync_all();
        OK(gpumem_memset(d.p + off, v, n));
    }
    memset(d.shadow + off, v, n);
}

static void op_verify(void)
{
    target_t t;
    if (pick_target(&t) && t.shadow)
        check_bytes("object", t.p, t.shadow, t.n);
}

/* ---- streams and events ---------------------------------------------------- */

static void op_stream(void)
{
    int i;
    switch (below(4)) {
    case 0:
        if ((i = FREE_SLOT(ST)) >= 0 && OK(gpumem_stream_create(&ST[i].s)) == GPUMEM_SUCCESS)
            ST[i].live = 1;
        break;
    case 1:
        if ((i = LIVE_SLOT(ST)) >= 0) {
            sync_all();
            OK(gpumem_stream_destroy(ST[i].s));
            if (g_last_stream == ST[i].s)
                g_last_stream = NULL;
            g_dead_stream = ST[i].s;
            ST[i].live = 0;
        }
        break;
    case 2:
        if ((i = LIVE_SLOT(ST)) >= 0) {
            EXPECT(gpumem_stream_query(ST[i].s), S(GPUMEM_SUCCESS) | S(GPUMEM_ERROR_BUSY));
            OK(gpumem_stream_synchronize(ST[i].s));
            if (g_last_stream == ST[i].s)
                g_pending = 0;
        }
        break;
    default:
        if (g_dead_stream) {
            EXPECT(gpumem_stream_synchronize(g_dead_stream), S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_memset_async(g_scratch, 0, 1, g_dead_stream), S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_stream_destroy(g_dead_stream), S(GPUMEM_ERROR_INVALID_HANDLE));
        }
        EXPECT(gpumem_stream_destroy(NULL), S(GPUMEM_ERROR_INVALID_HANDLE));
        break;
    }
}

static void op_event(void)
{
    int i = LIVE_SLOT(EV);
    switch (below(6)) {
    case 0:
        if ((i = FREE_SLOT(EV)) >= 0 && OK(gpumem_event_create(&EV[i].e)) == GPUMEM_SUCCESS) {
            EV[i].live = 1;
            EV[i].recorded = 0;
        }
        break;
    case 1:
        if (i >= 0) {
            OK(gpumem_event_record(EV[i].e, pick_stream()));
            EV[i].recorded = 1;
        }
        break;
    case 2:
        if (i >= 0) {
            EXPECT(gpumem_event_query(EV[i].e), S(GPUMEM_SUCCESS) | S(GPUMEM_ERROR_BUSY));
            OK(gpumem_event_synchronize(EV[i].e));
        }
        break;
    case 3:
        if (i >= 0)
            OK(gpumem_stream_wait_event(pick_stream(), EV[i].e));
        break;
    case 4:
        if (i >= 0) {
            int j = LIVE_SLOT(EV);
            float ms = -1;
            if (EV[i].recorded && EV[j].recorded) {
                OK(gpumem_event_synchronize(EV[i].e));
                OK(gpumem_event_synchronize(EV[j].e));
                OK(gpumem_event_elapsed_ms(&ms, EV[i].e, EV[j].e));
            }
            EXPECT(gpumem_event_elapsed_ms(NULL, EV[i].e, EV[j].e), S(GPUMEM_ERROR_INVALID_VALUE));
        }
        break;
    default:
        if (i >= 0) {
            OK(gpumem_event_destroy(EV[i].e));
            g_dead_event = EV[i].e;
            EV[i].live = 0;
        }
        if (g_dead_event) {
            EXPECT(gpumem_event_query(g_dead_event), S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_event_record(g_dead_event, NULL), S(GPUMEM_ERROR_INVALID_HANDLE));
        }
        break;
    }
}

/* ---- pools ------------------------------------------------------------------ */

static void op_pool(void)
{
    int i = LIVE_SLOT(PL);
    switch (below(7)) {
    case 0: {
        if ((i = FREE_SLOT(PL)) < 0)
            break;
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.implementation = (int32_t)below(3);
        if (chance(20))
            props.max_size = (uint64_t)(64 + below(64)) << 20;
        unsigned want = S(GPUMEM_SUCCESS);
        if (!level_ok(g_info.memory_pools) ||
            (props.implementation == GPUMEM_POOL_NATIVE && g_info.memory_pools != GPUMEM_SUPPORT_NATIVE))
            want = S(GPUMEM_ERROR_NOT_SUPPORTED);
        else if (props.max_size && props.implementation == GPUMEM_POOL_NATIVE)
            want |= S(GPUMEM_ERROR_NOT_SUPPORTED); /* vendor pools without a size limit */
        if (EXPECT(gpumem_pool_create(&PL[i].p, &props), want) == GPUMEM_SUCCESS) {
            PL[i] = (pool_t){1, PL[i].p, props.implementation == GPUMEM_POOL_BUILTIN, 0, 0, 0};
        }
        break;
    }
    case 1:
        if (i >= 0) {
            /* Outstanding blocks stay valid: the pool goes when the last one is freed.  Its imports
             * stay too, and import nothing more. */
            OK(gpumem_pool_destroy(PL[i].p));
            g_dead_pool = PL[i].p;
            PL[i].live = 0;
            for (int k = 0; k < MAX_ALLOCS; k++)
                if (A[k].live && A[k].pool == i)
                    A[k].pool = -2; /* a block of a destroyed pool */
            for (int k = 0; k < MAX_IPOOLS; k++)
                if (IP[k].live && IP[k].from == i)
                    IP[k].from = -1;
        }
        break;
    case 2:
        if (i >= 0) {
            int32_t flag = (int32_t)below(2);
            int32_t attr = 1 + (int32_t)below(3);
            OK(gpumem_pool_set_attribute(PL[i].p, attr, &flag));
            int32_t back = -1;
            OK(gpumem_pool_get_attribute(PL[i].p, attr, &back));
            if (back != flag)
                die("pool attribute %d: set %d, read %d", attr, flag, back);
            flag = 2;
            EXPECT(gpumem_pool_set_attribute(PL[i].p, attr, &flag), S(GPUMEM_ERROR_INVALID_VALUE));
            uint64_t v = 0;
            EXPECT(gpumem_pool_set_attribute(PL[i].p, 99, &v), S(GPUMEM_ERROR_INVALID_VALUE));
            EXPECT(gpumem_pool_set_attribute(PL[i].p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v),
                   S(GPUMEM_ERROR_INVALID_VALUE));
        }
        break;
    case 3:
        if (i >= 0) {
            uint64_t threshold = chance(50) ? 0 : (uint64_t)below(64) << 20;
            OK(gpumem_pool_set_attribute(PL[i].p, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
            sync_all();
            OK(gpumem_pool_trim_to(PL[i].p, (size_t)below(32) << 20));
            uint64_t used = 0, reserved = 0, need = 0;
            OK(gpumem_pool_get_attribute(PL[i].p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
            OK(gpumem_pool_get_attribute(PL[i].p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
            for (int k = 0; k < MAX_ALLOCS; k++)
                if (A[k].live && A[k].pool == i)
                    need += A[k].size;
            if (used < need || reserved < used)
                die("pool %d: used %" PRIu64 ", reserved %" PRIu64 ", its live blocks hold %" PRIu64, i, used,
                    reserved, need);
        }
        break;
    case 4:
        if (i >= 0) {
            OK(gpumem_device_set_pool(0, PL[i].p));
            gpumem_pool_t cur = NULL;
            OK(gpumem_device_get_pool(&cur, 0));
            if (cur != PL[i].p)
                die("device_get_pool gave %p after set_pool(%p)", (void *)cur, (void *)PL[i].p);
            /* malloc_async now takes from this pool; the model keeps "current" at the default. */
            gpumem_pool_t def = NULL;
            OK(gpumem_device_get_default_pool(&def, 0));
            OK(gpumem_device_set_pool(0, def));
            EXPECT(gpumem_pool_destroy(def), S(GPUMEM_ERROR_INVALID_VALUE));
        }
        break;
    case 5:
        if (g_dead_pool) {
            void *p = NULL;
            uint64_t v = 0;
            EXPECT(gpumem_malloc_from_pool_async(&p, 64, g_dead_pool, NULL), S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_pool_get_attribute(g_dead_pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &v),
                   S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_pool_destroy(g_dead_pool), S(GPUMEM_ERROR_INVALID_HANDLE));
        }
        break;
    default:
        if (i >= 0) {
            gpumem_access_desc_t d = {0, GPUMEM_ACCESS_READ};
            EXPECT(gpumem_pool_set_access(PL[i].p, &d, 1), S(GPUMEM_ERROR_INVALID_VALUE));
            int32_t flags = -1;
            OK(gpumem_pool_get_access(&flags, PL[i].p, 0));
            if (flags != GPUMEM_ACCESS_READWRITE)
                die("the owning device has access %d to its pool", flags);
            EXPECT(gpumem_pool_get_access(&flags, PL[i].p, g_devices), S(GPUMEM_ERROR_INVALID_DEVICE));
        }
        break;
    }
}

/* ---- virtual memory ---------------------------------------------------------- */

static int vmm_native(void) { return g_info.virtual_memory == GPUMEM_SUPPORT_NATIVE; }

static void op_vmm(void)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    int i;
    switch (below(7)) {
    case 0: /* create */
        if ((i = FREE_SLOT(MH)) < 0)
            break;
        {
            size_t size = g_gran * (1 + below(3));
            if (!vmm_native()) {
                EXPECT(gpumem_mem_create(&MH[i].h, size, &props), S(GPUMEM_ERROR_NOT_SUPPORTED));
                break;
            }
            EXPECT(gpumem_mem_create(&MH[i].h, size + 1, &props), S(GPUMEM_ERROR_INVALID_VALUE));
            if (g_info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD && chance(50))
                props.handle_types = GPUMEM_HANDLE_POSIX_FD;
            if (OK(gpumem_mem_create(&MH[i].h, size, &props)) == GPUMEM_SUCCESS)
                MH[i] = (handle_t){1, MH[i].h, size, 0, 0, props.handle_types == GPUMEM_HANDLE_POSIX_FD};
        }
        break;
    case 1: /* release (while mapped too: the mapping keeps the memory) */
        if ((i = LIVE_SLOT(MH)) >= 0) {
            OK(gpumem_mem_release(MH[i].h));
            EXPECT(gpumem_mem_release(MH[i].h), S(GPUMEM_ERROR_INVALID_HANDLE));
            for (int r = 0; r < MAX_RES; r++)
                if (RS[r].live && RS[r].handle == i)
                    RS[r].handle = -1;
            MH[i].live = 0;
        }
        break;
    case 2: /* reserve */
        if ((i = FREE_SLOT(RS)) < 0 || !vmm_native())
            break;
        {
            size_t size = g_gran * (1 + below(4));
            void *p = NULL;
            EXPECT(gpumem_mem_address_reserve(&p, size + 1, 0, NULL), S(GPUMEM_ERROR_INVALID_VALUE));
            if (OK(gpumem_mem_address_reserve(&p, size, 0, NULL)) == GPUMEM_SUCCESS)
                RS[i] = (res_t){1, p, size, -1, 0, GPUMEM_ACCESS_NONE, NULL};
        }
        break;
    case 3: /* map a whole allocation at the reservation's start */
        if ((i = LIVE_SLOT(RS)) < 0 || RS[i].mapped)
            break;
        {
            int h = LIVE_SLOT(MH);
            if (h < 0 || MH[h].imported || MH[h].size > RS[i].size)
                break;
            /* One allocation mapped twice is one memory at two addresses: the model keeps one
             * shadow per mapping, so it maps each allocation once. */
            for (int r = 0; r < MAX_RES; r++)
                if (RS[r].live && RS[r].mapped && RS[r].handle == h)
                    h = -1;
            if (h < 0)
                break;
            EXPECT(gpumem_mem_map(RS[i].base, MH[h].size + 1, 0, MH[h].h), S(GPUMEM_ERROR_INVALID_VALUE));
            if (MH[h].size > g_gran)
                EXPECT(gpumem_mem_map(RS[i].base, MH[h].size - g_gran, g_gran, MH[h].h),
                       S(GPUMEM_ERROR_NOT_SUPPORTED));
            if (OK(gpumem_mem_map(RS[i].base, MH[h].size, 0, MH[h].h)) == GPUMEM_SUCCESS) {
                RS[i].handle = h;
                RS[i].mapped = MH[h].size;
                RS[i].access = GPUMEM_ACCESS_NONE;
                /* Mapped but without access: copies are refused. */
                sync_all();
                EXPECT(gpumem_memset(RS[i].base, 0, 1), S(GPUMEM_ERROR_INVALID_VALUE));
            }
        }
        break;
    case 4: /* access */
        if ((i = LIVE_SLOT(RS)) < 0 || !RS[i].mapped)
            break;
        {
            /* A READ-only mapping: gpumem refuses to write it (it once faulted on host). */
            int32_t flags = chance(30) ? GPUMEM_ACCESS_READ : GPUMEM_ACCESS_READWRITE;
            gpumem_access_desc_t d = {0, flags};
            sync_all();
            OK(gpumem_mem_set_access(RS[i].base, RS[i].mapped, &d, 1));
            uint64_t got = 0;
            OK(gpumem_mem_get_access(&got, 0, RS[i].base));
            if ((int32_t)got != flags)
                die("mem_get_access %" PRIu64 " after setting %d", got, flags);
            int was_rw = RS[i].access == GPUMEM_ACCESS_READWRITE;
            RS[i].access = flags;
            if (flags == GPUMEM_ACCESS_READWRITE && !was_rw) {
                if (!RS[i].shadow)
                    RS[i].shadow = shadow_new(RS[i].mapped);
                fill_shadowed(RS[i].base, RS[i].shadow, RS[i].mapped);
            }
            if (flags == GPUMEM_ACCESS_READ) {
                EXPECT(gpumem_memset(RS[i].base, 1, 16), S(GPUMEM_ERROR_INVALID_VALUE));
                EXPECT(gpumem_memcpy(RS[i].base, g_scratch, 16), S(GPUMEM_ERROR_INVALID_VALUE));
            }
            if (RS[i].mapped < RS[i].size) /* past the mapping: unmapped address space */
                EXPECT(gpumem_memset(RS[i].base + RS[i].mapped - 8, 0, 16), S(GPUMEM_ERROR_INVALID_VALUE));
            /* A length that wraps the address space. */
            EXPECT(gpumem_memset(RS[i].base, 1, SIZE_MAX), S(GPUMEM_ERROR_INVALID_VALUE));
        }
        break;
    case 5: /* unmap */
        if ((i = LIVE_SLOT(RS)) < 0 || !RS[i].mapped)
            break;
        sync_all();
        EXPECT(gpumem_mem_address_free(RS[i].base, RS[i].size), S(GPUMEM_ERROR_BUSY));
        OK(gpumem_mem_unmap(RS[i].base, RS[i].mapped));
        RS[i].mapped = 0;
        RS[i].handle = -1;
        RS[i].access = GPUMEM_ACCESS_NONE;
        free(RS[i].shadow);
        RS[i].shadow = NULL;
        break;
    default: /* free the reservation */
        if ((i = LIVE_SLOT(RS)) < 0 || RS[i].mapped)
            break;
        OK(gpumem_mem_address_free(RS[i].base, RS[i].size));
        bury_kind(RS[i].base, GPUMEM_KIND_VIRTUAL, RS[i].size, 0);
        RS[i].live = 0;
        break;
    }
}

/* ---- buffers ------------------------------------------------------------------- */

static void op_buffer(void)
{
    int i = LIVE_SLOT(BF);
    switch (below(4)) {
    case 0: {
        if ((i = FREE_SLOT(BF)) < 0)
            break;
        size_t max = (size_t)(1 + below(16)) << 20, size = below(max / 2);
        unsigned want = level_ok(g_info.virtual_memory) ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED);
        EXPECT(gpumem_buffer_create(&BF[i].b, max + 1, max, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        if (EXPECT(gpumem_buffer_create(&BF[i].b, size, max, 0), want) == GPUMEM_SUCCESS) {
            BF[i] = (buf_t){1, BF[i].b, size, max, shadow_new(max)};
            void *d = NULL;
            OK(gpumem_buffer_data(BF[i].b, &d));
            if (size)
                fill_shadowed(d, BF[i].shadow, size);
        }
        break;
    }
    case 1:
    case 2:
        if (i >= 0) {
            size_t n = below(BF[i].max + 1);
            sync_all();
            EXPECT(gpumem_buffer_resize(BF[i].b, BF[i].max + 1), S(GPUMEM_ERROR_INVALID_VALUE));
            void *was = NULL, *now = NULL;
            OK(gpumem_buffer_data(BF[i].b, &was));
            OK(gpumem_buffer_resize(BF[i].b, n));
            OK(gpumem_buffer_data(BF[i].b, &now));
            if (was && now != was && BF[i].size) /* the data moved (allocate, copy, free) */
                bury_kind(was, GPUMEM_KIND_BUFFER, BF[i].size, 0);
            size_t got = 0;
            OK(gpumem_buffer_size(BF[i].b, &got));
            if (got != n)
                die("buffer size %zu after resize to %zu", got, n);
            size_t old = BF[i].size;
            BF[i].size = n;
            if (n > old) { /* the new bytes are undefined: give them values */
                void *d = NULL;
                OK(gpumem_buffer_data(BF[i].b, &d));
                fill_shadowed((char *)d + old, BF[i].shadow + old, n - old);
            }
            if (n) {
                void *d = NULL;
                OK(gpumem_buffer_data(BF[i].b, &d));
                check_bytes("buffer after resize", d, BF[i].shadow, n);
                EXPECT(gpumem_free(d), S(GPUMEM_ERROR_INVALID_POINTER));
            }
        }
        break;
    default:
        if (i >= 0) {
            sync_all();
            void *d = NULL;
            OK(gpumem_buffer_data(BF[i].b, &d));
            OK(gpumem_buffer_destroy(BF[i].b));
            if (d && BF[i].size)
                bury_kind(d, GPUMEM_KIND_BUFFER, BF[i].size, 0);
            g_dead_buffer = BF[i].b;
            free(BF[i].shadow);
            BF[i].live = 0;
        }
        if (g_dead_buffer) {
            size_t n;
            EXPECT(gpumem_buffer_size(g_dead_buffer, &n), S(GPUMEM_ERROR_INVALID_HANDLE));
            EXPECT(gpumem_buffer_resize(g_dead_buffer, 0), S(GPUMEM_ERROR_INVALID_HANDLE));
        }
        break;
    }
}

/* ---- managed memory: prefetch, advice, range attributes, attach ---------------- */

static int pick_managed(void)
{
    int start = (int)below(MAX_ALLOCS);
    for (int k = 0; k < MAX_ALLOCS; k++) {
        int i = (start + k) % MAX_ALLOCS;
        if (A[i].live && A[i].kind == GPUMEM_KIND_MANAGED)
            return i;
    }
    return -1;
}

/* The value over [off, off+n) when uniform, else `mixed`. */
static int uniform(const signed char *v, size_t off, size_t n, int mixed)
{
    for (size_t k = off + 1; k < off + n; k++)
        if (v[k] != v[off])
            return mixed;
    return v[off];
}

static void op_managed(void)
{
    int i = pick_managed();
    if (i < 0) {
        int j = LIVE_SLOT(A);
        if (j >= 0 && A[j].kind != GPUMEM_KIND_MANAGED)
            EXPECT(gpumem_advise(A[j].ptr, 1, GPUMEM_ADVISE_SET_READ_MOSTLY, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        return;
    }
    alloc_t *a = &A[i];
    size_t n = a->size, off = below(n), cnt = 1 + below(n - off);
    signed char *rm = a->attr, *pref = a->attr + n, *pf = a->attr + 2 * n, *acc = a->attr + 3 * n;
    int32_t dev = chance(30) ? GPUMEM_DEVICE_HOST : (int32_t)below((uint64_t)g_devices);
    switch (below(5)) {
    case 0: {
        gpumem_stream_t s = pick_stream();
        use_stream(s);
        OK(gpumem_prefetch_async(a->ptr + off, cnt, dev, s));
        g_pending = 1;
        memset(pf + off, dev, cnt);
        EXPECT(gpumem_prefetch_async(a->ptr + off, 0, dev, s), S(GPUMEM_ERROR_INVALID_VALUE));
        EXPECT(gpumem_prefetch_async(a->ptr + off, n - off + 1, dev, s), S(GPUMEM_ERROR_INVALID_VALUE));
        EXPECT(gpumem_prefetch_async(a->ptr + off, cnt, g_devices, s), S(GPUMEM_ERROR_INVALID_DEVICE));
        break;
    }
    case 1: {
        int32_t advice = (int32_t)(1 + below(6));
        if (chance(10))
            advice = chance(50) ? GPUMEM_ADVISE_SET_COARSE_GRAIN : GPUMEM_ADVISE_UNSET_COARSE_GRAIN;
        OK(gpumem_advise(a->ptr + off, cnt, advice, dev));
        switch (advice) {
        case GPUMEM_ADVISE_SET_READ_MOSTLY: memset(rm + off, 1, cnt); break;
        case GPUMEM_ADVISE_UNSET_READ_MOSTLY: memset(rm + off, 0, cnt); break;
        case GPUMEM_ADVISE_SET_PREFERRED_LOCATION: memset(pref + off, dev, cnt); break;
        case GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION: memset(pref + off, GPUMEM_LOCATION_INVALID, cnt); break;
        case GPUMEM_ADVISE_SET_ACCESSED_BY:
            for (size_t k = off; k < off + cnt; k++)
                acc[k] |= (signed char)(1 << (dev + 1));
            break;
        case GPUMEM_ADVISE_UNSET_ACCESSED_BY:
            for (size_t k = off; k < off + cnt; k++)
                acc[k] &= (signed char)~(1 << (dev + 1));
            break;
        default: break;
        }
        EXPECT(gpumem_advise(a->ptr + off, cnt, 42, dev), S(GPUMEM_ERROR_INVALID_VALUE));
        break;
    }
    case 2: {
        int32_t rmv = -1, prefv = -9, pfv = -9, accv[4] = {9, 9, 9, 9};
        void *data[] = {&rmv, &prefv, &pfv, accv};
        size_t sizes[] = {4, 4, 4, sizeof accv};
        int32_t attrs[] = {GPUMEM_RANGE_READ_MOSTLY, GPUMEM_RANGE_PREFERRED_LOCATION, GPUMEM_RANGE_LAST_PREFETCH_LOCATION,
                           GPUMEM_RANGE_ACCESSED_BY};
        OK(gpumem_range_get_attributes(data, sizes, attrs, 4, a->ptr + off, cnt));
        int want_rm = 1;
        int all_acc = 0x7f;
        for (size_t k = off; k < off + cnt; k++) {
            want_rm &= rm[k];
            all_acc &= acc[k];
        }
        if (rmv != want_rm)
            die("READ_MOSTLY %d over %p+%zu, the model says %d", rmv, (void *)(a->ptr + off), cnt, want_rm);
        if (prefv != uniform(pref, off, cnt, GPUMEM_LOCATION_INVALID))
            die("PREFERRED_LOCATION %d, the model says %d", prefv, uniform(pref, off, cnt, GPUMEM_LOCATION_INVALID));
        if (pfv != uniform(pf, off, cnt, GPUMEM_LOCATION_INVALID))
            die("LAST_PREFETCH_LOCATION %d, the model says %d", pfv, uniform(pf, off, cnt, GPUMEM_LOCATION_INVALID));
        int slot = 0;
        for (int32_t d = GPUMEM_DEVICE_HOST; d < g_devices && slot < 4; d++)
            if (all_acc & (1 << (d + 1)))
                if (accv[slot++] != d)
                    die("ACCESSED_BY slot %d is %d, the model says %d", slot - 1, accv[slot - 1], d);
        for (; slot < 4; slot++)
            if (accv[slot] != GPUMEM_LOCATION_INVALID)
                die("ACCESSED_BY slot %d is %d, the model says none", slot, accv[slot]);
        int32_t v;
        EXPECT(gpumem_range_get_attribute(&v, 3, GPUMEM_RANGE_READ_MOSTLY, a->ptr + off, cnt),
               S(GPUMEM_ERROR_INVALID_VALUE));
        EXPECT(gpumem_range_get_attribute(&v, 4, 77, a->ptr + off, cnt), S(GPUMEM_ERROR_INVALID_VALUE));
        break;
    }
    case 3: {
        static const uint32_t flags[] = {GPUMEM_ATTACH_GLOBAL, GPUMEM_ATTACH_HOST, GPUMEM_ATTACH_SINGLE};
        gpumem_stream_t s = pick_stream();
        uint32_t f = flags[below(3)];
        sync_all();
        if (!s && f == GPUMEM_ATTACH_SINGLE) {
            /* CUDA refuses SINGLE on the default stream; so does every backend. */
            EXPECT(gpumem_stream_attach(s, a->ptr, 0, f), S(GPUMEM_ERROR_INVALID_VALUE));
            break;
        }
        OK(gpumem_stream_attach(s, a->ptr, chance(50) ? 0 : a->size, f));
        OK(gpumem_stream_synchronize(s));
        EXPECT(gpumem_stream_attach(s, a->ptr, a->size + 1, GPUMEM_ATTACH_GLOBAL), S(GPUMEM_ERROR_INVALID_VALUE));
        EXPECT(gpumem_stream_attach(s, a->ptr, 0, 0), S(GPUMEM_ERROR_INVALID_VALUE));
        break;
    }
    default: {
        void *dptr = NULL;
        unsigned want = a->emulated ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_INVALID_VALUE);
        EXPECT(gpumem_host_get_device_pointer(&dptr, a->ptr + off), want);
        break;
    }
    }
}

/* ---- imported pools, pointers and memory handles --------------------------------- */

/* A call on an imported object that gpumem refuses: the message says it is imported and what the
 * exporter can do (`words`), never another call's remedy. */
static void expect_imported_refusal(gpumem_status_t st, const char *words)
{
    const char *msg = gpumem_last_error_message();
    if (st == GPUMEM_ERROR_NOT_SUPPORTED &&
        (!strstr(msg, "imported") || !strstr(msg, words) || strstr(msg, "sizes, alignment") ||
         strstr(msg, "gpumem_ipc_recv_fd")))
        die("the refusal of a call on an imported object does not say so, or what to do (\"%s\"): %s", words, msg);
}

static int shareable_pools(void)
{
    return level_ok(g_info.memory_pools) && (g_info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD);
}

/* A live block of a live shareable pool that this process allocated; -1 when none. */
static int pick_exportable(void)
{
    int start = (int)below(MAX_ALLOCS);
    for (int k = 0; k < MAX_ALLOCS; k++) {
        int i = (start + k) % MAX_ALLOCS;
        if (A[i].live && A[i].kind == GPUMEM_KIND_STREAM_ORDERED && !A[i].imported && A[i].pool >= 0 &&
            PL[A[i].pool].live && PL[A[i].pool].shareable)
            return i;
    }
    return -1;
}

/* A descriptor of shareable pool `i` (the pool is exported before its pointers, as CUDA wants). */
static int32_t export_pool(int i)
{
    int32_t fd = -1;
    OK(gpumem_pool_export_to_shareable_handle(&fd, PL[i].p, GPUMEM_HANDLE_POSIX_FD));
    PL[i].exported = 1;
    return fd;
}

/* What an imported pool says of itself: the bytes its imports map (their pointer info), reserved
 * and used alike, and high-water marks over them; the exporter's settings are refused. */
static void check_imported_pool(int j)
{
    uint64_t mapped = 0;
    for (int k = 0; k < MAX_ALLOCS; k++)
        if (A[k].live && A[k].imported && A[k].ipool == j) {
            gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
            OK(gpumem_pointer_get_info(A[k].ptr, &info));
            mapped += info.alloc_size;
        }
    uint64_t used = 1, reserved = 1, high = 0, zero = 0;
    OK(gpumem_pool_get_attribute(IP[j].p, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    OK(gpumem_pool_get_attribute(IP[j].p, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    if (used != mapped || reserved != mapped)
        die("imported pool %d: used %" PRIu64 ", reserved %" PRIu64 ", its imports map %" PRIu64, j, used, reserved,
            mapped);
    OK(gpumem_pool_get_attribute(IP[j].p, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &high));
    if (high < used)
        die("imported pool %d: USED_MEM_HIGH %" PRIu64 " below USED_MEM_CURRENT %" PRIu64, j, high, used);
    int32_t attr = chance(50) ? GPUMEM_POOL_ATTR_USED_MEM_HIGH : GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH;
    OK(gpumem_pool_set_attribute(IP[j].p, attr, &zero));
    OK(gpumem_pool_get_attribute(IP[j].p, attr, &high));
    if (high != mapped)
        die("imported pool %d: attribute %d is %" PRIu64 " after its reset, %" PRIu64 " mapped", j, attr, high, mapped);
    int32_t flag = (int32_t)below(2);
    attr = 1 + (int32_t)below(3);
    expect_imported_refusal(
        chance(50) ? EXPECT(gpumem_pool_set_attribute(IP[j].p, attr, &flag), S(GPUMEM_ERROR_NOT_SUPPORTED))
                   : EXPECT(gpumem_pool_get_attribute(IP[j].p, attr, &flag), S(GPUMEM_ERROR_NOT_SUPPORTED)),
        "exporting process");
    expect_imported_refusal(
        EXPECT(gpumem_pool_set_attribute(IP[j].p, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero), S(GPUMEM_ERROR_NOT_SUPPORTED)),
        "exporting process");
    OK(gpumem_pool_trim_to(IP[j].p, chance(50) ? 0 : SIZE_MAX));
    int32_t fd = -1;
    expect_imported_refusal(
        EXPECT(gpumem_pool_export_to_shareable_handle(&fd, IP[j].p, GPUMEM_HANDLE_POSIX_FD), S(GPUMEM_ERROR_NOT_SUPPORTED)),
        "gpumem_ipc_send_fd");
    int32_t flags = -1;
    OK(gpumem_pool_get_access(&flags, IP[j].p, 0));
    if (flags != GPUMEM_ACCESS_READWRITE)
        die("imported pool %d: device 0 has access %d", j, flags);
    void *x = NULL;
    EXPECT(gpumem_malloc_from_pool_async(&x, 64, IP[j].p, NULL), S(GPUMEM_ERROR_INVALID_VALUE));
}

static void op_import(void)
{
    int i, j;
    switch (below(5)) {
    case 0: /* a shareable pool, and a block of it */
        if ((i = FREE_SLOT(PL)) < 0)
            break;
        {
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.handle_types = GPUMEM_HANDLE_POSIX_FD;
            if (EXPECT(gpumem_pool_create(&PL[i].p, &props),
                       shareable_pools() ? S(GPUMEM_SUCCESS) : S(GPUMEM_ERROR_NOT_SUPPORTED)) != GPUMEM_SUCCESS)
                break;
            PL[i] = (pool_t){1, PL[i].p, 0, 0, 1, 0};
            void *p = NULL;
            size_t size = pick_size();
            gpumem_stream_t s = pick_stream();
            use_stream(s);
            if (FREE_SLOT(A) >= 0 && OK(gpumem_malloc_from_pool_async(&p, size, PL[i].p, s)) == GPUMEM_SUCCESS) {
                g_pending = 1;
                alloc_t *a = new_alloc(GPUMEM_KIND_STREAM_ORDERED, p, size);
                a->pool = i;
                a->vendor_pool = vendor_pools();
                PL[i].blocks++;
            }
        }
        break;
    case 1:
    case 2: /* a pointer imported in this process (its pool imported first where it is not yet) */
        if ((i = pick_exportable()) < 0)
            break;
        for (j = 0; j < MAX_IPOOLS && !(IP[j].live && IP[j].from == A[i].pool); j++) {
        }
        if (j == MAX_IPOOLS) {
            if ((j = FREE_SLOT(IP)) < 0)
                break;
            int32_t fd = export_pool(A[i].pool);
            gpumem_status_t st = OK(gpumem_pool_import_from_shareable_handle(&IP[j].p, fd, GPUMEM_HANDLE_POSIX_FD));
            close(fd);
            if (st != GPUMEM_SUCCESS)
                break;
            IP[j].live = 1;
            IP[j].from = A[i].pool;
            check_imported_pool(j);
        }
        {
            gpumem_pool_ptr_export_data_t data;
            sync_all(); /* the block's bytes are what the model says before another mapping reads them */
            OK(gpumem_pool_export_pointer(&data, A[i].ptr));
            int live = -1;
            for (int k = 0; k < MAX_ALLOCS; k++)
                if (A[k].live && A[k].imported && A[k].source == i && A[k].ipool == j)
                    live = k;
            void *q = NULL;
            if (live >= 0) {
                EXPECT(gpumem_pool_import_pointer(&q, IP[j].p, &data), S(GPUMEM_ERROR_INVALID_VALUE));
                if (!strstr(gpumem_last_error_message(), "already imported"))
                    die("a second import of live export data: %s", gpumem_last_error_message());
                break;
            }
            int k = FREE_SLOT(A);
            if (k < 0 || OK(gpumem_pool_import_pointer(&q, IP[j].p, &data)) != GPUMEM_SUCCESS)
                break;
            A[k] = (alloc_t){1, GPUMEM_KIND_STREAM_ORDERED, q, A[i].size, A[i].shadow, -1, 0, NULL, NULL, A[i].vendor_pool,
                             1, j, i};
            gpumem_pool_ptr_export_data_t again;
            expect_imported_refusal(EXPECT(gpumem_pool_export_pointer(&again, q), S(GPUMEM_ERROR_NOT_SUPPORTED)),
                                    "export data");
            check_bytes("an imported pointer", q, A[i].shadow, A[i].size);
        }
        break;
    case 3: /* what an imported pool answers */
        if ((j = LIVE_SLOT(IP)) >= 0)
            check_imported_pool(j);
        break;
    default: /* destroy one, its imports freed first */
        if ((j = LIVE_SLOT(IP)) < 0)
            break;
        free_imports_in(j);
        OK(gpumem_pool_destroy(IP[j].p));
        g_dead_pool = IP[j].p;
        IP[j].live = 0;
        break;
    }
}

/* ---- a second process ---------------------------------------------------------------- */

/* This program again (`--child SOCKET`): it imports what the parent sends over the socket (a pool
 * descriptor and a pointer's export data, or a memory handle's descriptor), asks every call of
 * the import, checks the bytes against the parent's hash, writes its own and answers with a
 * line: "ok" or what went wrong.  It keeps nothing between requests, so one serves every seed of
 * a run (started at the first use, ended with the run): a seed's outcome does not depend on
 * which seeds ran before it. */
enum { CHILD_POOL = 1, CHILD_HANDLE = 2, CHILD_QUIT = 3 };
typedef struct {
    uint32_t op;
    uint32_t seed; /* the bytes the child writes: child_byte(seed, i) */
    uint64_t size;
    uint64_t hash; /* FNV-1a of the block's bytes as the parent's model has them */
    gpumem_pool_ptr_export_data_t data;
} child_request_t;

static int g_child_sock = -1;
static pid_t g_child_pid;
static char *g_self;

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}
static unsigned char child_byte(uint32_t seed, size_t i) { return (unsigned char)(seed * 131u + i * 7u + (i >> 9)); }

static int io_all(int fd, void *buf, size_t n, int writing)
{
    char *p = buf;
    while (n) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

static void child_start(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair: %s", strerror(errno));
    char fd[16];
    snprintf(fd, sizeof fd, "%d", sv[1]);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int keep = dup(sv[1]); /* without close-on-exec */
        snprintf(fd, sizeof fd, "%d", keep);
        execl("/proc/self/exe", g_self, "--child", fd, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    g_child_sock = sv[0];
    g_child_pid = pid;
}

static void child_stop(void)
{
    if (g_child_sock < 0)
        return;
    child_request_t q;
    memset(&q, 0, sizeof q);
    q.op = CHILD_QUIT;
    io_all(g_child_sock, &q, sizeof q, 1);
    close(g_child_sock);
    g_child_sock = -1;
    int status = 0;
    if (waitpid(g_child_pid, &status, 0) == g_child_pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        die("the second process ended with status 0x%x", status);
}

/* Send `q` and the descriptor; the child's answer line ("ok", or why not). */
static void child_ask(const child_request_t *q, int32_t fd)
{
    if (g_child_sock < 0)
        child_start();
    note("second process: op %u, %" PRIu64 " bytes", q->op, q->size);
    char answer[1024];
    uint32_t n = 0;
    if (!io_all(g_child_sock, (void *)q, sizeof *q, 1) || gpumem_ipc_send_fd(g_child_sock, fd) != GPUMEM_SUCCESS ||
        !io_all(g_child_sock, &n, sizeof n, 0) || n >= sizeof answer || !io_all(g_child_sock, answer, n, 0))
        die("the second process did not answer (op %u)", q->op);
    answer[n] = '\0';
    if (strcmp(answer, "ok") != 0)
        die("the second process: %s", answer);
}

/* A block of this process's shareable pool, or a shareable memory handle, imported by the child. */
static void op_child(void)
{
    child_request_t q;
    memset(&q, 0, sizeof q);
    q.seed = (uint32_t)rnd();
    int32_t fd = -1;
    if (chance(70)) {
        int i = pick_exportable();
        if (i < 0)
            return;
        sync_all();
        fd = export_pool(A[i].pool);
        OK(gpumem_pool_export_pointer(&q.data, A[i].ptr));
        q.op = CHILD_POOL;
        q.size = A[i].size;
        q.hash = fnv1a(A[i].shadow, A[i].size);
        child_ask(&q, fd);
        for (size_t k = 0; k < A[i].size; k++) /* the child's bytes are the block's now */
            A[i].shadow[k] = child_byte(q.seed, k);
    } else {
        int i = LIVE_SLOT(MH);
        if (i < 0 || MH[i].imported || !MH[i].shareable)
            return;
        OK(gpumem_mem_export_to_shareable_handle(&fd, MH[i].h, GPUMEM_HANDLE_POSIX_FD));
        q.op = CHILD_HANDLE;
        q.size = MH[i].size;
        child_ask(&q, fd);
    }
    close(fd);
}

/* The child's checks: the first failure is the answer. */
#define CHILD_FAIL(...)                                                                                            \
    do {                                                                                                           \
        snprintf(why, why_size, __VA_ARGS__);                                                                      \
        goto done;                                                                                                 \
    } while (0)
#define CHILD_EXPECT(call, want)                                                                                   \
    do {                                                                                                           \
        gpumem_status_t st_ = (call);                                                                              \
        if (st_ != (want))                                                                                         \
            CHILD_FAIL("%s returned %s, not %s: %s", #call, gpumem_status_string(st_), gpumem_status_string(want),  \
                       gpumem_last_error_message());                                                               \
    } while (0)
#define CHILD_REFUSED(call, words)                                                                                 \
    do {                                                                                                           \
        CHILD_EXPECT(call, GPUMEM_ERROR_NOT_SUPPORTED);                                                            \
        const char *msg_ = gpumem_last_error_message();                                                            \
        if (!strstr(msg_, "imported") || !strstr(msg_, (words)) || strstr(msg_, "gpumem_ipc_recv_fd"))             \
            CHILD_FAIL("%s: the refusal does not say the object is imported and what to do: %s", #call, msg_);     \
    } while (0)

static void child_pool(const child_request_t *q, int32_t fd, char *why, size_t why_size)
{
    gpumem_pool_t pool = NULL;
    void *p = NULL;
    unsigned char *bytes = NULL;
    gpumem_stats_t before = GPUMEM_STATS_INIT, after = GPUMEM_STATS_INIT;
    const int so = GPUMEM_KIND_STREAM_ORDERED;
    CHILD_EXPECT(gpumem_pool_import_from_shareable_handle(&pool, fd, GPUMEM_HANDLE_POSIX_FD), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_get_stats(&before), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_pool_import_pointer(&p, pool, &q->data), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_get_stats(&after), GPUMEM_SUCCESS);
    if (after.current_bytes[so] != before.current_bytes[so] || after.alloc_count[so] != before.alloc_count[so] + 1)
        CHILD_FAIL("an imported pointer counted %" PRIu64 " bytes and %" PRIu64 " allocations, not 0 and 1",
                   after.current_bytes[so] - before.current_bytes[so], after.alloc_count[so] - before.alloc_count[so]);
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHILD_EXPECT(gpumem_pointer_get_info(p, &info), GPUMEM_SUCCESS);
    if (info.kind != so || info.base != p || info.alloc_size < q->size || info.pool != pool)
        CHILD_FAIL("pointer info of the import: kind %d, base %p (%p), size %zu (at least %" PRIu64 ")", (int)info.kind,
                   info.base, p, info.alloc_size, q->size);
    bytes = malloc(q->size);
    if (!bytes)
        CHILD_FAIL("out of host memory");
    CHILD_EXPECT(gpumem_memcpy(bytes, p, q->size), GPUMEM_SUCCESS);
    if (fnv1a(bytes, q->size) != q->hash)
        CHILD_FAIL("the imported block's %" PRIu64 " bytes are not the exporter's", q->size);
    uint64_t used = 0, reserved = 0, zero = 0;
    int32_t flag = 1, flags = -1;
    CHILD_EXPECT(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved), GPUMEM_SUCCESS);
    if (used != info.alloc_size || reserved != info.alloc_size)
        CHILD_FAIL("the imported pool says used %" PRIu64 ", reserved %" PRIu64 "; its pointer maps %zu", used, reserved,
                   info.alloc_size);
    CHILD_EXPECT(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &zero), GPUMEM_SUCCESS);
    CHILD_REFUSED(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &flag), "exporting process");
    CHILD_REFUSED(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &zero), "exporting process");
    CHILD_EXPECT(gpumem_pool_trim_to(pool, 0), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_pool_get_access(&flags, pool, 0), GPUMEM_SUCCESS);
    int32_t again = -1;
    CHILD_REFUSED(gpumem_pool_export_to_shareable_handle(&again, pool, GPUMEM_HANDLE_POSIX_FD), "gpumem_ipc_send_fd");
    gpumem_pool_ptr_export_data_t data;
    CHILD_REFUSED(gpumem_pool_export_pointer(&data, p), "export data");
    for (size_t i = 0; i < q->size; i++)
        bytes[i] = child_byte(q->seed, i);
    CHILD_EXPECT(gpumem_memcpy(p, bytes, q->size), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_device_synchronize(), GPUMEM_SUCCESS);
done:
    if (p && gpumem_free(p) != GPUMEM_SUCCESS && !*why)
        snprintf(why, why_size, "gpumem_free of the import: %s", gpumem_last_error_message());
    if (pool && gpumem_pool_destroy(pool) != GPUMEM_SUCCESS && !*why)
        snprintf(why, why_size, "gpumem_pool_destroy of the imported pool: %s", gpumem_last_error_message());
    free(bytes);
}

static void child_handle(const child_request_t *q, int32_t fd, char *why, size_t why_size)
{
    gpumem_mem_handle_t h = 0;
    void *va = NULL;
    gpumem_stats_t before = GPUMEM_STATS_INIT, after = GPUMEM_STATS_INIT;
    const int vk = GPUMEM_KIND_VIRTUAL;
    CHILD_EXPECT(gpumem_get_stats(&before), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_get_stats(&after), GPUMEM_SUCCESS);
    /* An imported handle holds the memory: it counts its size. */
    if (after.current_bytes[vk] != before.current_bytes[vk] + q->size)
        CHILD_FAIL("an imported memory handle of %" PRIu64 " bytes counted %" PRIu64, q->size,
                   after.current_bytes[vk] - before.current_bytes[vk]);
    int32_t again = -1;
    CHILD_REFUSED(gpumem_mem_export_to_shareable_handle(&again, h, GPUMEM_HANDLE_POSIX_FD), "gpumem_ipc_send_fd");
    CHILD_EXPECT(gpumem_mem_address_reserve(&va, q->size, 0, NULL), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_mem_map(va, q->size, 0, h), GPUMEM_SUCCESS);
    gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    CHILD_EXPECT(gpumem_mem_set_access(va, q->size, &rw, 1), GPUMEM_SUCCESS);
    char byte = 0;
    CHILD_EXPECT(gpumem_memcpy(&byte, va, 1), GPUMEM_SUCCESS);
    CHILD_EXPECT(gpumem_mem_unmap(va, q->size), GPUMEM_SUCCESS);
done:
    if (va && gpumem_mem_address_free(va, q->size) != GPUMEM_SUCCESS && !*why)
        snprintf(why, why_size, "gpumem_mem_address_free: %s", gpumem_last_error_message());
    if (h && gpumem_mem_release(h) != GPUMEM_SUCCESS && !*why)
        snprintf(why, why_size, "gpumem_mem_release of the import: %s", gpumem_last_error_message());
}

static int child_main(int sock)
{
    alarm(600); /* a parent that hangs does not keep its child for ever */
    if (gpumem_init(GPUMEM_BACKEND_AUTO) != GPUMEM_SUCCESS) {
        fprintf(stderr, "fuzz_api --child: gpumem_init: %s\n", gpumem_last_error_message());
        return 1;
    }
    for (;;) {
        child_request_t q;
        if (!io_all(sock, &q, sizeof q, 0) || q.op == CHILD_QUIT)
            break;
        char why[900] = "";
        int32_t fd = -1;
        if (gpumem_ipc_recv_fd(sock, &fd) != GPUMEM_SUCCESS)
            snprintf(why, sizeof why, "gpumem_ipc_recv_fd: %s", gpumem_last_error_message());
        else if (q.op == CHILD_POOL)
            child_pool(&q, fd, why, sizeof why);
        else if (q.op == CHILD_HANDLE)
            child_handle(&q, fd, why, sizeof why);
        else
            snprintf(why, sizeof why, "unknown request %u", q.op);
        if (fd >= 0)
            close(fd);
        const char *answer = *why ? why : "ok";
        uint32_t n = (uint32_t)strlen(answer);
        if (!io_all(sock, &n, sizeof n, 1) || !io_all(sock, (void *)answer, n, 1))
            break;
    }
    gpumem_finalize();
    return 0;
}

/* ---- sharing within the process ------------------------------------------------ */

static void op_ipc(void)
{
    int i = LIVE_SLOT(MH);
    if (i >= 0 && MH[i].imported) {
        /* Only the process that created the memory exports it. */
        int32_t fd = -1;
        expect_imported_refusal(EXPECT(gpumem_mem_export_to_shareable_handle(&fd, MH[i].h, GPUMEM_HANDLE_POSIX_FD),
                                       S(GPUMEM_ERROR_NOT_SUPPORTED)),
                                "gpumem_ipc_send_fd");
    } else if (i >= 0) {
        int32_t fd = -1;
        unsigned want = g_info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD
                            ? S(GPUMEM_SUCCESS) | S(GPUMEM_ERROR_INVALID_VALUE) /* made without handle_types */
                            : S(GPUMEM_ERROR_NOT_SUPPORTED) | S(GPUMEM_ERROR_INVALID_VALUE);
        if (EXPECT(gpumem_mem_export_to_shareable_handle(&fd, MH[i].h, GPUMEM_HANDLE_POSIX_FD), want) ==
            GPUMEM_SUCCESS) {
            int j = FREE_SLOT(MH);
            gpumem_mem_handle_t h = 0;
            if (j >= 0 && OK(gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD)) ==
                              GPUMEM_SUCCESS)
                MH[j] = (handle_t){1, h, MH[i].size, 0, 1, 1};
            close(fd);
        }
    }
    if (g_info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) {
        /* A descriptor gpumem never exported is not a memory handle. */
        int fd = memfd_create("fuzz-foreign", 0);
        if (fd >= 0 && ftruncate(fd, (off_t)g_gran) == 0) {
            gpumem_mem_handle_t h = 0;
            /* (Without native VMM there is no memory handle to import: NOT_SUPPORTED first.) */
            EXPECT(gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD),
                   vmm_native() ? S(GPUMEM_ERROR_IPC) | S(GPUMEM_ERROR_INVALID_VALUE) : S(GPUMEM_ERROR_NOT_SUPPORTED));
        }
        if (fd >= 0)
            close(fd);
    }
    int32_t fd = -1;
    EXPECT(gpumem_mem_export_to_shareable_handle(&fd, 0, GPUMEM_HANDLE_POSIX_FD),
           S(GPUMEM_ERROR_INVALID_HANDLE) | S(GPUMEM_ERROR_NOT_SUPPORTED));
}

/* Registering memory gpumem already owns is refused (stream-ordered blocks and
 * VMM ranges were once accepted). */
static void op_register_owned(void)
{
    int i = LIVE_SLOT(A);
    if (i >= 0 && level_ok(g_info.host_register))
        EXPECT(gpumem_host_register(A[i].ptr, A[i].size, 0), S(GPUMEM_ERROR_INVALID_VALUE));
    int r = LIVE_SLOT(RS);
    if (r >= 0 && level_ok(g_info.host_register))
        EXPECT(gpumem_host_register(RS[r].base, RS[r].size, 0), S(GPUMEM_ERROR_INVALID_VALUE));
}

/* ---- init and finalize -------------------------------------------------------- */

static void start(void)
{
    OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    g_runtime++;
    OK(gpumem_get_backend(&g_backend));
    OK(gpumem_device_count(&g_devices));
    g_info = (gpumem_device_info_t)GPUMEM_DEVICE_INFO_INIT;
    OK(gpumem_device_get_info(0, &g_info));
    g_gran = (size_t)g_info.vmm_granularity;
    if (!g_gran)
        g_gran = 2u << 20;
    memset(g_trace_bytes, 0, sizeof g_trace_bytes);
    OK(gpumem_set_trace_callback(on_trace, NULL));
    g_pending = 0;
    g_last_stream = NULL;
}

/* Release every model object through the API (checking each status). */
static void release_all(void)
{
    sync_all();
    for (int i = 0; i < MAX_IPOOLS; i++)
        if (IP[i].live) {
            free_imports_in(i);
            OK(gpumem_pool_destroy(IP[i].p));
            IP[i].live = 0;
        }
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (A[i].live) {
            if (A[i].kind == GPUMEM_KIND_HOST_REGISTERED)
                OK(gpumem_host_unregister(A[i].ptr));
            else
                OK(gpumem_free(A[i].ptr));
            drop_alloc(&A[i]);
        }
    for (int i = 0; i < MAX_RES; i++)
        if (RS[i].live) {
            if (RS[i].mapped)
                OK(gpumem_mem_unmap(RS[i].base, RS[i].mapped));
            OK(gpumem_mem_address_free(RS[i].base, RS[i].size));
            free(RS[i].shadow);
            RS[i] = (res_t){0};
        }
    for (int i = 0; i < MAX_HANDLES; i++)
        if (MH[i].live) {
            OK(gpumem_mem_release(MH[i].h));
            MH[i].live = 0;
        }
    for (int i = 0; i < MAX_BUFS; i++)
        if (BF[i].live) {
            OK(gpumem_buffer_destroy(BF[i].b));
            free(BF[i].shadow);
            BF[i].live = 0;
        }
    for (int i = 0; i < MAX_POOLS; i++)
        if (PL[i].live) {
            OK(gpumem_pool_destroy(PL[i].p));
            PL[i].live = 0;
        }
    for (int i = 0; i < MAX_EVENTS; i++)
        if (EV[i].live) {
            OK(gpumem_event_destroy(EV[i].e));
            EV[i].live = 0;
        }
    for (int i = 0; i < MAX_STREAMS; i++)
        if (ST[i].live) {
            OK(gpumem_stream_destroy(ST[i].s));
            ST[i].live = 0;
        }
}

/* Forget the model without calling gpumem (after gpumem_finalize released everything). */
static void forget_all(void)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (A[i].live)
            drop_alloc(&A[i]);
    for (int i = 0; i < MAX_RES; i++) {
        free(RS[i].shadow);
        RS[i] = (res_t){0};
    }
    for (int i = 0; i < MAX_BUFS; i++)
        if (BF[i].live)
            free(BF[i].shadow);
    memset(MH, 0, sizeof MH);
    memset(BF, 0, sizeof BF);
    memset(PL, 0, sizeof PL);
    memset(IP, 0, sizeof IP);
    memset(EV, 0, sizeof EV);
    memset(ST, 0, sizeof ST);
}

static void op_finalize(void)
{
    gpumem_stream_t old_stream = NULL;
    gpumem_pool_t old_pool = NULL;
    int s = LIVE_SLOT(ST), p = LIVE_SLOT(PL);
    if (s >= 0)
        old_stream = ST[s].s;
    if (p >= 0)
        old_pool = PL[p].p;
    if (chance(50)) {
        release_all();
        check_books();
    }
    sync_all();
    OK(gpumem_finalize());
    g_finalizing = 1;
    forget_all();
    g_finalizing = 0;
    start();
    /* Everything from before is dead, never a crash. */
    if (old_stream)
        EXPECT(gpumem_stream_synchronize(old_stream), S(GPUMEM_ERROR_INVALID_HANDLE));
    if (old_pool)
        EXPECT(gpumem_pool_destroy(old_pool), S(GPUMEM_ERROR_INVALID_HANDLE));
    g_dead_stream = NULL;
    g_dead_event = NULL;
    g_dead_pool = NULL;
    g_dead_buffer = NULL;
}

/* ---- the driver --------------------------------------------------------------------- */

typedef struct {
    void (*fn)(void);
    int weight;
} op_t;

static const op_t k_ops[] = {
    {op_alloc, 16},   {op_free, 12},    {op_copy, 14},   {op_fill, 8},     {op_verify, 6},
    {op_copy_batch, 4},
    {op_pointer_info, 5}, {op_dmabuf, 2}, {op_dead_pointer, 3}, {op_stream, 4}, {op_event, 5},   {op_pool, 6},
    {op_vmm, 8},      {op_buffer, 4},   {op_managed, 6}, {op_ipc, 2},      {op_register_owned, 2},
    {op_import, 4},   {op_child, 1},    {op_finalize, 1},
};

static void run_seed(uint64_t seed, long steps)
{
    g_seed = seed;
    g_rng = seed * 0x9E3779B97F4A7C15ull + 1;
    g_log_next = 0;
    memset(g_grave, 0, sizeof g_grave);
    memset(g_grave_kind, 0, sizeof g_grave_kind);
    memset(g_grave_size, 0, sizeof g_grave_size);
    memset(g_grave_vendor_pool, 0, sizeof g_grave_vendor_pool);
    memset(g_grave_runtime, 0, sizeof g_grave_runtime);
    memset(g_grave_finalized, 0, sizeof g_grave_finalized);
    int total = 0;
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++)
        total += k_ops[k].weight;
    g_step = -1;
    start();
    for (g_step = 0; g_step < steps; g_step++) {
        int pick = (int)below((uint64_t)total);
        size_t k = 0;
        while (pick >= k_ops[k].weight)
            pick -= k_ops[k++].weight;
        k_ops[k].fn();
        check_books();
    }
    release_all();
    check_books();
    OK(gpumem_finalize());
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]));
    signal(SIGPIPE, SIG_IGN); /* a second process that died is reported, not a signal */
    uint64_t first = 1, last = 20;
    long steps = 400;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%" SCNu64 "-%" SCNu64, &first, &last) == 1)
                last = first;
        } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
            steps = atol(argv[++i]);
        } else if (strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else {
            fprintf(stderr, "usage: %s [--seeds FIRST-LAST] [--steps N] [--quiet]\n", argv[0]);
            return 2;
        }
    }
    if (getenv("GPUMEM_FUZZ_SEEDS"))
        sscanf(getenv("GPUMEM_FUZZ_SEEDS"), "%" SCNu64 "-%" SCNu64, &first, &last);
    if (getenv("GPUMEM_FUZZ_STEPS"))
        steps = atol(getenv("GPUMEM_FUZZ_STEPS"));
    for (uint64_t seed = first; seed <= last; seed++) {
        run_seed(seed, steps);
        if (!quiet)
            printf("seed %" PRIu64 ": %ld steps, %u calls checked: clean\n", seed, steps, g_log_next);
    }
    child_stop();
    printf("fuzz_api: seeds %" PRIu64 "-%" PRIu64 ", %ld steps each, backend %s: clean\n", first, last, steps,
           getenv("GPUMEM_BACKEND") ? getenv("GPUMEM_BACKEND") : "auto");
    return 0;
}
