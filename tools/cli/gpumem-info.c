/*
 * gpumem-info: what gpumem sees on this machine.
 *
 * Prints the backend, the library version, every device with its memory,
 * the cap GPUMEM_LIMIT puts on it (as the library parsed it) and the support
 * level of each feature (after GPUMEM_DISABLE / GPUMEM_FALLBACK), and the
 * environment variables that shaped the answer.  Uses the public API only, so
 * what it prints is what any program linking gpumem gets.
 *
 * `gpumem-info --version` prints its version and the library's.
 *
 * `gpumem-info --json` prints the same as one JSON object for scripts; the
 * schema is in docs/gpumem-info-json.md (fields are only ever added).
 *
 * `gpumem-info --selftest [--json]` runs gpumem's self-test of every feature
 * on every device (GPUMEM_SELFTEST, into a fresh directory so that nothing is
 * read from a cache) and prints, per feature, whether the runtime claims it,
 * what the test found and how long it took.
 *
 * SPDX-License-Identifier: MIT
 */
/* mkdtemp, setenv and the directory calls of --selftest. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpumem/gpumem.h>

/* The variables that shape gpumem's answer, in the order they are printed. */
static const char *const env_names[] = {
    "GPUMEM_BACKEND", "GPUMEM_DISABLE", "GPUMEM_FALLBACK", "GPUMEM_LOG",
    "GPUMEM_CUDA_LIBRARY", "GPUMEM_HIP_LIBRARY", "GPUMEM_PINNED_CACHE",
    "GPUMEM_HOST_STRICT",
    /* Seeing and debugging memory (0.2) */
    "GPUMEM_TRACE", "GPUMEM_TRACE_MAX", "GPUMEM_BACKTRACE", "GPUMEM_LIMIT", "GPUMEM_POOL_PAGED", "GPUMEM_POOL_DECAY",
    /* Memory that explains itself (0.4) */
    "GPUMEM_SELFTEST",
};
#define ENV_COUNT (sizeof env_names / sizeof env_names[0])

