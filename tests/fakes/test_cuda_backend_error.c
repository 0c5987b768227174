/*
 * The fake driver fails one entry point (FAKE_CUDA_FAIL=cuMemAlloc): gpumem
 * must answer GPUMEM_ERROR_BACKEND with a message naming the driver call and
 * its error, change nothing, and keep working for everything else.
 */
#include <stdio.h>
#include <string.h>

#include <gpumem/gpumem.h>

static int failures;
#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: FAIL: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    gpumem_last_error_message());                                            \
            ++failures;                                                                      \
        }                                                                                    \
    } while (0)

int main(void)
{
    void *p = (void *)&failures;
    CHECK(gpumem_malloc(&p, 1 << 20) == GPUMEM_ERROR_BACKEND);
    CHECK(p == NULL);
    CHECK(strstr(gpumem_last_error_message(), "cuMemAlloc") != NULL);
    CHECK(strstr(gpumem_last_error_message(), "CUDA_ERROR_UNKNOWN") != NULL);
    gpumem_stats_t stats = GPUMEM_STATS_INIT;
    CHECK(gpumem_get_stats(&stats) == GPUMEM_SUCCESS);
    CHECK(stats.current_bytes[GPUMEM_KIND_DEVICE] == 0 && stats.alloc_count[GPUMEM_KIND_DEVICE] == 0);
    /* Everything else still works. */
    void *h = NULL;
    CHECK(gpumem_host_alloc(&h, 4096, 0) == GPUMEM_SUCCESS);
    CHECK(gpumem_host_free(h) == GPUMEM_SUCCESS);
    CHECK(gpumem_finalize() == GPUMEM_SUCCESS);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
