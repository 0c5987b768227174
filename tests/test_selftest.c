/* GPUMEM_SELFTEST: every feature the runtime claims is tried at init.
 *
 * Without a broken feature every test passes and no support level is BROKEN.  With one made to
 * fail as a container would (FAKE_CUDA_BREAK / FAKE_HIP_BREAK on the fakes), device info says
 * GPUMEM_SUPPORT_BROKEN, the feature falls back as if it were absent, and under
 * GPUMEM_FALLBACK=deny (or where there is no fallback) it is refused with the test's reason.
 * With a directory the results are cached per device (its UUID in the file's name and header) and
 * read back instead of run again.  Peer access is tested towards every other device (suite
 * configurations with two fake devices); a device alone does not claim it.
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* The break switch of the fake in use ("" where none). */
static const char *break_list(void)
{
    const char *v = getenv(tst_backend() == GPUMEM_BACKEND_HIP ? "FAKE_HIP_BREAK" : "FAKE_CUDA_BREAK");
    return tst_backend() == GPUMEM_BACKEND_HOST || !v ? "" : v;
}

static int broken(const char *feature) { return strstr(break_list(), feature) != NULL; }

static int deny(void)
{
    const char *v = getenv("GPUMEM_FALLBACK");
    return v && strcmp(v, "deny") == 0;
}

/* Re-initialise with GPUMEM_SELFTEST=value. */
static void init_with(const char *value)
{
    gpumem_finalize();
    setenv("GPUMEM_SELFTEST", value, 1);
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS)
        tst_fail(__FILE__, __LINE__, "gpumem_init with GPUMEM_SELFTEST=%s: %s: %s", value, gpumem_status_string(st),
                 gpumem_last_error_message());
}

static void restore(void)
{
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    gpumem_init(GPUMEM_BACKEND_AUTO);
}

static int any_broken(const gpumem_device_info_t *i)
{
    const int32_t levels[] = {i->managed_memory, i->memory_pools, i->pinned_pools, i->managed_pools,
                              i->virtual_memory, i->host_register, i->batch_memops, i->rdma_memory,
                              i->dmabuf,         i->fabric_handles};
    for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++)
        if (levels[k] == GPUMEM_SUPPORT_BROKEN)
            return 1;
    return 0;
}

/* The default (0) changes nothing: no level is ever BROKEN. */
static void test_off_by_default(void)
{
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t n = 0;
    REQUIRE_OK(gpumem_device_count(&n));
    for (int32_t d = 0; d < n; d++) {
        gpumem_device_info_t i = tst_info(d);
        CHECK(!any_broken(&i));
    }
}

/* Without a break switch every claimed feature passes its test: nothing is BROKEN, and the levels
 * are those of an init without the self-test. */
static void test_all_pass(void)
{
    if (*break_list())
        SKIP("a feature is broken on purpose here");
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t n = 0;
    REQUIRE_OK(gpumem_device_count(&n));
    gpumem_device_info_t before[8];
    for (int32_t d = 0; d < n && d < 8; d++)
        before[d] = tst_info(d);
    init_with("1");
    for (int32_t d = 0; d < n && d < 8; d++) {
        gpumem_device_info_t i = tst_info(d);
        CHECKF(!any_broken(&i), "device %d reports a BROKEN feature with nothing broken", (int)d);
        CHECK(i.managed_memory == before[d].managed_memory);
        CHECK(i.virtual_memory == before[d].virtual_memory);
        CHECK(i.host_register == before[d].host_register);
        CHECK(i.batch_memops == before[d].batch_memops);
        CHECK(i.dmabuf == before[d].dmabuf);
        CHECK(i.rdma_memory == before[d].rdma_memory);
        CHECK(i.ipc_handle_types == before[d].ipc_handle_types);
        CHECK(i.pool_ipc_handle_types == before[d].pool_ipc_handle_types);
    }
    restore();
}

/* VMM export refused (NOT_PERMITTED, as in a container): sharing is gone, RDMA memory (which needs
 * it) is BROKEN, and a shareable VMM handle or pool is refused with the test's reason. */
