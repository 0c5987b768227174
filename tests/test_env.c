/* The environment: forced backends, malformed values, sizes with units, and what GPUMEM_LOG prints.
 *
 * Each check runs this executable again as a child ("--child <role>") with a chosen
 * environment, and reads its stdout (results) and stderr (gpumem's log) through pipes.
 * SPDX-License-Identifier: MIT
 */
#include "harness.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------------------ */
/* Child side                                                                */
/* ------------------------------------------------------------------------ */

static int child_main(const char *role)
{
    if (strcmp(role, "init") == 0) {
        gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
        printf("init=%s\n", gpumem_status_string(st));
        printf("msg=%s\n", gpumem_last_error_message());
        void *p = NULL;
        gpumem_status_t m = gpumem_malloc(&p, 64); /* an implicit init */
        printf("malloc=%s\n", gpumem_status_string(m));
        if (m == GPUMEM_SUCCESS)
            gpumem_free(p);
        int32_t b = -1;
        gpumem_get_backend(&b);
        printf("backend=%s\n", gpumem_backend_name(b));
        return 0;
    }
    if (strcmp(role, "basic") == 0) {
        gpumem_status_t st = gpumem_init(GPUMEM_BACKEND_AUTO);
        printf("init=%s\n", gpumem_status_string(st));
        void *p = NULL;
        gpumem_status_t m = gpumem_malloc(&p, 64);
        printf("malloc=%s\n", gpumem_status_string(m));
        if (m == GPUMEM_SUCCESS)
            gpumem_free(p);
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        gpumem_device_get_info(0, &info);
        printf("managed=%d\npools=%d\nvmm=%d\nregister=%d\nipc=%u\n", (int)info.managed_memory,
               (int)info.memory_pools, (int)info.virtual_memory, (int)info.host_register,
               (unsigned)info.ipc_handle_types);
        return 0;
    }
    if (strcmp(role, "limit") == 0) {
        /* What GPUMEM_LIMIT let through: 1 MiB, 3 MiB, then 1 MiB + 1 next to the first. */
        static const size_t sizes[] = {1u << 20, 3u << 20};
        for (size_t i = 0; i < 2; ++i) {
            void *p = NULL;
            gpumem_status_t st = gpumem_malloc(&p, sizes[i]);
            printf("malloc%zu=%s\n", i, gpumem_status_string(st));
            if (st == GPUMEM_SUCCESS)
                gpumem_free(p);
        }
        void *a = NULL, *b = NULL;
        gpumem_status_t st = gpumem_malloc(&a, 1u << 20);
        if (st == GPUMEM_SUCCESS) {
            st = gpumem_malloc(&b, (1u << 20) + 1);
            if (st == GPUMEM_SUCCESS)
                gpumem_free(b);
            gpumem_free(a);
        }
        printf("malloc2=%s\n", gpumem_status_string(st));
        return 0;
    }
    if (strcmp(role, "managed") == 0) {
        int ok = 1;
        for (int i = 0; i < 5; ++i) {
            void *p = NULL;
            gpumem_status_t st = gpumem_managed_alloc(&p, 4096 * (size_t)(i + 1), 0);
            if (st != GPUMEM_SUCCESS || gpumem_free(p) != GPUMEM_SUCCESS)
                ok = 0;
        }
        void *q = NULL;
        if (gpumem_managed_alloc(&q, 100, 0) != GPUMEM_SUCCESS || gpumem_free(q) != GPUMEM_SUCCESS)
            ok = 0;
        printf("managed_ok=%d\n", ok);
        return 0;
    }
    return 2;
}

/* ------------------------------------------------------------------------ */
/* Parent side                                                               */
/* ------------------------------------------------------------------------ */

static char *g_self;

typedef struct {
    int exit_code; /* -1 when it did not exit normally */
    char out[8192];
    char err[16384];
} child_result_t;