static const char *level_name(int32_t level)
{
    switch (level) {
    case GPUMEM_SUPPORT_NATIVE: return "native";
    case GPUMEM_SUPPORT_EMULATED: return "emulated";
    case GPUMEM_SUPPORT_NONE: return "none";
    case GPUMEM_SUPPORT_BROKEN: return "broken";
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

/* ------------------------------------------------------------------------ */
/* GPUMEM_LIMIT as the library took it                                     */
/* ------------------------------------------------------------------------ */

/* The library tells the cap it parsed from GPUMEM_LIMIT (bytes, or N% of each
 * device's memory; none where the value is malformed) only in an
 * out-of-memory report: gpumem_oom_report_t.limit is the cap in force on the
 * device asked.  So gpumem-info asks `device` for an allocation no cap and no
 * device can serve, SIZE_MAX / 2 + 1 bytes (2^63; not SIZE_MAX, which the
 * report's rounding would overflow): a cap refuses it before the driver is
 * asked (with no cap the driver refuses it at once), and the report says the
 * cap.  Nothing is allocated; a trace of gpumem-info itself (GPUMEM_TRACE)
 * shows the refusal as an oom event.  Returns GPUMEM_SUCCESS and the cap (0: none), or the
 * status of a probe that did not end in OUT_OF_MEMORY. */
static gpumem_status_t limit_cap(int32_t device, uint64_t *cap)
{
    *cap = 0;
    const char *raw = getenv("GPUMEM_LIMIT");
    if (!raw || !*raw) /* the library takes an empty value as unset */
        return GPUMEM_SUCCESS;
    int32_t current = 0;
    gpumem_status_t st = gpumem_get_device(&current);
    if (st == GPUMEM_SUCCESS && current != device)
        st = gpumem_set_device(device);
    if (st != GPUMEM_SUCCESS)
        return st;
    void *p = NULL;
    st = gpumem_malloc(&p, SIZE_MAX / 2 + 1);
    if (st == GPUMEM_SUCCESS) {
        gpumem_free(p);
        st = GPUMEM_ERROR_INVALID_VALUE; /* no report to read */
    } else if (st == GPUMEM_ERROR_OUT_OF_MEMORY) {
        gpumem_oom_report_t report = GPUMEM_OOM_REPORT_INIT;
        st = gpumem_last_oom_report(&report);
        if (st == GPUMEM_SUCCESS)
            *cap = report.limit;
    }
    if (current != device)
        gpumem_set_device(current);
    return st;
}

static int fail(const char *what, gpumem_status_t st)
{
    fprintf(stderr, "gpumem-info: %s failed: %s: %s\n", what, gpumem_status_string(st),
            gpumem_last_error_message());
    return 1;
}

/* ------------------------------------------------------------------------ */
/* --json                                                                   */
/* ------------------------------------------------------------------------ */

/* A JSON string: quotes, backslashes and control characters escaped; valid
 * UTF-8 passed through; each byte of an invalid UTF-8 sequence becomes U+FFFD,
 * so the output is valid JSON whatever bytes a name or variable holds. */
static void json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    putchar('"');
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            putchar('\\');
            putchar(c);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\b': fputs("\\b", stdout); break;
            case '\f': fputs("\\f", stdout); break;
            case '\n': fputs("\\n", stdout); break;
            case '\r': fputs("\\r", stdout); break;
            case '\t': fputs("\\t", stdout); break;
            default: printf("\\u%04x", c); break;
            }
            p++;
        } else if (c < 0x80) {
            putchar(c);
            p++;
        } else {
            /* Length and minimum code point of a UTF-8 sequence led by c. */
            int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
            if (c >= 0xf5)
                n = 0;
            unsigned long cp = n == 4 ? (c & 0x07u) : n == 3 ? (c & 0x0fu) : (c & 0x1fu);
            int ok = n > 0;
            for (int i = 1; ok && i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                    ok = 0;
                else
                    cp = (cp << 6) | (p[i] & 0x3fu);
            }
            if (ok && ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                       (n == 4 && (cp < 0x10000 || cp > 0x10ffff))))
                ok = 0;
            if (ok) {
                fwrite(p, 1, (size_t)n, stdout);
                p += n;
            } else {
                fputs("\\ufffd", stdout);
                p++;
            }
        }
    }
    putchar('"');
}

static void json_handle_types(uint32_t mask)
{
    printf("[");
    if (mask & GPUMEM_HANDLE_POSIX_FD)
        printf("\"posix_fd\"");
    printf("]");
}

/* {"error": {...}} on stdout, exit status 1: a script reads one object either way. */
static int json_fail(const char *what, gpumem_status_t st)
{
    const char *message = gpumem_last_error_message();
    printf("{\"error\": {\"status\": ");
    json_string(gpumem_status_string(st));
    printf(", \"code\": %d, \"call\": ", (int)st);
    json_string(what);
    printf(", \"message\": ");
    json_string(message ? message : "");
    printf("}}\n");
    fflush(stdout);
    return 1;
}

static void json_environment(void)
{
    printf("\"environment\": {");
    for (size_t i = 0; i < ENV_COUNT; i++) {
        const char *value = getenv(env_names[i]);
        printf("%s\n    ", i ? "," : "");
        json_string(env_names[i]);
        printf(": ");
        if (value)
            json_string(value);
        else
            printf("null");
    }
    printf("\n  }");
}

/* The vendor bugs gpumem works around in this process: up to 32 (the table is smaller). */
#define MAX_WORKAROUNDS 32
static size_t workarounds(const char **names, const char **descriptions)
{
    size_t count = 0;
    if (gpumem_workarounds_get(names, descriptions, MAX_WORKAROUNDS, &count) != GPUMEM_SUCCESS)
        return 0;
    return count < MAX_WORKAROUNDS ? count : MAX_WORKAROUNDS;
}

