/* IPC between two real processes: shareable pools, pointers and VMM handles over a socketpair.
 *
 * The child is this executable again (fork + exec of /proc/self/exe with "--child <role> <socket>"),
 * so each process initialises gpumem on its own and nothing of the parent's state is inherited.
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define POOL_BYTES (MiB + 4321)

static char *g_self;

/* Start this executable as the child for `role`; returns its pid and the parent's socket end. */
static pid_t spawn_child(const char *role, int *sock)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    char fdstr[16];
    snprintf(fdstr, sizeof fdstr, "%d", sv[1]);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        execl("/proc/self/exe", g_self, "--child", role, fdstr, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    *sock = sv[0];
    return pid;
}

/* Wait for the child; 1 when it exited 0. */
static int child_ok(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return 0;
    if (!WIFEXITED(status)) {
        fprintf(stderr, "child killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        return 0;
    }
    if (WEXITSTATUS(status) != 0)
        fprintf(stderr, "child exited %d\n", WEXITSTATUS(status));
    return WEXITSTATUS(status) == 0;
}

/* Pools and VMM handles may differ: gpumem's own pool on a GPU cannot be shared. */
static int ipc_supported(void)
{
    gpumem_device_info_t info = tst_info(0);
    return (info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
}

static int vmm_ipc_supported(void)
{
    gpumem_device_info_t info = tst_info(0);
    return (info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
}


/* ------------------------------------------------------------------------ */
/* What an imported pool, pointer and memory handle answer (docs/semantics.md, */
/* "Imported pools, pointers and memory handles"): the same in the process    */
/* that exported them and in another one, on every backend.                  */
/* ------------------------------------------------------------------------ */

/* A refusal of a call on an imported object: NOT_SUPPORTED, saying it is imported and what the
 * exporter can do, never a remedy of another call. */
#define CHECK_IMPORTED_REFUSAL(expr, words)                                                                         \
    do {                                                                                                           \
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, (expr));                                                          \
        const char *msg_ = gpumem_last_error_message();                                                            \
        CHECKF(strstr(msg_, "imported") != NULL && strstr(msg_, (words)) != NULL, "%s: %s", #expr, msg_);          \
        CHECKF(strstr(msg_, "sizes, alignment") == NULL && strstr(msg_, "gpumem_ipc_recv_fd") == NULL, "%s: %s",    \
               #expr, msg_);                                                                                       \
    } while (0)

/* `ipool` imports a pool; `q` (mapping `bytes`) is the one pointer imported into it. */
static void check_imported_pool(gpumem_pool_t ipool, void *q, size_t bytes)
{
    uint64_t v = 0, used = 0, reserved = 0, high = 0;
    int32_t flag = 1;
    /* What it maps is what gpumem knows: its reserved and used memory alike. */
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECKF(used == bytes && reserved == bytes, "imported pool: used %llu, reserved %llu, its pointer maps %zu",
           (unsigned long long)used, (unsigned long long)reserved, bytes);
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &high));
    CHECK(high >= used);
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &high));
    CHECK(high >= reserved);
    CHECK_OK(gpumem_pool_set_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &v));
    CHECK_OK(gpumem_pool_set_attribute(ipool, GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH, &v));
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &high));
    CHECK(high == used);
    v = 5;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_set_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &v));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_set_attribute(ipool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, &v));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_set_attribute(ipool, 99, &v));
    /* The reuse flags and the release threshold are the exporting pool's. */
    for (int32_t attr = GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES;
         attr <= GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES; ++attr) {
        CHECK_IMPORTED_REFUSAL(gpumem_pool_set_attribute(ipool, attr, &flag), "exporting process");
        CHECK_IMPORTED_REFUSAL(gpumem_pool_get_attribute(ipool, attr, &flag), "exporting process");
    }
    v = 0;
    CHECK_IMPORTED_REFUSAL(gpumem_pool_set_attribute(ipool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &v), "exporting process");
    CHECK_IMPORTED_REFUSAL(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &v), "exporting process");
    /* Nothing of its own to give back. */
    CHECK_OK(gpumem_pool_trim_to(ipool, 0));
    CHECK_OK(gpumem_pool_trim_to(ipool, SIZE_MAX));
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK(used == bytes);
    /* Only the creator exports the pool, and only the allocating process the pointer. */
    int32_t fd = -1;
    CHECK_IMPORTED_REFUSAL(gpumem_pool_export_to_shareable_handle(&fd, ipool, GPUMEM_HANDLE_POSIX_FD), "gpumem_ipc_send_fd");
    CHECK(fd == -1);
    gpumem_pool_ptr_export_data_t again;
    CHECK_IMPORTED_REFUSAL(gpumem_pool_export_pointer(&again, q), "export data");
    /* Access: the owner's read-write. */
    int32_t flags = -1;
    CHECK_OK(gpumem_pool_get_access(&flags, ipool, 0));
    CHECK(flags == GPUMEM_ACCESS_READWRITE);
    /* Allocating from it, or making it current, stays a bad argument. */
    void *x = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_malloc_from_pool_async(&x, 64, ipool, NULL));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_device_set_pool(0, ipool));
}