static void test_vmm_export_broken(void)
{
    if (!broken("vmm_export"))
        SKIP("vmm_export is not broken here (FAKE_*_BREAK)");
    init_with("1");
    gpumem_device_info_t i = tst_info(0);
    if (i.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("no native VMM here");
    CHECK(!(i.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD));
    CHECK(!(i.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD));
    CHECK(i.rdma_memory == GPUMEM_SUPPORT_BROKEN);
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_mem_handle_t h = 0;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, i.vmm_granularity, &props));
    CHECKF(tst_contains(gpumem_last_error_message(), "self-test"), "no reason: %s", gpumem_last_error_message());
    /* A shareable pool: refused as where sharing is absent, with the reason. */
    gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
    pp.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &pp));
    CHECKF(tst_contains(gpumem_last_error_message(), "self-test"), "no reason: %s", gpumem_last_error_message());
    /* A VMM handle that is not shareable still works. */
    props.handle_types = GPUMEM_HANDLE_NONE;
    CHECK_OK(gpumem_mem_create(&h, i.vmm_granularity, &props));
    if (h)
        CHECK_OK(gpumem_mem_release(h));
    restore();
}

/* Managed prefetch refused by the platform: managed memory is BROKEN; it is emulated (allow) or
 * refused with the test's reason (deny). */
static void test_managed_prefetch_broken(void)
{
    if (!broken("managed_prefetch"))
        SKIP("managed_prefetch is not broken here (FAKE_*_BREAK)");
    init_with("1");
    gpumem_device_info_t i = tst_info(0);
    CHECK(i.managed_memory == GPUMEM_SUPPORT_BROKEN);
    CHECK(!i.managed_migrates);
    void *p = NULL;
    if (deny()) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_managed_alloc(&p, 4096, GPUMEM_ATTACH_GLOBAL));
        CHECKF(tst_contains(gpumem_last_error_message(), "self-test"), "no reason: %s", gpumem_last_error_message());
        CHECKF(tst_contains(gpumem_last_error_message(), "prefetch"), "no reason: %s", gpumem_last_error_message());
    } else {
        /* The emulation (mapped pinned memory) serves it, and prefetching it is accepted. */
        CHECK_OK(gpumem_managed_alloc(&p, 4096, GPUMEM_ATTACH_GLOBAL));
        if (p) {
            memset(p, 1, 4096);
            CHECK_OK(gpumem_prefetch_async(p, 4096, 0, NULL));
            CHECK_OK(gpumem_device_synchronize());
            CHECK_OK(gpumem_free(p));
        }
    }
    restore();
}

/* dma-buf export refused: BROKEN, and an export says the test's reason. */
static void test_dmabuf_broken(void)
{
    if (!broken("dmabuf"))
        SKIP("dmabuf is not broken here (FAKE_*_BREAK)");
    init_with("1");
    gpumem_device_info_t i = tst_info(0);
    CHECK(i.dmabuf == GPUMEM_SUPPORT_BROKEN);
    void *p = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    REQUIRE_OK(gpumem_malloc(&p, 4 * page));
    char *aligned = (char *)(((uintptr_t)p + page - 1) / page * page);
    int32_t fd = -7;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_export_dmabuf(&fd, aligned, page, 0));
    CHECKF(tst_contains(gpumem_last_error_message(), "self-test"), "no reason: %s", gpumem_last_error_message());
    CHECK(fd == -7);
    CHECK_OK(gpumem_free(p));
    restore();
}