static int json_main(void)
{
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS)
        return json_fail("gpumem_init", st);

    int32_t backend = 0, count = 0;
    if ((st = gpumem_get_backend(&backend)) != GPUMEM_SUCCESS)
        return json_fail("gpumem_get_backend", st);
    if ((st = gpumem_device_count(&count)) != GPUMEM_SUCCESS)
        return json_fail("gpumem_device_count", st);

    /* Gather every device first: a failure prints the error object alone. */
    gpumem_device_info_t *infos = calloc(count > 0 ? (size_t)count : 1, sizeof *infos);
    uint64_t *caps = calloc(count > 0 ? (size_t)count : 1, sizeof *caps);
    int *cap_known = calloc(count > 0 ? (size_t)count : 1, sizeof *cap_known);
    if (!infos || !caps || !cap_known) {
        free(infos);
        free(caps);
        free(cap_known);
        printf("{\"error\": {\"status\": \"GPUMEM_ERROR_OUT_OF_MEMORY\", \"code\": %d, "
               "\"call\": \"calloc\", \"message\": \"gpumem-info: out of memory\"}}\n",
               GPUMEM_ERROR_OUT_OF_MEMORY);
        return 1;
    }
    for (int32_t d = 0; d < count; d++) {
        gpumem_device_info_t init = GPUMEM_DEVICE_INFO_INIT;
        infos[d] = init;
        if ((st = gpumem_device_get_info(d, &infos[d])) != GPUMEM_SUCCESS) {
            free(infos);
            free(caps);
            free(cap_known);
            return json_fail("gpumem_device_get_info", st);
        }
        cap_known[d] = limit_cap(d, &caps[d]) == GPUMEM_SUCCESS;
    }

    int32_t v = gpumem_version();
    printf("{\n  \"schema_version\": 1,\n");
    printf("  \"gpumem_version\": \"%d.%d.%d\",\n", v / 10000, v / 100 % 100, v % 100);
    printf("  \"gpumem_version_compiled\": \"%d.%d.%d\",\n", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR,
           GPUMEM_VERSION_PATCH);
    printf("  \"backend\": ");
    json_string(gpumem_backend_name(backend));
    printf(",\n  \"devices\": [");
    for (int32_t d = 0; d < count; d++) {
        const gpumem_device_info_t *info = &infos[d];
        printf("%s\n    {\"id\": %d, \"name\": ", d ? "," : "", (int)d);
        json_string(info->name);
        printf(", \"backend\": ");
        json_string(gpumem_backend_name(info->backend));
        printf(", \"arch\": ");
        json_string(info->arch_name);
        printf(",\n     \"total_memory\": %llu, \"free_memory\": %llu, \"limit\": ",
               (unsigned long long)info->total_memory, (unsigned long long)info->free_memory);
        if (cap_known[d] && caps[d])
            printf("%llu,\n", (unsigned long long)caps[d]);
        else
            printf("null,\n");
        printf("     \"managed_memory\": \"%s\", \"managed_migrates\": %s, \"pageable_memory_access\": %s,\n",
               level_name(info->managed_memory), info->managed_migrates ? "true" : "false",
               info->pageable_memory_access ? "true" : "false");
        printf("     \"memory_pools\": \"%s\", \"virtual_memory\": \"%s\", \"host_register\": \"%s\",\n",
               level_name(info->memory_pools), level_name(info->virtual_memory), level_name(info->host_register));
        printf("     \"pinned_pools\": \"%s\", \"managed_pools\": \"%s\",\n", level_name(info->pinned_pools),
               level_name(info->managed_pools));
        printf("     \"ipc_handle_types\": ");
        json_handle_types(info->ipc_handle_types);
        printf(", \"pool_ipc_handle_types\": ");
        json_handle_types(info->pool_ipc_handle_types);
        printf(",\n     \"vmm_granularity\": %llu, \"vmm_recommended_granularity\": %llu,\n",
               (unsigned long long)info->vmm_granularity, (unsigned long long)info->vmm_recommended_granularity);
        printf("     \"batch_memops\": \"%s\", \"rdma_memory\": \"%s\",\n", level_name(info->batch_memops),
               level_name(info->rdma_memory));
        printf("     \"dmabuf\": \"%s\", \"fabric_handles\": \"%s\",\n", level_name(info->dmabuf),
               level_name(info->fabric_handles));
        printf("     \"rows\": \"%s\", \"stream_priorities\": \"%s\", \"host_funcs\": \"%s\", "
               "\"ipc_events\": \"%s\",\n", level_name(info->rows), level_name(info->stream_priorities),
               level_name(info->host_funcs), level_name(info->ipc_events));
        printf("     \"compute_capability\": ");
        if (info->compute_capability)
            printf("\"%d.%d\"}", info->compute_capability / 10, info->compute_capability % 10);
        else
            printf("null}");
    }
    printf("%s],\n  \"workarounds\": [", count ? "\n  " : "");
    const char *names[MAX_WORKAROUNDS], *descriptions[MAX_WORKAROUNDS];
    size_t nw = workarounds(names, descriptions);
    for (size_t i = 0; i < nw; i++) {
        printf("%s\n    {\"name\": ", i ? "," : "");
        json_string(names[i]);
        printf(", \"description\": ");
        json_string(descriptions[i]);
        printf("}");
    }
    printf("%s],\n  ", nw ? "\n  " : "");
    json_environment();
    printf("\n}\n");
    free(infos);
    free(caps);
    free(cap_known);

    gpumem_finalize();
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* --selftest                                                               */
/* ------------------------------------------------------------------------ */