/* An imported memory handle maps and releases; only its creator exports it. */
static void check_imported_handle(gpumem_mem_handle_t h)
{
    int32_t fd = -1;
    CHECK_IMPORTED_REFUSAL(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD), "gpumem_ipc_send_fd");
    CHECK(fd == -1);
}

/* A pool, a pointer and a memory handle imported by the process that exported them. */
static void test_imported_in_process(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.memory_pools == GPUMEM_SUPPORT_NONE || !ipc_supported())
        SKIP("shareable pools are not supported here");
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL, ipool = NULL;
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&p, POOL_BYTES, pool, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    REQUIRE_OK(tst_upload(p, POOL_BYTES, 41));
    int32_t fd = -1;
    REQUIRE_OK(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
    gpumem_pool_ptr_export_data_t data;
    REQUIRE_OK(gpumem_pool_export_pointer(&data, p));
    REQUIRE_OK(gpumem_pool_import_from_shareable_handle(&ipool, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd);
    /* Before any pointer: it maps nothing. */
    uint64_t used = 1;
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK(used == 0);

    const int so = GPUMEM_KIND_STREAM_ORDERED;
    gpumem_stats_t before = GPUMEM_STATS_INIT, now = GPUMEM_STATS_INIT;
    REQUIRE_OK(gpumem_get_stats(&before));
    void *q = NULL;
    REQUIRE_OK(gpumem_pool_import_pointer(&q, ipool, &data));
    /* One more live allocation, and no byte more: the memory is the exporter's block, counted once. */
    REQUIRE_OK(gpumem_get_stats(&now));
    CHECK(now.alloc_count[so] - before.alloc_count[so] == 1);
    CHECKF(now.current_bytes[so] == before.current_bytes[so], "an imported pointer counted %lld bytes",
           (long long)(now.current_bytes[so] - before.current_bytes[so]));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(q, &pi));
    CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED && pi.pool == ipool && pi.base == q && pi.alloc_size >= POOL_BYTES);
    CHECKF(tst_download_verify(q, POOL_BYTES, 41), "the import does not read what the exporter wrote");
    check_imported_pool(ipool, q, pi.alloc_size);
    CHECK_OK(tst_upload(q, POOL_BYTES, 42));
    CHECK_OK(gpumem_device_synchronize());
    CHECKF(tst_download_verify(p, POOL_BYTES, 42), "the exporter does not read what the import wrote");
    /* Freed synchronously, it gives back no byte either (the exporter's block still counts). */
    CHECK_OK(gpumem_free(q));
    REQUIRE_OK(gpumem_get_stats(&now));
    CHECK(now.current_bytes[so] == before.current_bytes[so]);
    CHECK(now.free_count[so] - before.free_count[so] == 1);
    uint64_t high = 0;
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK_OK(gpumem_pool_get_attribute(ipool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, &high));
    CHECK(used == 0 && high == pi.alloc_size);
    CHECK_OK(gpumem_pool_destroy(ipool));
    CHECK_OK(gpumem_free_async(p, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_pool_destroy(pool));

    /* A memory handle. */
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE || !vmm_ipc_supported())
        return;
    gpumem_alloc_props_t aprops = GPUMEM_ALLOC_PROPS_INIT;
    aprops.handle_types = GPUMEM_HANDLE_POSIX_FD;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &aprops, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_mem_handle_t h = 0, ih = 0;
    REQUIRE_OK(gpumem_mem_create(&h, g, &aprops));
    REQUIRE_OK(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
    REQUIRE_OK(gpumem_mem_import_from_shareable_handle(&ih, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd);
    check_imported_handle(ih);
    /* The handle it was imported from still exports. */
    CHECK_OK(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
    close(fd);
    CHECK_OK(gpumem_mem_release(ih));
    CHECK_OK(gpumem_mem_release(h));
}

/* ------------------------------------------------------------------------ */
/* Pools                                                                     */
/* ------------------------------------------------------------------------ */

static void test_pool_ipc(void)
{
    gpumem_device_info_t info = tst_info(0);
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL;
    if (info.memory_pools == GPUMEM_SUPPORT_NONE || !ipc_supported()) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &props));
        SKIP("shareable pools are not supported (pools %d, ipc handle types 0x%x)", (int)info.memory_pools,
             (unsigned)info.ipc_handle_types);
    }
    REQUIRE_OK(gpumem_pool_create(&pool, &props));
    void *p = NULL;
    REQUIRE_OK(gpumem_malloc_from_pool_async(&p, POOL_BYTES, pool, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    REQUIRE_OK(tst_upload(p, POOL_BYTES, 21));

    int32_t fd = -1;
    REQUIRE_OK(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
    CHECK(fd >= 0);
    gpumem_pool_ptr_export_data_t data;
    memset(&data, 0, sizeof data);
    REQUIRE_OK(gpumem_pool_export_pointer(&data, p));
    /* An interior pointer is not an allocation. */
    gpumem_pool_ptr_export_data_t junk;
    gpumem_status_t interior = gpumem_pool_export_pointer(&junk, (char *)p + 8);
    CHECK(interior == GPUMEM_ERROR_INVALID_POINTER || interior == GPUMEM_ERROR_INVALID_VALUE);
    /* The message asks for the allocation's pointer; it never advises freeing. */
    if (interior == GPUMEM_ERROR_INVALID_POINTER)
        CHECKF(strstr(gpumem_last_error_message(), "gpumem_free") == NULL &&
                   strstr(gpumem_last_error_message(), "pointer the allocation returned") != NULL,
               "%s", gpumem_last_error_message());

    int sock = -1;
    pid_t pid = spawn_child("pool", &sock);
    REQUIRE(pid > 0);
    CHECK_OK(gpumem_ipc_send_fd(sock, fd));
    uint64_t bytes = POOL_BYTES;
    CHECK(tst_write_all(sock, &data, sizeof data));
    CHECK(tst_write_all(sock, &bytes, sizeof bytes));
    /* The child read our bytes, wrote its own back and freed its mapping. */
    char ack = 0;
    CHECK(tst_read_all(sock, &ack, 1));
    CHECK(ack == 'K');
    CHECKF(tst_download_verify(p, POOL_BYTES, 22), "the parent does not see what the child wrote");
    CHECK(child_ok(pid));
    close(sock);
    close(fd);
    CHECK_OK(gpumem_free_async(p, NULL));
    CHECK_OK(gpumem_stream_synchronize(NULL));
    CHECK_OK(gpumem_pool_destroy(pool));
}

static void child_pool(int sock)
{
    int32_t fd = -1;
    REQUIRE_OK(gpumem_ipc_recv_fd(sock, &fd));
    CHECK(fd >= 0);
    gpumem_pool_ptr_export_data_t data;
    uint64_t bytes = 0;
    REQUIRE(tst_read_all(sock, &data, sizeof data));
    REQUIRE(tst_read_all(sock, &bytes, sizeof bytes));

    /* With two devices the importer works on device 1, as a process per GPU does, and the pool
     * stays the exporter's (device 0): its own grant first, before any pointer is imported. */
    int32_t count = 0;
    REQUIRE_OK(gpumem_device_count(&count));
    if (count >= 2)
        REQUIRE_OK(gpumem_set_device(1));
    gpumem_pool_t ipool = NULL;
    REQUIRE_OK(gpumem_pool_import_from_shareable_handle(&ipool, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd); /* the fd stays ours; the import does not need it any more */
    if (count >= 2) {
        gpumem_access_desc_t mine = {1, GPUMEM_ACCESS_READWRITE};
        CHECK_OK(gpumem_pool_set_access(ipool, &mine, 1));
    }

    /* An imported pool maps, it does not allocate. */
    void *x = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_malloc_from_pool_async(&x, 64, ipool, NULL));
    /* Garbage export data is refused, never a crash. */
    gpumem_pool_ptr_export_data_t garbage;
    memset(&garbage, 0xff, sizeof garbage);
    CHECK(gpumem_pool_import_pointer(&x, ipool, &garbage) != GPUMEM_SUCCESS);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_pointer(NULL, ipool, &data));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_pointer(&x, ipool, NULL));

    const int so = GPUMEM_KIND_STREAM_ORDERED;
    gpumem_stats_t before = GPUMEM_STATS_INIT, now = GPUMEM_STATS_INIT;
    REQUIRE_OK(gpumem_get_stats(&before));
    void *q = NULL;
    REQUIRE_OK(gpumem_pool_import_pointer(&q, ipool, &data));
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info(q, &pi));
    CHECK(pi.kind == GPUMEM_KIND_STREAM_ORDERED);
    CHECK(pi.pool == ipool);
    CHECKF(pi.device == 0, "the imported block is device %d's, not the exporter's device 0", (int)pi.device);
    CHECKF(pi.base == q && pi.alloc_size >= bytes, "imported block: base %p size %zu, want %p and >= %llu", pi.base,
           pi.alloc_size, q, (unsigned long long)bytes);
    /* The same export data again while the first import is live: refused, no second mapping. */
    void *q2 = NULL;
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_pointer(&q2, ipool, &data));
    CHECK(strstr(gpumem_last_error_message(), "already imported") != NULL);
    /* Statistics count one allocation of no byte: the memory is the exporter's, counted there. */
    REQUIRE_OK(gpumem_get_stats(&now));
    CHECK(now.alloc_count[so] - before.alloc_count[so] == 1);
    CHECKF(now.current_bytes[so] == before.current_bytes[so], "imported block counted %llu bytes, not 0",
           (unsigned long long)(now.current_bytes[so] - before.current_bytes[so]));
    /* The pool, the pointer: what an importer may do with them. */
    check_imported_pool(ipool, q, pi.alloc_size);
    /* An interior pointer is known, with its block's base and size. */
    gpumem_pointer_info_t ii = GPUMEM_POINTER_INFO_INIT;
    CHECK_OK(gpumem_pointer_get_info((char *)q + 100, &ii));
    CHECK(ii.kind == GPUMEM_KIND_STREAM_ORDERED);
    CHECK(ii.base == q && ii.alloc_size == pi.alloc_size && ii.pool == ipool);
    /* gpumem bounds-checks copies into it (not only the vendor). */
    char *host = (char *)calloc(1, pi.alloc_size + 1);
    REQUIRE(host != NULL);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_memcpy(q, host, pi.alloc_size + 1));
    CHECK(strstr(gpumem_last_error_message(), "runs past the end") != NULL);
    free(host);
    CHECKF(tst_download_verify(q, (size_t)bytes, 21), "the child does not see what the parent wrote");
    CHECK_OK(tst_upload(q, (size_t)bytes, 22));
    CHECK_OK(gpumem_device_synchronize());
    /* Imported pointers are freed with gpumem_free(_async) before the exporter frees them. */
    CHECK_OK(gpumem_free(q));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(q));
    REQUIRE_OK(gpumem_get_stats(&now));
    CHECK(now.current_bytes[so] == before.current_bytes[so]);
    CHECK(now.free_count[so] - before.free_count[so] == 1);
    /* Once freed, it can be imported again. */
    REQUIRE_OK(gpumem_pool_import_pointer(&q2, ipool, &data));
    CHECK_OK(gpumem_free(q2));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_POINTER, gpumem_free(q2));
    CHECK_OK(gpumem_pool_destroy(ipool));
    char ack = 'K';
    CHECK(tst_write_all(sock, &ack, 1));
}