/* The cache's file of device 0 in dir (the first results file found), into path. */
static int cache_file(const char *dir, char *path, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "gpumem-selftest-", 16) == 0 && strstr(e->d_name, "-0-") && !strstr(e->d_name, ".tmp")) {
            snprintf(path, n, "%s/%s", dir, e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* With a directory: the results are written (each device's total under 50 ms), and a later init
 * reads them instead of testing again.  The file is edited in between to say that host_register
 * (or managed memory) failed: the next init can only know that from the file. */
static void test_cache(void)
{
    if (*break_list())
        SKIP("the cache is tested where nothing is broken");
    char dir[] = "/tmp/gpumem-test-selftest-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    init_with(dir);
    char path[4096];
    REQUIRE(cache_file(dir, path, sizeof path));
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL);
    char text[16384];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    unsigned long long total_ns = 0;
    const char *t = strstr(text, "total_ns ");
    REQUIRE(t != NULL);
    CHECK(sscanf(t, "total_ns %llu", &total_ns) == 1);
    /* The budget of docs/debugging.md, "Capabilities that were tested": 50 ms a device on a GPU
     * (an H200 took 7.7-9.8 ms, its context started before the clock).  On the host backend and
     * the fakes the CPU does the device's work and forks the sharing test's child, which on 2
     * loaded cores took up to 82 ms: there the bound only catches a test that went astray. */
    const char *lib = getenv(tst_backend() == GPUMEM_BACKEND_HIP ? "GPUMEM_HIP_LIBRARY" : "GPUMEM_CUDA_LIBRARY");
    const int on_a_gpu = tst_backend() != GPUMEM_BACKEND_HOST && !(lib && strstr(lib, "fake"));
    const unsigned long long budget_ms = on_a_gpu ? 50 : 1000;
    CHECKF(total_ns < budget_ms * 1000 * 1000, "the self-test of device 0 took %llu ns (over %llu ms)", total_ns,
           budget_ms);
    NOTE("self-test of device 0: %.3f ms", total_ns / 1e6);
    CHECK(tst_contains(text, "vmm "));
    CHECK(tst_contains(text, "dmabuf "));
    /* Rewrite a passed feature as failed, with a reason only the file knows. */
    const char *feature = strstr(text, "\nhost_register 1 passed ") ? "host_register" : NULL;
    if (!feature && strstr(text, "\nmanaged 1 passed "))
        feature = "managed";
    gpumem_finalize();
    if (!feature) {
        remove_dir(dir);
        restore();
        SKIP("neither host registration nor managed memory is claimed here");
    }
    char line[64];
    snprintf(line, sizeof line, "\n%s 1 passed ", feature);
    char *at = strstr(text, line);
    char *eol = strchr(at + 1, '\n');
    char edited[16384];
    snprintf(edited, sizeof edited, "%.*s\n%s 1 failed 1 written by the test into the cache%s", (int)(at - text),
             text, feature, eol ? eol : "\n");
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(edited, f);
    fclose(f);
    init_with(dir);
    gpumem_device_info_t i = tst_info(0);
    if (strcmp(feature, "host_register") == 0) {
        CHECK(i.host_register == GPUMEM_SUPPORT_BROKEN);
        /* Its fallback: registration is recorded only (allow), or refused with the reason (deny). */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void *h = aligned_alloc(page, page);
        REQUIRE(h != NULL);
        gpumem_status_t st = gpumem_host_register(h, page, 0);
        if (deny()) {
            CHECK(st == GPUMEM_ERROR_NOT_SUPPORTED);
            /* GPUMEM_DISABLE, where it names the feature, is the reason given first. */
            const char *disable = getenv("GPUMEM_DISABLE");
            const char *reason = disable && strstr(disable, "host_register") ? "GPUMEM_DISABLE"
                                                                             : "written by the test into the cache";
            CHECKF(tst_contains(gpumem_last_error_message(), reason), "no reason: %s", gpumem_last_error_message());
        } else {
            CHECK(st == GPUMEM_SUCCESS);
            if (st == GPUMEM_SUCCESS)
                CHECK_OK(gpumem_host_unregister(h));
        }
        free(h);
    } else {
        CHECK(i.managed_memory == GPUMEM_SUPPORT_BROKEN);
    }
    remove_dir(dir);
    restore();
}

/* The whole text of a small file into buf; 0 where it cannot be read. */
static int read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[len] = '\0';
    return 1;
}

/* The cache names the device by its UUID (32 hex digits on the fakes, from cuDeviceGetUuid /
 * hipDeviceGetUuid), in the file's name and its header; a file whose header names another UUID
 * is not read: the next init tests again and writes the file anew. */
static void test_cache_uuid(void)
{
    if (*break_list())
        SKIP("the cache is tested where nothing is broken");
    char dir[] = "/tmp/gpumem-test-selftest-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    init_with(dir);
    char path[4096];
    REQUIRE(cache_file(dir, path, sizeof path));
    static char text[16384];
    REQUIRE(read_text(path, text, sizeof text));
    char uuid[64] = "";
    REQUIRE(sscanf(text, "gpumem-selftest 2 %63s", uuid) == 1);
    if (tst_backend() != GPUMEM_BACKEND_HOST)
        CHECKF(strlen(uuid) == 32 && strspn(uuid, "0123456789abcdef") == 32, "device 0's UUID is '%s'", uuid);
    if (strcmp(uuid, "-") == 0) {
        gpumem_finalize();
        remove_dir(dir);
        restore();
        SKIP("this machine tells no id for its device (no /etc/machine-id)");
    }
    CHECKF(strstr(path, uuid) != NULL, "the cache file %s does not name the UUID %s", path, uuid);
    NOTE("device 0's UUID: %s", uuid);
    /* Another device's UUID in the header, and a feature failed that only the file says. */
    const char *line = strstr(text, "\nvmm 1 passed ");
    gpumem_finalize();
    if (!line) {
        remove_dir(dir);
        restore();
        SKIP("VMM is not claimed here");
    }
    char *u = strstr(text, uuid);
    memset(u, 'f', strlen(uuid));
    char *v = strstr(text, "\nvmm 1 passed ");
    memcpy(v, "\nvmm 1 failed ", 14);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
    init_with(dir);
    gpumem_device_info_t i = tst_info(0);
    CHECKF(i.virtual_memory != GPUMEM_SUPPORT_BROKEN, "a cache file of another device was read");
    gpumem_finalize();
    REQUIRE(read_text(path, text, sizeof text));
    CHECKF(strstr(text, uuid) != NULL, "the file was not written anew with the device's UUID");
    CHECK(strstr(text, "\nvmm 1 passed ") != NULL);
    remove_dir(dir);
    restore();
}

/* Device 0's line for `feature` in a fresh cache directory's file, into line (from the name on). */
static void peer_line(char *line, size_t n)
{
    char dir[] = "/tmp/gpumem-test-selftest-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    init_with(dir);
    char path[4096];
    REQUIRE(cache_file(dir, path, sizeof path));
    static char text[16384];
    REQUIRE(read_text(path, text, sizeof text));
    const char *at = strstr(text, "\npeer ");
    REQUIRE(at != NULL);
    snprintf(line, n, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
    remove_dir(dir);
}

/* Peer access: with another device it is claimed and passes (a copy each way), and stays as
 * before (offered, enabled on request); a device alone does not claim it: "no other device". */
static void test_peer(void)
{
    if (broken("peer_copy"))
        SKIP("peer_copy is broken here (test_peer_copy_broken)");
    char line[1200];
    peer_line(line, sizeof line);
    NOTE("%s", line);
    int32_t n = 0;
    REQUIRE_OK(gpumem_device_count(&n));
    if (n < 2) {
        CHECKF(strncmp(line, "peer 0 skipped ", 15) == 0, "one device: %s", line);
        CHECKF(tst_contains(line, "no other device"), "one device: %s", line);
        restore();
        return;
    }
    int32_t can = 0;
    CHECK_OK(gpumem_device_can_access_peer(&can, 0, 1));
    if (!can) {
        CHECKF(strncmp(line, "peer 0 skipped ", 15) == 0, "not offered: %s", line);
        restore();
        return;
    }
    CHECKF(strncmp(line, "peer 1 passed ", 14) == 0, "two devices: %s", line);
    CHECK_OK(gpumem_set_device(0));
    CHECK_OK(gpumem_device_enable_peer_access(1));
    CHECK_OK(gpumem_device_disable_peer_access(1));
    restore();
}

/* Peer access that enables and then does not copy (FAKE_*_BREAK=peer_copy): BROKEN with the
 * runtime's error as the reason, no longer offered, and enabling it is refused with the reason
 * (with or without GPUMEM_FALLBACK=deny: there is nothing to fall back to). */
static void test_peer_copy_broken(void)
{
    if (!broken("peer_copy"))
        SKIP("peer_copy is not broken here (FAKE_*_BREAK)");
    char line[1200];
    peer_line(line, sizeof line);
    NOTE("%s", line);
    int32_t n = 0;
    REQUIRE_OK(gpumem_device_count(&n));
    if (n < 2) {
        restore();
        SKIP("one device: peer access is not claimed");
    }
    CHECKF(strncmp(line, "peer 1 failed ", 14) == 0, "%s", line);
    CHECKF(tst_contains(line, "PEER_ACCESS_UNSUPPORTED") || tst_contains(line, "PeerAccessUnsupported"), "%s", line);
    int32_t can = 1;
    CHECK_OK(gpumem_device_can_access_peer(&can, 0, 1));
    CHECK(can == 0);
    can = 1;
    CHECK_OK(gpumem_device_can_access_peer(&can, 1, 0));
    CHECK(can == 0);
    CHECK_OK(gpumem_set_device(0));
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_device_enable_peer_access(1));
    CHECKF(tst_contains(gpumem_last_error_message(), "self-test"), "no reason: %s", gpumem_last_error_message());
    CHECKF(tst_contains(gpumem_last_error_message(), "PEER_ACCESS_UNSUPPORTED") ||
               tst_contains(gpumem_last_error_message(), "PeerAccessUnsupported"),
           "no reason: %s", gpumem_last_error_message());
    /* Copies between the devices that need no peer access still work. */
    void *a = NULL, *b = NULL;
    CHECK_OK(gpumem_malloc(&a, 4096));
    CHECK_OK(gpumem_set_device(1));
    CHECK_OK(gpumem_malloc(&b, 4096));
    CHECK_OK(gpumem_set_device(0));
    if (a && b)
        CHECK_OK(gpumem_memcpy(b, a, 4096));
    if (a)
        CHECK_OK(gpumem_free(a));
    if (b)
        CHECK_OK(gpumem_free(b));
    restore();
}

/* Nothing the tests made stays: the device's free memory (exact on the fakes) and gpumem's
 * counters are those of an init without the self-test. */
static void test_leaves_nothing(void)
{
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    /* Every device: the peer test allocates on the others too. */
    int32_t n = 0;
    REQUIRE_OK(gpumem_device_count(&n));
    size_t free_before[8] = {0}, total = 0;
    for (int32_t d = 0; d < n && d < 8; d++) {
        REQUIRE_OK(gpumem_set_device(d));
        REQUIRE_OK(gpumem_mem_get_info(&free_before[d], &total));
    }
    init_with("1");
    size_t free_after[8] = {0};
    for (int32_t d = 0; d < n && d < 8; d++) {
        REQUIRE_OK(gpumem_set_device(d));
        REQUIRE_OK(gpumem_mem_get_info(&free_after[d], &total));
    }
    REQUIRE_OK(gpumem_set_device(0));
    gpumem_stats_t s = tst_stats();
    for (int k = 0; k < GPUMEM_KIND_COUNT; k++)
        CHECKF(s.current_bytes[k] == 0, "kind %d holds %llu bytes after the self-test", k,
               (unsigned long long)s.current_bytes[k]);
    /* Never less free memory after it; a real driver may have given back memory it cached
     * meanwhile (the H200 showed 2 MiB more free after), the fakes give exactly as much. */
    if (tst_backend() != GPUMEM_BACKEND_HOST)
        for (int32_t d = 0; d < n && d < 8; d++)
            CHECKF(free_after[d] >= free_before[d], "device %d had %zu bytes free before the self-test, %zu after",
                   (int)d, free_before[d], free_after[d]);
    restore();
}

/* A value that is neither 0, 1 nor a path with a '/' is a mistyped flag: init goes on without the
 * self-test, with a warning, and no directory of that name appears where the program runs. */
static void test_flag_words_are_no_directory(void)
{
    char dir[] = "/tmp/gpumem-test-selftest-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
    REQUIRE(chdir(dir) == 0);
    const char *words[] = {"2", "true", "yes"};
    for (size_t k = 0; k < TST_COUNT(words); k++) {
        init_with(words[k]);
        struct stat st;
        CHECKF(stat(words[k], &st) != 0, "GPUMEM_SELFTEST=%s made %s/%s", words[k], dir, words[k]);
    }
    restore();
    REQUIRE(chdir(cwd) == 0);
    rmdir(dir);
}

static const tst_case_t cases[] = {
    TEST(test_flag_words_are_no_directory),
    TEST(test_off_by_default),    TEST(test_all_pass), TEST(test_vmm_export_broken),
    TEST(test_managed_prefetch_broken), TEST(test_dmabuf_broken), TEST(test_cache), TEST(test_cache_uuid),
    TEST(test_peer),              TEST(test_peer_copy_broken), TEST(test_leaves_nothing),
};

int main(int argc, char **argv) { return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK); }
