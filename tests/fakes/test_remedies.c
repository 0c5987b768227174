/*
 * Each failure's remedy belongs to the call it is on.  The fake driver fails one entry point with
 * one error (FAKE_CUDA_FAIL=cuX=ERROR); the test makes the gpumem call that reaches it and checks
 * the status, that the message names the driver call and its error, and that the remedy after
 * them is the one for this call: an export's failure is remedied in the exporting process, an
 * import's by what the importer was given, a pool's, a stream's or an event's argument by checking
 * that object (not "sizes, alignment and pointers").
 *
 *   test_remedies CASE        (meson runs one test per case, with its FAKE_CUDA_FAIL)
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem/gpumem.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAIL: %s\n  last error: %s\n", __FILE__, __LINE__, #cond,      \
                    gpumem_last_error_message());                                                  \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)
#define SETUP(call)                                                                                \
    do {                                                                                           \
        gpumem_status_t st_ = (call);                                                              \
        if (st_ != GPUMEM_SUCCESS) {                                                               \
            fprintf(stderr, "%s:%d: setup %s: %s (%s)\n", __FILE__, __LINE__, #call,               \
                    gpumem_status_string(st_), gpumem_last_error_message());                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The remedy: what follows the vendor's "(description); " in "cannot X: cuY failed with NAME
 * (description); remedy". */
static const char *remedy_of(const char *msg)
{
    const char *r = strstr(msg, "); ");
    return r ? r + 3 : "";
}

/* The outcome of the failing call: its status and words the remedy must and must not hold
 * (NULL: none). */
static void expect(gpumem_status_t got, gpumem_status_t want, const char *vendor_call, const char *error,
                   const char *must, const char *must_not, const char *must_not_2)
{
    const char *msg = gpumem_last_error_message();
    printf("%s: %s\n", gpumem_status_string(got), msg);
    CHECK(got == want);
    CHECK(strstr(msg, "cannot ") != NULL); /* after the entry point's name */
    CHECK(strstr(msg, vendor_call) != NULL);
    CHECK(strstr(msg, error) != NULL);
    const char *remedy = remedy_of(msg);
    CHECK(*remedy != '\0');
    if (must)
        CHECK(strstr(remedy, must) != NULL);
    if (must_not)
        CHECK(strstr(remedy, must_not) == NULL);
    if (must_not_2)
        CHECK(strstr(remedy, must_not_2) == NULL);
}

/* What an export's remedy says, and what belongs to imports only. */
#define EXPORT_WORDS "export only what this process made to be shared"
#define IMPORT_WORDS "received with gpumem_ipc_recv_fd"

static gpumem_pool_t shareable_pool(void)
{
    gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL;
    SETUP(gpumem_pool_create(&pool, &props));
    return pool;
}

static gpumem_mem_handle_t shareable_handle(void)
{
    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    size_t g = 0;
    SETUP(gpumem_mem_get_granularity(&g, &props, GPUMEM_GRANULARITY_MINIMUM));
    gpumem_mem_handle_t h = 0;
    SETUP(gpumem_mem_create(&h, g, &props));
    return h;
}