/* ------------------------------------------------------------------------ */
/* VMM handles                                                               */
/* ------------------------------------------------------------------------ */

static void test_vmm_ipc(void)
{
    gpumem_device_info_t info = tst_info(0);
    if (info.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("virtual memory management is not native here");
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    size_t g = 0;
    REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_mem_handle_t h = 0;
    if (!vmm_ipc_supported()) {
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, g, &props));
        SKIP("shareable VMM handles are not supported");
    }
    const size_t size = 2 * g;
    REQUIRE_OK(gpumem_mem_create(&h, size, &props));
    void *va = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&va, size, 0, NULL));
    REQUIRE_OK(gpumem_mem_map(va, size, 0, h));
    gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    REQUIRE_OK(gpumem_mem_set_access(va, size, &rw, 1));
    CHECK_OK(tst_upload(va, size, 31));

    int32_t fd = -1;
    REQUIRE_OK(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
    int sock = -1;
    pid_t pid = spawn_child("vmm", &sock);
    REQUIRE(pid > 0);
    CHECK_OK(gpumem_ipc_send_fd(sock, fd));
    uint64_t bytes = size;
    CHECK(tst_write_all(sock, &bytes, sizeof bytes));
    char ack = 0;
    CHECK(tst_read_all(sock, &ack, 1));
    CHECK(ack == 'K');
    CHECKF(tst_download_verify(va, size, 32), "the parent does not see what the child wrote");
    CHECK(child_ok(pid));
    close(sock);
    close(fd);
    CHECK_OK(gpumem_mem_unmap(va, size));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, size));
}