/* gpumem writes each device's results as text into GPUMEM_SELFTEST's
 * directory (docs/debugging.md, "Capabilities that were tested"): a header
 * "gpumem-selftest 2 <uuid or -> <name>", "device N", "total_ns T", then one
 * line a feature, "<name> <claimed 0|1> <skipped|passed|failed> <ns> <reason...>".
 * The header is where gpumem-info learns a device's UUID: the public device
 * info has no field for it. */
#define SELFTEST_FEATURES 16
#define SELFTEST_DEVICES 64

struct selftest_line {
    char name[32];
    int claimed;
    char result[16];
    unsigned long long ns;
    char reason[1024];
};

struct selftest_device {
    int present;
    char uuid[64]; /* "" where the runtime tells none */
    unsigned long long total_ns;
    int count;
    struct selftest_line lines[SELFTEST_FEATURES];
};

static void strip_newline(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

static void selftest_read(const char *path, struct selftest_device *devs)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1400];
    int device = -1;
    struct selftest_device tmp;
    memset(&tmp, 0, sizeof tmp);
    while (fgets(line, sizeof line, f)) {
        strip_newline(line);
        struct selftest_line *l = &tmp.lines[tmp.count];
        int used = 0;
        int format = 0;
        if (sscanf(line, "gpumem-selftest %d %63s", &format, tmp.uuid) == 2) {
            if (strcmp(tmp.uuid, "-") == 0)
                tmp.uuid[0] = '\0';
            continue;
        }
        if (sscanf(line, "device %d", &device) == 1 || strncmp(line, "gpumem-selftest", 15) == 0)
            continue;
        if (sscanf(line, "total_ns %llu", &tmp.total_ns) == 1)
            continue;
        if (tmp.count < SELFTEST_FEATURES &&
            sscanf(line, "%31s %d %15s %llu %n", l->name, &l->claimed, l->result, &l->ns, &used) >= 4) {
            snprintf(l->reason, sizeof l->reason, "%s", line + used);
            tmp.count++;
        }
    }
    fclose(f);
    if (device >= 0 && device < SELFTEST_DEVICES) {
        tmp.present = 1;
        devs[device] = tmp;
    }
}