static int run(const char *name)
{
    int32_t fd = -1;
    void *p = NULL;
    gpumem_pool_ptr_export_data_t data;
    memset(&data, 0, sizeof data);
    if (strcmp(name, "pool-export") == 0) {
        gpumem_pool_t pool = shareable_pool();
        expect(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_IPC,
               "cuMemPoolExportToShareableHandle", "CUDA_ERROR_INVALID_VALUE", EXPORT_WORDS, IMPORT_WORDS, NULL);
    } else if (strcmp(name, "pool-import") == 0) {
        gpumem_pool_t pool = shareable_pool(), imported = NULL;
        SETUP(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
        expect(gpumem_pool_import_from_shareable_handle(&imported, fd, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_IPC,
               "cuMemPoolImportFromShareableHandle", "CUDA_ERROR_INVALID_VALUE", IMPORT_WORDS, EXPORT_WORDS, NULL);
    } else if (strcmp(name, "pointer-export") == 0) {
        gpumem_pool_t pool = shareable_pool();
        SETUP(gpumem_malloc_from_pool_async(&p, 4096, pool, NULL));
        SETUP(gpumem_stream_synchronize(NULL));
        expect(gpumem_pool_export_pointer(&data, p), GPUMEM_ERROR_IPC, "cuMemPoolExportPointer",
               "CUDA_ERROR_INVALID_VALUE", EXPORT_WORDS, IMPORT_WORDS, NULL);
    } else if (strcmp(name, "pointer-import") == 0) {
        gpumem_pool_t pool = shareable_pool(), imported = NULL;
        SETUP(gpumem_malloc_from_pool_async(&p, 4096, pool, NULL));
        SETUP(gpumem_stream_synchronize(NULL));
        SETUP(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
        SETUP(gpumem_pool_export_pointer(&data, p));
        SETUP(gpumem_pool_import_from_shareable_handle(&imported, fd, GPUMEM_HANDLE_POSIX_FD));
        void *q = NULL;
        expect(gpumem_pool_import_pointer(&q, imported, &data), GPUMEM_ERROR_IPC, "cuMemPoolImportPointer",
               "CUDA_ERROR_INVALID_VALUE", "gpumem_pool_export_pointer", EXPORT_WORDS, IMPORT_WORDS);
    } else if (strcmp(name, "mem-export") == 0) {
        gpumem_mem_handle_t h = shareable_handle();
        expect(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_IPC,
               "cuMemExportToShareableHandle", "CUDA_ERROR_INVALID_VALUE", EXPORT_WORDS, IMPORT_WORDS, NULL);
    } else if (strcmp(name, "mem-import") == 0) {
        gpumem_mem_handle_t h = shareable_handle(), imported = 0;
        SETUP(gpumem_mem_export_to_shareable_handle(&fd, h, GPUMEM_HANDLE_POSIX_FD));
        expect(gpumem_mem_import_from_shareable_handle(&imported, fd, GPUMEM_HANDLE_POSIX_FD), GPUMEM_ERROR_IPC,
               "cuMemImportFromShareableHandle", "CUDA_ERROR_INVALID_VALUE", IMPORT_WORDS, EXPORT_WORDS, NULL);
    } else if (strcmp(name, "pool-attribute") == 0) {
        gpumem_pool_t pool = NULL;
        SETUP(gpumem_pool_create(&pool, NULL));
        uint64_t threshold = 1 << 20;
        expect(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold),
               GPUMEM_ERROR_INVALID_VALUE, "cuMemPoolSetAttribute", "CUDA_ERROR_INVALID_VALUE", "pool", "sizes",
               "gpumem_ipc");
    } else if (strcmp(name, "pool-trim") == 0) {
        gpumem_pool_t pool = NULL;
        SETUP(gpumem_pool_create(&pool, NULL));
        /* Memory the pool keeps after its block is freed, for the trim to give back. */
        uint64_t keep = UINT64_MAX;
        SETUP(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, &keep));
        SETUP(gpumem_malloc_from_pool_async(&p, 1 << 20, pool, NULL));
        SETUP(gpumem_free_async(p, NULL));
        SETUP(gpumem_stream_synchronize(NULL));
        expect(gpumem_pool_trim_to(pool, 0), GPUMEM_ERROR_INVALID_VALUE, "cuMemPoolTrimTo", "CUDA_ERROR_INVALID_VALUE",
               "pool", "sizes", "gpumem_ipc");
    } else if (strcmp(name, "event-record") == 0) {
        gpumem_event_t e = NULL;
        SETUP(gpumem_event_create(&e));
        expect(gpumem_event_record(e, NULL), GPUMEM_ERROR_INVALID_VALUE, "cuEventRecord", "CUDA_ERROR_INVALID_HANDLE",
               "event", "sizes", "pool");
    } else if (strcmp(name, "memset") == 0) {
        SETUP(gpumem_malloc(&p, 4096));
        expect(gpumem_memset(p, 1, 4096), GPUMEM_ERROR_INVALID_VALUE, "cuMemsetD8", "CUDA_ERROR_INVALID_VALUE",
               "sizes, alignment and pointers", "pool", "stream");
    } else {
        fprintf(stderr, "test_remedies: no case %s\n", name);
        return 2;
    }
    if (fd >= 0)
        close(fd);
    gpumem_finalize(); /* what is left is released; its status is not this test's */
    printf("%s: %s\n", name, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    return run(argv[1]);
}