static void child_vmm(int sock)
{
    int32_t fd = -1;
    REQUIRE_OK(gpumem_ipc_recv_fd(sock, &fd));
    uint64_t bytes = 0;
    REQUIRE(tst_read_all(sock, &bytes, sizeof bytes));
    gpumem_mem_handle_t h = 0;
    REQUIRE_OK(gpumem_mem_import_from_shareable_handle(&h, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd);
    CHECK(h != 0);
    check_imported_handle(h);
    void *va = NULL;
    REQUIRE_OK(gpumem_mem_address_reserve(&va, (size_t)bytes, 0, NULL));
    REQUIRE_OK(gpumem_mem_map(va, (size_t)bytes, 0, h));
    gpumem_access_desc_t rw = {0, GPUMEM_ACCESS_READWRITE};
    REQUIRE_OK(gpumem_mem_set_access(va, (size_t)bytes, &rw, 1));
    CHECKF(tst_download_verify(va, (size_t)bytes, 31), "the child does not see what the parent wrote");
    CHECK_OK(tst_upload(va, (size_t)bytes, 32));
    CHECK_OK(gpumem_device_synchronize());
    CHECK_OK(gpumem_mem_unmap(va, (size_t)bytes));
    CHECK_OK(gpumem_mem_release(h));
    CHECK_OK(gpumem_mem_address_free(va, (size_t)bytes));
    char ack = 'K';
    CHECK(tst_write_all(sock, &ack, 1));
}

/* ------------------------------------------------------------------------ */
/* The fd helpers and bad descriptors                                        */
/* ------------------------------------------------------------------------ */

static void test_fd_passing(void)
{
    int sv[2], pp[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE(pipe(pp) == 0);
    /* A working round trip: the received descriptor is a new one for the same pipe. */
    CHECK_OK(gpumem_ipc_send_fd(sv[0], pp[1]));
    int32_t got = -1;
    CHECK_OK(gpumem_ipc_recv_fd(sv[1], &got));
    CHECK(got >= 0 && got != pp[1]);
    if (got >= 0) {
        CHECK(write(got, "x", 1) == 1);
        char c = 0;
        CHECK(read(pp[0], &c, 1) == 1 && c == 'x');
        close(got);
    }

    /* Bad sockets and descriptors give a status, never a crash. */
    CHECK_ONE_OF(gpumem_ipc_send_fd(-1, pp[1]), GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_IPC);
    CHECK_ONE_OF(gpumem_ipc_send_fd(sv[0], -1), GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_IPC);
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_send_fd(pp[1], pp[0])); /* not a socket */
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_send_fd(sv[0], 4000)); /* not open */
    CHECK(strlen(gpumem_last_error_message()) > 0);
    CHECK_ONE_OF(gpumem_ipc_recv_fd(-1, &got), GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_IPC);
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_ipc_recv_fd(sv[1], NULL));
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_recv_fd(pp[0], &got)); /* not a socket */
    /* Data without a descriptor. */
    CHECK(write(sv[0], "z", 1) == 1);
    got = -1;
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_recv_fd(sv[1], &got));
    /* The peer is gone. */
    close(sv[0]);
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_recv_fd(sv[1], &got));
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_ipc_send_fd(sv[1], pp[1]));
    close(sv[1]);
    close(pp[0]);
    close(pp[1]);
}