/* Read every results file of `dir` into devs, and remove the files and the directory. */
static void selftest_collect(const char *dir, struct selftest_device *devs)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof path)
            continue; /* a name this long is none of the results files */
        selftest_read(path, devs);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static int selftest_main(int json)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gpumem-selftest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "gpumem-info: cannot make a directory for the self-test's results in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return 1;
    }
    /* A fresh directory: every test runs, none is read from a cache. */
    setenv("GPUMEM_SELFTEST", dir, 1);
    gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
    if (st != GPUMEM_SUCCESS) {
        rmdir(dir);
        return json ? json_fail("gpumem_init", st) : fail("gpumem_init(GPUMEM_BACKEND_AUTO)", st);
    }
    int32_t backend = 0, count = 0;
    if ((st = gpumem_get_backend(&backend)) != GPUMEM_SUCCESS || (st = gpumem_device_count(&count)) != GPUMEM_SUCCESS) {
        rmdir(dir);
        return json ? json_fail("gpumem_device_count", st) : fail("gpumem_device_count", st);
    }
    static struct selftest_device devs[SELFTEST_DEVICES];
    selftest_collect(dir, devs);
    if (count > SELFTEST_DEVICES)
        count = SELFTEST_DEVICES;

    if (json)
        printf("{\n  \"schema_version\": 1,\n  \"backend\": \"%s\",\n  \"selftest\": [", gpumem_backend_name(backend));
    else
        printf("self-test of every feature on every device (backend %s)\n", gpumem_backend_name(backend));
    for (int32_t d = 0; d < count; d++) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        if ((st = gpumem_device_get_info(d, &info)) != GPUMEM_SUCCESS)
            return json ? json_fail("gpumem_device_get_info", st) : fail("gpumem_device_get_info", st);
        const struct selftest_device *r = &devs[d];
        if (json) {
            printf("%s\n    {\"id\": %d, \"name\": ", d ? "," : "", (int)d);
            json_string(info.name);
            printf(", \"uuid\": ");
            json_string(r->uuid);
            printf(", \"total_ns\": %llu, \"features\": [", r->total_ns);
            for (int i = 0; i < r->count; i++) {
                const struct selftest_line *l = &r->lines[i];
                printf("%s\n      {\"name\": ", i ? "," : "");
                json_string(l->name);
                printf(", \"claimed\": %s, \"result\": ", l->claimed ? "true" : "false");
                json_string(l->result);
                printf(", \"ns\": %llu, \"reason\": ", l->ns);
                json_string(l->reason);
                printf("}");
            }
            printf("%s]}", r->count ? "\n    " : "");
            continue;
        }
        printf("\ndevice %d: %s: %s in %.3f ms\n", d, info.name, r->present ? "tested" : "no results",
               r->total_ns / 1e6);
        if (r->uuid[0])
            printf("  uuid %s\n", r->uuid);
        printf("  %-14s %-8s %-8s %10s  %s\n", "feature", "claimed", "tested", "time", "reason");
        for (int i = 0; i < r->count; i++) {
            const struct selftest_line *l = &r->lines[i];
            printf("  %-14s %-8s %-8s %7.3f ms  %s\n", l->name, l->claimed ? "yes" : "no", l->result, l->ns / 1e6,
                   l->reason);
        }
    }
    if (json)
        printf("%s]\n}\n", count ? "\n  " : "");
    gpumem_finalize();
    return fflush(stdout) == 0 ? 0 : 1;
}

