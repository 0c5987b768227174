/*
 * Helpers of the tests of "Seeing and debugging memory" (test_trace_file.c,
 * test_snapshot.c, test_limit.c): restart gpumem with some variables set,
 * a scratch directory, and the JSON checker (tests/debug_json_check.py).
 * Include after harness.h.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_TESTS_DEBUG_UTIL_H
#define GPUMEM_TESTS_DEBUG_UTIL_H

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GPUMEM_TEST_SOURCE_DIR
#error "GPUMEM_TEST_SOURCE_DIR must name tests/ (tests/meson.build defines it)"
#endif

/* The variables these tests set; every restart sets or clears each of them. */
static const char *const dbg_vars_[] = {"GPUMEM_TRACE", "GPUMEM_TRACE_MAX", "GPUMEM_BACKTRACE", "GPUMEM_LIMIT"};

/* Finalize, set the variables named in `assignments` (NAME=VALUE, NULL-terminated)
 * and clear the others of dbg_vars_, then initialise again (AUTO: GPUMEM_BACKEND decides). */
static TST_UNUSED gpumem_status_t dbg_restart(const char *const *assignments)
{
    gpumem_status_t st = gpumem_finalize();
    if (st != GPUMEM_SUCCESS)
        return st;
    for (size_t i = 0; i < sizeof dbg_vars_ / sizeof dbg_vars_[0]; ++i)
        unsetenv(dbg_vars_[i]);
    for (const char *const *a = assignments; a && *a; ++a) {
        char name[64];
        const char *eq = strchr(*a, '=');
        size_t n = eq ? (size_t)(eq - *a) : 0;
        if (!eq || n >= sizeof name)
            return GPUMEM_ERROR_INVALID_VALUE;
        memcpy(name, *a, n);
        name[n] = '\0';
        setenv(name, eq + 1, 1);
    }
    return gpumem_init(GPUMEM_BACKEND_AUTO);
}

/* A fresh scratch directory (mkdtemp) in dir[] of PATH_MAX bytes; removed by dbg_cleanup. */
static TST_UNUSED int dbg_scratch(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/gpumem-debug-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) != NULL;
}

