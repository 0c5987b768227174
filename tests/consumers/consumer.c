/*
 * consumer: a program built against the *installed* gpumem, as a user would
 * build it (tests/consumers/run_consumers.sh builds it with make +
 * pkg-config, CMake's find_package and meson's dependency()).
 *
 * Allocates device memory, copies to and from it, allocates from the
 * device's pool on a stream, and prints "OK" when every byte came back.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include <gpumem/gpumem.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        gpumem_status_t st_ = (call);                                            \
        if (st_ != GPUMEM_SUCCESS) {                                             \
            fprintf(stderr, "consumer: %s: %s: %s\n", #call,                     \
                    gpumem_status_string(st_), gpumem_last_error_message());     \
            return 1;                                                            \
        }                                                                        \
    } while (0)

#define N 4096

int main(void)
{
    static unsigned char host[N], back[N];

    /* The header this was compiled with and the library it loaded agree on the major. */
    int32_t v = gpumem_version();
    if (v / 10000 != GPUMEM_VERSION_MAJOR) {
        fprintf(stderr, "consumer: loaded gpumem %d.%d.%d, compiled against %d.%d.%d\n", v / 10000,
                v / 100 % 100, v % 100, GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
        return 1;
    }

    CHECK(gpumem_init(GPUMEM_BACKEND_AUTO));
    int32_t backend = 0;
    CHECK(gpumem_get_backend(&backend));

    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 1);

    /* Device memory and explicit copies. */
    void *dev;
    CHECK(gpumem_malloc(&dev, N));
    CHECK(gpumem_memcpy(dev, host, N));
    CHECK(gpumem_memcpy(back, dev, N));
    CHECK(gpumem_free(dev));
    if (memcmp(host, back, N) != 0) {
        fprintf(stderr, "consumer: gpumem_memcpy round trip differs\n");
        return 1;
    }

    /* Stream-ordered allocation from the device's pool. */
    gpumem_stream_t stream;
    void *tmp;
    CHECK(gpumem_stream_create(&stream));
    CHECK(gpumem_malloc_async(&tmp, N, stream));
    CHECK(gpumem_memset_async(tmp, 0x5a, N, stream));
    CHECK(gpumem_memcpy_async(back, tmp, N, stream));
    CHECK(gpumem_free_async(tmp, stream));
    CHECK(gpumem_stream_synchronize(stream));
    CHECK(gpumem_stream_destroy(stream));
    for (int i = 0; i < N; i++) {
        if (back[i] != 0x5a) {
            fprintf(stderr, "consumer: pool memory byte %d is 0x%02x, not 0x5a\n", i, back[i]);
            return 1;
        }
    }

    CHECK(gpumem_finalize());
    printf("OK (gpumem %d.%d.%d, %s backend)\n", v / 10000, v / 100 % 100, v % 100,
           gpumem_backend_name(backend));
    return 0;
}