static int usage(FILE *to, const char *argv0)
{
    fprintf(to,
            "usage: %s [--selftest] [--json]\n"
            "       %s --version | --help\n"
            "  Prints gpumem's backend, devices and capabilities.\n"
            "  --json      one JSON object instead (docs/gpumem-info-json.md); on failure\n"
            "              {\"error\": {...}} and exit status 1\n"
            "  --selftest  run gpumem's self-test of every feature on every device and print,\n"
            "              per feature, whether the runtime claims it, what the test found\n"
            "              (passed, failed and why, skipped and why) and how long it took\n"
            "  --version   print the versions of gpumem-info and of the library it loaded\n",
            argv0, argv0);
    return to == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
    /* A refusal names what it refuses, then shows what is accepted. */
    if (argc == 3 && ((strcmp(argv[1], "--selftest") == 0 && strcmp(argv[2], "--json") == 0) ||
                      (strcmp(argv[1], "--json") == 0 && strcmp(argv[2], "--selftest") == 0)))
        return selftest_main(1);
    if (argc > 2) {
        fprintf(stderr, "gpumem-info: one option at most (or --selftest --json); '%s' is one too many\n", argv[2]);
        return usage(stderr, argv[0]);
    }
    if (argc == 2) {
        if (strcmp(argv[1], "--selftest") == 0)
            return selftest_main(0);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
            return usage(stdout, argv[0]);
        if (strcmp(argv[1], "--version") == 0) {
            /* The tool's version is the headers' it was built with; the library's is the one loaded. */
            int32_t v = gpumem_version();
            printf("gpumem-info (gpumem) %d.%d.%d, library %d.%d.%d\n", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR,
                   GPUMEM_VERSION_PATCH, v / 10000, v / 100 % 100, v % 100);
            return 0;
        }
        if (strcmp(argv[1], "--json") == 0)
            return json_main();
        fprintf(stderr, "gpumem-info: unknown option '%s'\n", argv[1]);
        return usage(stderr, argv[0]);
    }

    /* The environment first: when init fails it is usually the reason. */
    printf("environment:\n");
    for (size_t i = 0; i < ENV_COUNT; i++)
        print_env(env_names[i]);

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
    const char *names[MAX_WORKAROUNDS], *descriptions[MAX_WORKAROUNDS];
    size_t nw = workarounds(names, descriptions);
    printf("workarounds of known vendor bugs: %s\n", nw ? "" : "none");
    for (size_t i = 0; i < nw; i++)
        printf("  %s: %s\n", names[i], descriptions[i]);
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
        if (getenv("GPUMEM_LIMIT") && *getenv("GPUMEM_LIMIT")) {
            uint64_t cap = 0;
            if ((st = limit_cap(d, &cap)) != GPUMEM_SUCCESS)
                printf("  %-28s unknown: asking for it failed: %s: %s\n", "limit (GPUMEM_LIMIT)",
                       gpumem_status_string(st), gpumem_last_error_message());
            else if (cap)
                print_bytes("limit (GPUMEM_LIMIT)", cap);
            else
                printf("  %-28s none: gpumem did not take the value (its warning says why)\n",
                       "limit (GPUMEM_LIMIT)");
        }

        printf("  capabilities:\n");
        printf("    %-26s %s\n", "managed memory", level_name(info.managed_memory));
        printf("    %-26s %s\n", "managed pages migrate", info.managed_migrates ? "yes" : "no");
        printf("    %-26s %s\n", "pageable memory access", info.pageable_memory_access ? "yes" : "no");
        printf("    %-26s %s\n", "memory pools", level_name(info.memory_pools));
        printf("    %-26s %s\n", "pools of pinned memory", level_name(info.pinned_pools));
        printf("    %-26s %s\n", "pools of managed memory", level_name(info.managed_pools));
        printf("    %-26s %s\n", "virtual memory (VMM)", level_name(info.virtual_memory));
        printf("    %-26s %s\n", "host register", level_name(info.host_register));
        printf("    %-26s %s\n", "batched copies (0.2)", level_name(info.batch_memops));
        printf("    %-26s %s\n", "RDMA-capable memory (0.4)", level_name(info.rdma_memory));
        printf("    %-26s %s\n", "dma-buf export (0.4)", level_name(info.dmabuf));
        printf("    %-26s %s\n", "fabric handles (0.4)", level_name(info.fabric_handles));
        printf("    %-26s %s\n", "rows and boxes (0.5)", level_name(info.rows));
        printf("    %-26s %s\n", "stream priorities (0.5)", level_name(info.stream_priorities));
        printf("    %-26s %s\n", "host functions (0.5)", level_name(info.host_funcs));
        printf("    %-26s %s\n", "IPC events (0.5)", level_name(info.ipc_events));
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