/* Run the child role with the parent's environment minus GPUMEM_LOG/DISABLE/FALLBACK, plus `vars`
 * ("NAME=value", NULL-terminated; "NAME=" removes NAME). */
static int run_child(const char *role, const char *const *vars, child_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    /* Build the environment before fork. */
    size_t n = 0;
    while (environ[n])
        ++n;
    size_t nv = 0;
    while (vars && vars[nv])
        ++nv;
    char **envp = (char **)calloc(n + nv + 1, sizeof(char *));
    if (!envp)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        const char *e = environ[i];
        if (strncmp(e, "GPUMEM_LOG=", 11) == 0 || strncmp(e, "GPUMEM_DISABLE=", 15) == 0 ||
            strncmp(e, "GPUMEM_FALLBACK=", 16) == 0)
            continue;
        int overridden = 0;
        for (size_t j = 0; j < nv; ++j) {
            const char *eq = strchr(vars[j], '=');
            size_t len = eq ? (size_t)(eq - vars[j]) + 1 : strlen(vars[j]);
            if (strncmp(e, vars[j], len) == 0)
                overridden = 1;
        }
        if (!overridden)
            envp[k++] = (char *)e;
    }
    for (size_t j = 0; j < nv; ++j) {
        const char *eq = strchr(vars[j], '=');
        if (eq && eq[1] != '\0')
            envp[k++] = (char *)vars[j];
    }
    envp[k] = NULL;

    int po[2], pe[2];
    if (pipe(po) != 0 || pipe(pe) != 0) {
        free(envp);
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        close(po[1]);
        close(pe[1]);
        char *argv[] = {g_self, (char *)"--child", (char *)role, NULL};
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    free(envp);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return 0;
    }
    size_t no = 0, ne = 0;
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, 20000) <= 0)
            break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            char *buf = i == 0 ? r->out : r->err;
            size_t cap = i == 0 ? sizeof r->out : sizeof r->err;
            size_t *len = i == 0 ? &no : &ne;
            char tmp[1024];
            ssize_t got = read(fds[i].fd, tmp, sizeof tmp);
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
                continue;
            }
            size_t c = (size_t)got;
            if (*len + c >= cap)
                c = cap - 1 - *len;
            memcpy(buf + *len, tmp, c);
            *len += c;
        }
    }
    for (int i = 0; i < 2; ++i)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        r->exit_code = WEXITSTATUS(status);
    return 1;
}

/* The value of "key=value" in the child's stdout ("" when absent). */
static const char *value_of(const child_result_t *r, const char *key, char *buf, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = r->out;
    buf[0] = '\0';
    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1;
            const char *nl = strchr(v, '\n');
            size_t len = nl ? (size_t)(nl - v) : strlen(v);
            if (len >= cap)
                len = cap - 1;
            memcpy(buf, v, len);
            buf[len] = '\0';
            return buf;
        }
        p = strchr(p, '\n');
        if (p)
            ++p;
    }
    return buf;
}

