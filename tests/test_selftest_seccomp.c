/* GPUMEM_SELFTEST in a process that may not pass descriptors to another process, as under a
 * container's seccomp profile: a filter makes sendmsg (how SCM_RIGHTS is sent) fail with EPERM.
 *
 * Sharing VMM handles (and the pools' sharing, which needs the same descriptor passing) is then
 * BROKEN with the test's reason: ipc_handle_types loses GPUMEM_HANDLE_POSIX_FD, and a shareable
 * handle or pool is refused saying why.  VMM itself, which needs no other process, stays.
 * seccomp cannot look inside sendmsg's message, so the filter refuses every sendmsg; the test
 * process sends nothing else.  Where a filter cannot be installed, the case is skipped.
 * SPDX-License-Identifier: MIT */
#include "harness.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* 0 when the filter is in place; else why it is not. */
static const char *refuse_sendmsg(void)
{
#if defined(NATIVE_AUDIT_ARCH) && defined(__NR_sendmsg)
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return "prctl(PR_SET_NO_NEW_PRIVS) refused";
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        return "this system does not let a process install a seccomp filter";
    return NULL;
#else
    return "no seccomp filter for this architecture";
#endif
}

static void test_sharing_refused_by_seccomp(void)
{
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    gpumem_device_info_t before = tst_info(0);
    if (!(before.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) || before.virtual_memory != GPUMEM_SUPPORT_NATIVE)
        SKIP("no shareable VMM handles here");
    gpumem_finalize();
    const char *why_not = refuse_sendmsg();
    if (why_not) {
        gpumem_init(GPUMEM_BACKEND_AUTO);
        SKIP("%s", why_not);
    }
    setenv("GPUMEM_SELFTEST", "1", 1);
    REQUIRE_OK(gpumem_init(GPUMEM_BACKEND_AUTO));
    gpumem_device_info_t i = tst_info(0);
    CHECKF(!(i.ipc_handle_types & GPUMEM_HANDLE_POSIX_FD), "POSIX handles still offered (ipc_handle_types 0x%x)",
           (unsigned)i.ipc_handle_types);
    CHECK(!(i.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD));
    CHECK(i.virtual_memory == GPUMEM_SUPPORT_NATIVE);

    gpumem_alloc_props_t props = GPUMEM_ALLOC_PROPS_INIT;
    props.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_mem_handle_t h = 0;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_mem_create(&h, i.vmm_granularity, &props));
    const char *msg = gpumem_last_error_message();
    CHECKF(tst_contains(msg, "self-test") && tst_contains(msg, "child process") && tst_contains(msg, "sendmsg"),
           "the refusal does not give the test's reason: %s", msg);

    gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
    pp.handle_types = GPUMEM_HANDLE_POSIX_FD;
    gpumem_pool_t pool = NULL;
    CHECK_STATUS(GPUMEM_ERROR_NOT_SUPPORTED, gpumem_pool_create(&pool, &pp));

    /* Memory nobody shares is untouched. */
    props.handle_types = GPUMEM_HANDLE_NONE;
    CHECK_OK(gpumem_mem_create(&h, i.vmm_granularity, &props));
    if (h)
        CHECK_OK(gpumem_mem_release(h));
    gpumem_finalize();
    unsetenv("GPUMEM_SELFTEST");
    gpumem_init(GPUMEM_BACKEND_AUTO);
}

static const tst_case_t cases[] = {TEST(test_sharing_refused_by_seccomp)};

int main(int argc, char **argv) { return tst_main(argc, argv, cases, TST_COUNT(cases), TST_NO_LEAK_CHECK); }
