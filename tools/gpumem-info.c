/*
 * gpumem-info: what gpumem sees on this machine.
 *
 * Prints the backend, the library version, every device with its memory and
 * the support level of each feature (after GPUMEM_DISABLE / GPUMEM_FALLBACK),
 * and the environment variables that shaped the answer.  Uses the public API
 * only, so what it prints is what any program linking gpumem gets.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem/gpumem.h>

static const char *level_name(int32_t level)
{
    switch (level) {
    case GPUMEM_SUPPORT_NATIVE: return "native";
    case GPUMEM_SUPPORT_EMULATED: return "emulated";
    case GPUMEM_SUPPORT_NONE: return "none";
    default: return "unknown";
    }
}

/* Bytes as "N bytes (X.Y GiB)": exact for scripts, readable for people. */
static void print_bytes(const char *label, uint64_t bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    printf("  %-28s %llu bytes (%.1f %s)\n", label, (unsigned long long)bytes, v, units[u]);
}

static void print_env(const char *name)
{
    const char *value = getenv(name);
    printf("  %-22s %s\n", name, value ? value : "(unset)");
}

static int fail(const char *what, gpumem_status_t st)
{
    fprintf(stderr, "gpumem-info: %s failed: %s: %s\n", what, gpumem_status_string(st),
            gpumem_last_error_message());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "usage: %s\n  Prints gpumem's backend, devices and capabilities.\n", argv[0]);
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }

    /* The environment first: when init fails it is usually the reason. */
    printf("environment:\n");
    print_env("GPUMEM_BACKEND");
    print_env("GPUMEM_DISABLE");
    print_env("GPUMEM_FALLBACK");
    print_env("GPUMEM_LOG");
    print_env("GPUMEM_CUDA_LIBRARY");
    print_env("GPUMEM_HIP_LIBRARY");

    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS)
        return fail("gpumem_init(GPUMEM_BACKEND_AUTO)", st);

    int32_t backend = 0, count = 0;
    if ((st = gpumem_get_backend(&backend)) != GPUMEM_SUCCESS)
        return fail("gpumem_get_backend", st);
    if ((st = gpumem_device_count(&count)) != GPUMEM_SUCCESS)
        return fail("gpumem_device_count", st);

    /* The header's version is what this program was compiled against; the
     * run-time one is the library actually loaded.  They differ when a newer
     * libgpumem.so sits under an older tool, which is fine within a major. */
    int32_t v = gpumem_version();
    printf("gpumem %d.%d.%d (compiled against %d.%d.%d)\n", v / 10000, v / 100 % 100, v % 100,
           GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH);
    printf("backend: %s\n", gpumem_backend_name(backend));
    printf("devices: %d\n", count);

    for (int32_t d = 0; d < count; d++) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        if ((st = gpumem_device_get_info(d, &info)) != GPUMEM_SUCCESS)
            return fail("gpumem_device_get_info", st);

        printf("\ndevice %d: %s\n", d, info.name);
        printf("  %-28s %s\n", "backend", gpumem_backend_name(info.backend));
        printf("  %-28s %s\n", "architecture", info.arch_name[0] ? info.arch_name : "(unknown)");
        if (info.compute_capability)
            printf("  %-28s %d.%d\n", "compute capability", info.compute_capability / 10,
                   info.compute_capability % 10);
        print_bytes("total memory", info.total_memory);
        print_bytes("free memory", info.free_memory);

        printf("  capabilities:\n");
        printf("    %-26s %s\n", "managed memory", level_name(info.managed_memory));
        printf("    %-26s %s\n", "managed pages migrate", info.managed_migrates ? "yes" : "no");
        printf("    %-26s %s\n", "pageable memory access", info.pageable_memory_access ? "yes" : "no");
        printf("    %-26s %s\n", "memory pools", level_name(info.memory_pools));
        printf("    %-26s %s\n", "virtual memory (VMM)", level_name(info.virtual_memory));
        printf("    %-26s %s\n", "host register", level_name(info.host_register));
        printf("    %-26s %s\n", "IPC handle types (VMM)",
               (info.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) ? "posix_fd" : "none");
        printf("    %-26s %s\n", "IPC handle types (pools)",
               (info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) ? "posix_fd" : "none");
        if (info.virtual_memory != GPUMEM_SUPPORT_NONE) {
            print_bytes("  VMM granularity (min)", info.vmm_granularity);
            print_bytes("  VMM granularity (recomm.)", info.vmm_recommended_granularity);
        } else {
            printf("    %-26s %s\n", "VMM granularity", "n/a (no VMM)");
        }
    }

    gpumem_finalize();
    return 0;
}
