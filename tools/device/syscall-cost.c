/* What the kernel checks of memory cost on this machine, to explain what gpumem's check of memory
 * it does not know costs a copy (src/base/cpu_reach.cpp): a null system call, process_vm_readv of
 * one byte, a 1-byte write into a pipe (the read check), a write+read through a pipe (the write
 * check), msync and mincore of one page.  Medians of 9 rounds of 20,000 calls, ns per call.
 *
 *   cc -O2 -o syscall-cost tools/device/syscall-cost.c && ./syscall-cost
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { CALLS = 20000, ROUNDS = 9 };
static _Alignas(4096) char page[4096];
static int fds[2];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void one(int which)
{
    char b;
    struct iovec l = {&b, 1}, r = {page, 1};
    unsigned char v;
    switch (which) {
    case 0: syscall(SYS_getppid); break;
    case 1: process_vm_readv(getpid(), &l, 1, &r, 1, 0); break;
    case 2:
        if (write(fds[1], page, 1) != 1) {
            char d[65536];
            while (read(fds[0], d, sizeof d) > 0) {
            }
        }
        break;
    case 3:
        if (write(fds[1], page, 1) == 1 && read(fds[0], page, 1) != 1)
            abort();
        break;
    case 4: msync(page, 4096, MS_ASYNC); break;
    case 5: mincore(page, 4096, &v); break;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    static const char *names[] = {"getppid (a null call)", "process_vm_readv, 1 byte", "write 1 byte into a pipe",
                                  "write + read 1 byte, pipe", "msync 1 page", "mincore 1 page"};
    page[0] = 1;
    if (pipe2(fds, O_NONBLOCK) != 0)
        return 1;
    fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
    for (int w = 0; w < 6; ++w) {
        if (w == 3) { /* the write check's pipe is empty between checks */
            char d[65536];
            while (read(fds[0], d, sizeof d) > 0) {
            }
        }
        double t[ROUNDS];
        for (int r = 0; r < ROUNDS; ++r) {
            double t0 = now();
            for (int i = 0; i < CALLS; ++i)
                one(w);
            t[r] = (now() - t0) / CALLS;
        }
        qsort(t, ROUNDS, sizeof t[0], cmp);
        printf("%-28s %8.0f ns\n", names[w], t[ROUNDS / 2]);
    }
    return 0;
}