static void test_bad_shareable_handles(void)
{
    gpumem_device_info_t info = tst_info(0);
    int pp[2];
    REQUIRE(pipe(pp) == 0);
    int devnull = open("/dev/null", O_RDWR);
    REQUIRE(devnull >= 0);
    gpumem_pool_t pool = NULL;
    gpumem_mem_handle_t h = 0;
    int32_t fd = -1;

    if (!ipc_supported()) {
        /* Every export and import says NOT_SUPPORTED, naming the feature. */
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_import_from_shareable_handle(&pool, pp[0], GPUMEM_HANDLE_POSIX_FD));
        CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_import_from_shareable_handle(&h, devnull, GPUMEM_HANDLE_POSIX_FD));
        if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
            gpumem_pool_t def = NULL;
            REQUIRE_OK(gpumem_device_get_default_pool(&def, 0));
            /* (the default pool was not made shareable either, so INVALID_VALUE is right too) */
            CHECK_ONE_OF(gpumem_pool_export_to_shareable_handle(&fd, def, GPUMEM_HANDLE_POSIX_FD),
                         GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_INVALID_VALUE);
        }
        close(pp[0]);
        close(pp[1]);
        close(devnull);
        SKIP("IPC handles are not supported here");
    }

    CHECK_ONE_OF(gpumem_pool_import_from_shareable_handle(&pool, -1, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_INVALID_VALUE,
                 GPUMEM_ERROR_IPC);
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_pool_import_from_shareable_handle(&pool, pp[0], GPUMEM_HANDLE_POSIX_FD));
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_pool_import_from_shareable_handle(&pool, devnull, GPUMEM_HANDLE_POSIX_FD));
    CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_pool_import_from_shareable_handle(&pool, 4000, GPUMEM_HANDLE_POSIX_FD));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_from_shareable_handle(&pool, pp[0], GPUMEM_HANDLE_NONE));
    /* 0x80: a handle type gpumem does not know.  (GPUMEM_HANDLE_FABRIC is known, and refused as
     * NOT_SUPPORTED: test_dmabuf, test_fabric_handle_is_not_a_descriptor.) */
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_from_shareable_handle(&pool, pp[0], 0x80));
    CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_from_shareable_handle(NULL, pp[0], GPUMEM_HANDLE_POSIX_FD));
    if (info.virtual_memory == GPUMEM_SUPPORT_NATIVE) {
        CHECK_ONE_OF(gpumem_mem_import_from_shareable_handle(&h, -1, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_INVALID_VALUE,
                     GPUMEM_ERROR_IPC);
        CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_mem_import_from_shareable_handle(&h, pp[0], GPUMEM_HANDLE_POSIX_FD));
        CHECK_STATUS(GPUMEM_ERROR_IPC, gpumem_mem_import_from_shareable_handle(&h, devnull, GPUMEM_HANDLE_POSIX_FD));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_import_from_shareable_handle(&h, devnull, 0x80));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_import_from_shareable_handle(NULL, devnull, GPUMEM_HANDLE_POSIX_FD));
        /* A handle made without POSIX_FD cannot be exported. */
        gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
        size_t g = 0;
        REQUIRE_OK(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
        REQUIRE_OK(gpumem_mem_create(&h, g, &props));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
        CHECK_OK(gpumem_mem_release(h));
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        REQUIRE_OK(gpumem_mem_create(&h, g, &props));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_export_to_shareable_handle(&fd, h, 0x80));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_mem_export_to_shareable_handle(NULL, h, GPUMEM_HANDLE_POSIX_FD));
        CHECK_OK(gpumem_mem_release(h));
    }
    if (info.memory_pools != GPUMEM_SUPPORT_NONE) {
        /* A pool made without POSIX_FD cannot be exported, nor its pointers. */
        REQUIRE_OK(gpumem_pool_create(&pool, NULL));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
        void *p = NULL;
        REQUIRE_OK(gpumem_malloc_from_pool_async(&p, 4096, pool, NULL));
        gpumem_pool_ptr_export_data_t data;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_export_pointer(&data, p));
        /* Pointers of other kinds are not pool pointers. */
        void *d = NULL;
        REQUIRE_OK(gpumem_malloc(&d, 4096));
        CHECK_ONE_OF(gpumem_pool_export_pointer(&data, d), GPUMEM_ERROR_INVALID_POINTER, GPUMEM_ERROR_INVALID_VALUE);
        CHECK_OK(gpumem_free(d));
        /* A pool that is not imported does not import pointers. */
        memset(&data, 0, sizeof data);
        void *x = NULL;
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_import_pointer(&x, pool, &data));
        CHECK_OK(gpumem_free_async(p, NULL));
        CHECK_OK(gpumem_stream_synchronize(NULL));
        CHECK_OK(gpumem_pool_destroy(pool));
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        REQUIRE_OK(gpumem_pool_create(&pool, &props));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_export_to_shareable_handle(&fd, pool, 0x80));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_export_to_shareable_handle(NULL, pool, GPUMEM_HANDLE_POSIX_FD));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_VALUE, gpumem_pool_export_pointer(NULL, NULL));
        CHECK_OK(gpumem_pool_destroy(pool));
        CHECK_STATUS(GPUMEM_ERROR_INVALID_HANDLE, gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
    }
    close(pp[0]);
    close(pp[1]);
    close(devnull);
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        alarm(30);
        int sock = atoi(argv[3]);
        if (strcmp(argv[2], "pool") == 0)
            child_pool(sock);
        else if (strcmp(argv[2], "vmm") == 0)
            child_vmm(sock);
        else
            return 2;
        close(sock);
        return atomic_load(&tst_failures_) ? 1 : 0;
    }
    alarm(60);
    static const tst_case_t cases[] = {
        TEST(test_pool_ipc),
        TEST(test_vmm_ipc),
        TEST(test_imported_in_process),
        TEST(test_fd_passing),
        TEST(test_bad_shareable_handles),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_LEAK_CHECK);
}