static TST_UNUSED void dbg_cleanup(const char *dir, const char *const *files)
{
    char path[4096];
    for (const char *const *f = files; f && *f; ++f) {
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
}

static TST_UNUSED int dbg_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The memories a pool can hold besides device memory, and their names as traces and snapshots write them. */
static TST_UNUSED const int32_t dbg_pool_memories[] = {GPUMEM_POOL_MEMORY_PINNED, GPUMEM_POOL_MEMORY_MANAGED};

static TST_UNUSED const char *dbg_memory_name(int32_t memory)
{
    switch (memory) {
    case GPUMEM_POOL_MEMORY_DEVICE: return "device";
    case GPUMEM_POOL_MEMORY_PINNED: return "pinned";
    case GPUMEM_POOL_MEMORY_MANAGED: return "managed";
    default: return "unknown";
    }
}

/* Whether device 0 has pools of `memory` (pinned_pools / managed_pools of its info; device pools: memory_pools). */
static TST_UNUSED int dbg_has_pools_of(int32_t memory)
{
    gpumem_device_info_t info = tst_info(0);
    const int32_t level = memory == GPUMEM_POOL_MEMORY_PINNED    ? info.pinned_pools
                          : memory == GPUMEM_POOL_MEMORY_MANAGED ? info.managed_pools
                                                                 : info.memory_pools;
    return level != GPUMEM_SUPPORT_NONE;
}

/* A block from a pool of pinned or managed memory: from the process's default pool of that
 * memory (made 0), or from a pool gpumem_pool_create made for it (made 1: the caller destroys it). */
typedef struct dbg_pool_block {
    int32_t memory;
    gpumem_pool_t pool;
    int made;
    void *block;
} dbg_pool_block_t;

/* For each memory of dbg_pool_memories that has pools here: a block from its default pool, then
 * one from a new pool of `implementation`; block i is `bytes` + i bytes, on `stream`.  The number
 * of blocks (0: no such pools here), or -1 after a failure (reported). */
static TST_UNUSED int dbg_pool_blocks_make(dbg_pool_block_t out[4], int32_t implementation, size_t bytes,
                                           gpumem_stream_t stream)
{
    int n = 0;
    for (size_t m = 0; m < TST_COUNT(dbg_pool_memories); ++m) {
        const int32_t memory = dbg_pool_memories[m];
        if (!dbg_has_pools_of(memory)) {
            NOTE("no pools of %s memory here", dbg_memory_name(memory));
            continue;
        }
        gpumem_pool_t pools[2] = {NULL, NULL};
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.memory = memory;
        props.implementation = implementation;
        if (gpumem_get_default_pool_for(&pools[0], memory, memory == GPUMEM_POOL_MEMORY_PINNED ? -1 : 0) ||
            gpumem_pool_create(&pools[1], &props)) {
            tst_fail(__FILE__, __LINE__, "no %s pool: %s", dbg_memory_name(memory), gpumem_last_error_message());
            return -1;
        }
        for (int k = 0; k < 2; ++k, ++n) {
            out[n].memory = memory;
            out[n].pool = pools[k];
            out[n].made = k;
            if (gpumem_malloc_from_pool_async(&out[n].block, bytes + (size_t)n, pools[k], stream)) {
                tst_fail(__FILE__, __LINE__, "%zu bytes from the %s pool %p: %s", bytes + (size_t)n,
                         dbg_memory_name(memory), (void *)pools[k], gpumem_last_error_message());
                return -1;
            }
        }
    }
    return n;
}

/* Appends " --pool-memory POOL=M --memory BLOCK=M" for each block to `args` (of `cap` bytes, `len` used). */
static TST_UNUSED int dbg_pool_memory_args(char *args, size_t cap, int len, const dbg_pool_block_t *blocks, int n)
{
    for (int i = 0; i < n; ++i)
        len += snprintf(args + len, cap - (size_t)len, " --pool-memory %p=%s --memory %p=%s", (void *)blocks[i].pool,
                        dbg_memory_name(blocks[i].memory), blocks[i].block, dbg_memory_name(blocks[i].memory));
    return len;
}

/* Run tests/debug_json_check.py with `args`: 0 when the file holds, 1 when it
 * does not (the reasons on stderr), 77 when python3 or the script cannot be
 * found ($GPUMEM_TEST_SOURCE_DIR overrides where the script is). */
static TST_UNUSED int dbg_check_json(const char *args)
{
    char script[4096], cmd[8192];
    /* A build run elsewhere (a GPU machine's copy) may not have the source tree where it was built. */
    const char *dir = getenv("GPUMEM_TEST_SOURCE_DIR");
    snprintf(script, sizeof script, "%s/debug_json_check.py", dir && *dir ? dir : GPUMEM_TEST_SOURCE_DIR);
    if (access(script, R_OK) != 0)
        return 77;
    snprintf(cmd, sizeof cmd, "python3 '%s' %s", script, args);
    fflush(stdout);
    fflush(stderr);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) == 127)
        return 77;
    return WEXITSTATUS(rc) == 0 ? 0 : 1;
}

#define CHECK_JSON(...)                                                                                        \
    do {                                                                                                       \
        char dbg_args_[6144];                                                                                  \
        snprintf(dbg_args_, sizeof dbg_args_, __VA_ARGS__);                                                    \
        int dbg_rc_ = dbg_check_json(dbg_args_);                                                               \
        if (dbg_rc_ == 77)                                                                                     \
            NOTE("python3 or tests/debug_json_check.py not found: %s not checked", dbg_args_);                                       \
        else if (dbg_rc_ != 0)                                                                                 \
            tst_fail(__FILE__, __LINE__, "debug_json_check.py %s", dbg_args_);                                 \
    } while (0)

#endif