/* Count stderr lines containing every needle (case-insensitive); report malformed lines. */
static int count_lines(const child_result_t *r, const char *needle1, const char *needle2, int *unprefixed)
{
    int count = 0;
    if (unprefixed)
        *unprefixed = 0;
    const char *p = r->err;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        if (len > 0) {
            if (strncmp(line, "gpumem:", 7) != 0 && unprefixed)
                ++*unprefixed;
            if ((!needle1 || tst_contains(line, needle1)) && (!needle2 || tst_contains(line, needle2)))
                ++count;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return count;
}

static void show(const child_result_t *r)
{
    printf("  child exit %d\n  stdout:\n%s  stderr:\n%s", r->exit_code, r->out, r->err);
}

static void test_forced_gpu_backend_unavailable(void)
{
    static const char *const names[] = {"cuda", "hip"};
    int checked = 0;
    for (size_t i = 0; i < TST_COUNT(names); ++i) {
        char var[64];
        snprintf(var, sizeof var, "GPUMEM_BACKEND=%s", names[i]);
        const char *vars[] = {var, NULL};
        child_result_t r;
        REQUIRE(run_child("init", vars, &r));
        char v[512];
        CHECK(r.exit_code == 0);
        if (strcmp(value_of(&r, "init", v, sizeof v), "GPUMEM_SUCCESS") == 0) {
            NOTE("GPUMEM_BACKEND=%s initialises here (a real device): check skipped", names[i]);
            CHECK(strcmp(value_of(&r, "backend", v, sizeof v), names[i]) == 0);
            continue;
        }
        ++checked;
        CHECKF(strcmp(value_of(&r, "init", v, sizeof v), "GPUMEM_ERROR_BACKEND_UNAVAILABLE") == 0,
               "GPUMEM_BACKEND=%s: gpumem_init gave %s", names[i], v);
        CHECKF(tst_contains(value_of(&r, "msg", v, sizeof v), names[i]), "GPUMEM_BACKEND=%s: the message does not name it: \"%s\"",
               names[i], v);
        /* A forced choice is honoured or reported, never silently replaced: implicit init fails too. */
        CHECKF(strcmp(value_of(&r, "malloc", v, sizeof v), "GPUMEM_ERROR_BACKEND_UNAVAILABLE") == 0,
               "GPUMEM_BACKEND=%s: gpumem_malloc gave %s", names[i], v);
        if (tst_failures_)
            show(&r);
    }
    if (!checked)
        SKIP("both GPU backends are available");
}

static void test_malformed_values_warn_once(void)
{
    child_result_t base;
    const char *host[] = {"GPUMEM_BACKEND=host", NULL};
    REQUIRE(run_child("basic", host, &base));
    char want_managed[32], v[64];
    value_of(&base, "managed", want_managed, sizeof want_managed);
    CHECK(strlen(want_managed) > 0);
    CHECKF(count_lines(&base, "gpumem:", NULL, NULL) == 0, "a clean environment printed:\n%s", base.err);

    static const struct {
        const char *var;
        const char *name;
    } cases[] = {
        {"GPUMEM_LOG=loud", "GPUMEM_LOG"},
        {"GPUMEM_DISABLE=bogus", "GPUMEM_DISABLE"},
        {"GPUMEM_FALLBACK=maybe", "GPUMEM_FALLBACK"},
        /* A sign behind a space once parsed as 2^64-1 bytes. */
        {"GPUMEM_PINNED_CACHE= -1", "GPUMEM_PINNED_CACHE"},
        {"GPUMEM_PINNED_CACHE=12abc", "GPUMEM_PINNED_CACHE"},
        {"GPUMEM_HOST_STRICT=yes", "GPUMEM_HOST_STRICT"},
    };
    for (size_t i = 0; i < TST_COUNT(cases); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", cases[i].var, NULL};
        child_result_t r;
        REQUIRE(run_child("basic", vars, &r));
        int before = tst_failures_;
        CHECK(r.exit_code == 0);
        CHECKF(strcmp(value_of(&r, "init", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: init gave %s", cases[i].var, v);
        CHECKF(strcmp(value_of(&r, "malloc", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: malloc gave %s", cases[i].var, v);
        /* The default is used. */
        CHECKF(strcmp(value_of(&r, "managed", v, sizeof v), want_managed) == 0, "%s: managed level %s, default gives %s",
               cases[i].var, v, want_managed);
        int unprefixed = 0;
        int n = count_lines(&r, "gpumem:", cases[i].name, &unprefixed);
        CHECKF(n == 1, "%s: %d warning lines naming %s, want exactly 1", cases[i].var, n, cases[i].name);
        CHECK(unprefixed == 0);
        if (tst_failures_ != before)
            show(&r);
    }

    /* A malformed GPUMEM_FALLBACK falls back to allow: a disabled feature is emulated. */
    const char *vars[] = {"GPUMEM_BACKEND=host", "GPUMEM_FALLBACK=maybe", "GPUMEM_DISABLE=managed", NULL};
    child_result_t r;
    REQUIRE(run_child("basic", vars, &r));
    snprintf(want_managed, sizeof want_managed, "%d", GPUMEM_SUPPORT_EMULATED);
    CHECKF(strcmp(value_of(&r, "managed", v, sizeof v), want_managed) == 0,
           "GPUMEM_FALLBACK=maybe with managed disabled: level %s, want EMULATED", v);

    /* A malformed GPUMEM_BACKEND means AUTO, which never fails. */
    const char *bvars[] = {"GPUMEM_BACKEND=bogus", NULL};
    REQUIRE(run_child("init", bvars, &r));
    CHECKF(strcmp(value_of(&r, "init", v, sizeof v), "GPUMEM_SUCCESS") == 0, "GPUMEM_BACKEND=bogus: init gave %s", v);
    CHECKF(count_lines(&r, "gpumem:", "GPUMEM_BACKEND", NULL) == 1, "GPUMEM_BACKEND=bogus is not reported once:\n%s",
           r.err);
}

/* Every size variable takes K/M/G/T and KiB/MiB/GiB/TiB, as users write sizes (GPUMEM_LIMIT=256M):
 * GPUMEM_LIMIT, spelled every way as 2 MiB, lets 1 MiB through, stops 3 MiB and 2 MiB + 1, and no
 * spelling is warned about. */
static void test_size_units(void)
{
    static const char *const two_mib[] = {
        "GPUMEM_LIMIT=2097152", "GPUMEM_LIMIT=2M",    "GPUMEM_LIMIT=2MiB", "GPUMEM_LIMIT=2m",
        "GPUMEM_LIMIT=2mib",    "GPUMEM_LIMIT=2 MiB", "GPUMEM_LIMIT=2048K", "GPUMEM_LIMIT=2048KiB",
        "GPUMEM_LIMIT=2048k",   "GPUMEM_LIMIT=2MB",   "GPUMEM_LIMIT=2Mi",  "GPUMEM_LIMIT= 2M ",
        "GPUMEM_LIMIT=2097152B",
    };
    char v[64];
    for (size_t i = 0; i < TST_COUNT(two_mib); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", two_mib[i], NULL};
        child_result_t r;
        REQUIRE(run_child("limit", vars, &r));
        int before = tst_failures_;
        CHECK(r.exit_code == 0);
        CHECKF(strcmp(value_of(&r, "malloc0", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: 1 MiB gave %s", two_mib[i], v);
        CHECKF(strcmp(value_of(&r, "malloc1", v, sizeof v), "GPUMEM_ERROR_OUT_OF_MEMORY") == 0,
               "%s: 3 MiB gave %s, want OUT_OF_MEMORY (a cap of 2 MiB)", two_mib[i], v);
        CHECKF(strcmp(value_of(&r, "malloc2", v, sizeof v), "GPUMEM_ERROR_OUT_OF_MEMORY") == 0,
               "%s: 2 MiB + 1 gave %s, want OUT_OF_MEMORY (a cap of 2 MiB)", two_mib[i], v);
        CHECKF(count_lines(&r, "GPUMEM_LIMIT", NULL, NULL) == 0, "%s was warned about:\n%s", two_mib[i], r.err);
        if (tst_failures_ != before)
            show(&r);
    }
    /* Larger units and the other size variable are taken without a warning. */
    static const char *const quiet[] = {"GPUMEM_LIMIT=1G", "GPUMEM_LIMIT=1GiB", "GPUMEM_LIMIT=1T", "GPUMEM_LIMIT=1tib",
                                        "GPUMEM_PINNED_CACHE=64M", "GPUMEM_PINNED_CACHE=2GiB",
                                        "GPUMEM_PINNED_CACHE=0K"};
    for (size_t i = 0; i < TST_COUNT(quiet); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", quiet[i], NULL};
        child_result_t r;
        REQUIRE(run_child("limit", vars, &r));
        CHECKF(strcmp(value_of(&r, "malloc1", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: 3 MiB gave %s", quiet[i], v);
        CHECKF(count_lines(&r, "gpumem:", NULL, NULL) == 0, "%s was warned about:\n%s", quiet[i], r.err);
    }
    /* Malformed sizes (a fraction, an unknown unit, an overflow) and a unit on a count are
     * warned about once, with the syntax, and the default (no cap) is used. */
    static const struct {
        const char *var, *name, *says;
    } bad[] = {
        {"GPUMEM_LIMIT=1.5G", "GPUMEM_LIMIT", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_LIMIT=2X", "GPUMEM_LIMIT", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_LIMIT=2MiBs", "GPUMEM_LIMIT", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_LIMIT=M", "GPUMEM_LIMIT", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_LIMIT=16777216T", "GPUMEM_LIMIT", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_PINNED_CACHE=-1M", "GPUMEM_PINNED_CACHE", "KiB, MiB, GiB, TiB"},
        {"GPUMEM_TRACE_MAX=1K", "GPUMEM_TRACE_MAX", "number of events"},
        /* Well formed, but no cap at all: the warning says that, not that a size was expected. */
        {"GPUMEM_LIMIT=0", "GPUMEM_LIMIT", "a cap of 0 would refuse every allocation; unset GPUMEM_LIMIT"},
        {"GPUMEM_LIMIT=0M", "GPUMEM_LIMIT", "a cap of 0 would refuse every allocation; unset GPUMEM_LIMIT"},
        {"GPUMEM_LIMIT=0%", "GPUMEM_LIMIT", "a cap of 0 would refuse every allocation; unset GPUMEM_LIMIT"},
    };
    for (size_t i = 0; i < TST_COUNT(bad); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", bad[i].var, NULL};
        child_result_t r;
        REQUIRE(run_child("limit", vars, &r));
        int before = tst_failures_;
        CHECKF(strcmp(value_of(&r, "malloc1", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: 3 MiB gave %s", bad[i].var, v);
        CHECKF(count_lines(&r, bad[i].name, "using the default", NULL) == 1, "%s: not warned about once", bad[i].var);
        CHECKF(count_lines(&r, bad[i].name, bad[i].says, NULL) == 1, "%s: the warning does not say \"%s\"",
               bad[i].var, bad[i].says);
        if (tst_failures_ != before)
            show(&r);
    }
}

/* GPUMEM_DISABLE with an unknown item: the known items apply, and the one warning says what was
 * ignored and what is disabled (it said "using the default" and disabled pools all the same). */
static void test_disable_unknown_item(void)
{
    char v[64], want_pools[32], want_managed[32];
    const char *only_pools[] = {"GPUMEM_BACKEND=host", "GPUMEM_DISABLE=pools", NULL};
    const char *none[] = {"GPUMEM_BACKEND=host", NULL};
    child_result_t r;
    REQUIRE(run_child("basic", only_pools, &r));
    value_of(&r, "pools", want_pools, sizeof want_pools);
    REQUIRE(run_child("basic", none, &r));
    value_of(&r, "managed", want_managed, sizeof want_managed);
    CHECKF(strcmp(value_of(&r, "pools", v, sizeof v), want_pools) != 0, "disabling pools changes nothing here");

    static const struct {
        const char *var, *ignored, *outcome;
        int pools_disabled;
    } cases[] = {
        {"GPUMEM_DISABLE=pools,nonsense", "ignoring 'nonsense'", "; disabling pools", 1},
        {"GPUMEM_DISABLE=nonsense, pools", "ignoring 'nonsense'", "; disabling pools", 1},
        {"GPUMEM_DISABLE=vmm,bogus,pools,other", "ignoring 'bogus', 'other'", "; disabling pools, vmm", 1},
        {"GPUMEM_DISABLE=bogus", "ignoring 'bogus'", "; no feature disabled", 0},
    };
    for (size_t i = 0; i < TST_COUNT(cases); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", cases[i].var, NULL};
        REQUIRE(run_child("basic", vars, &r));
        int before = tst_failures_;
        CHECK(r.exit_code == 0);
        CHECKF(strcmp(value_of(&r, "malloc", v, sizeof v), "GPUMEM_SUCCESS") == 0, "%s: malloc gave %s", cases[i].var, v);
        if (cases[i].pools_disabled)
            CHECKF(strcmp(value_of(&r, "pools", v, sizeof v), want_pools) == 0, "%s: pools level %s, want %s (disabled)",
                   cases[i].var, v, want_pools);
        else
            CHECKF(strcmp(value_of(&r, "pools", v, sizeof v), want_pools) != 0, "%s: pools disabled", cases[i].var);
        CHECKF(strcmp(value_of(&r, "managed", v, sizeof v), want_managed) == 0, "%s: managed level %s, want %s",
               cases[i].var, v, want_managed);
        int unprefixed = 0;
        CHECKF(count_lines(&r, "gpumem:", "GPUMEM_DISABLE", &unprefixed) == 1, "%s: not one warning", cases[i].var);
        CHECK(unprefixed == 0);
        CHECKF(count_lines(&r, cases[i].ignored, cases[i].outcome, NULL) == 1,
               "%s: the warning does not say \"%s ...%s\"", cases[i].var, cases[i].ignored, cases[i].outcome);
        CHECKF(count_lines(&r, "GPUMEM_DISABLE", "using the default", NULL) == 0,
               "%s: the warning says \"using the default\"", cases[i].var);
        if (tst_failures_ != before)
            show(&r);
    }
}

static void test_managed_fallback_logged_once(void)
{
    static const struct {
        const char *log; /* NULL = default (warn) */
        int want;
    } cases[] = {
        {"GPUMEM_LOG=info", 1},
        {NULL, 1},
        {"GPUMEM_LOG=warn", 1},
        {"GPUMEM_LOG=debug", -1}, /* at least one: debug may say more */
        {"GPUMEM_LOG=error", 0},
    };
    for (size_t i = 0; i < TST_COUNT(cases); ++i) {
        const char *vars[] = {"GPUMEM_BACKEND=host", "GPUMEM_DISABLE=managed", cases[i].log, NULL};
        child_result_t r;
        REQUIRE(run_child("managed", vars, &r));
        int before = tst_failures_;
        char v[64];
        CHECK(r.exit_code == 0);
        CHECKF(strcmp(value_of(&r, "managed_ok", v, sizeof v), "1") == 0, "emulated managed allocations failed");
        int unprefixed = 0;
        int n = count_lines(&r, "gpumem:", "managed", &unprefixed);
        if (cases[i].want >= 0)
            CHECKF(n == cases[i].want, "%s: %d lines about managed memory for 6 allocations, want %d",
                   cases[i].log ? cases[i].log : "GPUMEM_LOG unset", n, cases[i].want);
        else
            CHECKF(n >= 1, "%s: no line about the managed fallback", cases[i].log);
        if (cases[i].log && strcmp(cases[i].log, "GPUMEM_LOG=debug") != 0)
            CHECKF(unprefixed == 0, "stderr lines without the gpumem: prefix");
        if (cases[i].want == 0)
            CHECKF(count_lines(&r, "gpumem:", NULL, NULL) == 0, "GPUMEM_LOG=error printed:\n%s", r.err);
        if (tst_failures_ != before)
            show(&r);
    }
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2]);
    static const tst_case_t cases[] = {
        TEST(test_forced_gpu_backend_unavailable),
        TEST(test_malformed_values_warn_once),
        TEST(test_size_units),
        TEST(test_disable_unknown_item),
        TEST(test_managed_fallback_logged_once),
    };
    return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK);
}
