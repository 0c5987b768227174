/*
 * ipc_pool: sharing a memory pool between two processes, done right.
 *
 * The parent exports its pool as a file descriptor and one allocation as 64
 * opaque bytes; the child imports both and reads and writes the same memory.
 *
 * How the descriptor travels matters.  A file descriptor is an index into
 * the *sending* process's descriptor table: writing the number 7 into a pipe
 * gives the other process a 7 that names nothing, or some unrelated file of
 * its own.  Only the kernel can give another process a descriptor for the
 * same object, and it does so for a descriptor sent as SCM_RIGHTS ancillary
 * data over an AF_UNIX socket: the receiver gets a new number in its own
 * table.  gpumem_ipc_send_fd / gpumem_ipc_recv_fd do exactly that.  (The 64
 * bytes of pointer export data are plain bytes and may go any way.)
 *
 * We fork *before* gpumem is initialised: a GPU runtime's state does not
 * survive fork (CUDA forbids using it in the child), so each process starts
 * gpumem on its own, as two unrelated programs would.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define BYTES ((size_t)1 << 20)
#define SKIP 77 /* meson's "skipped" exit status */

/* What travels besides the descriptor. */
struct message {
    int32_t ok; /* 0: the parent cannot export (no IPC here); the child skips */
    gpumem_pool_ptr_export_data_t ptr;
};

static void write_all(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n > 0;) {
        ssize_t k = write(fd, p, n);
        EXPECT(k > 0, "write to the socket failed");
        p += k;
        n -= (size_t)k;
    }
}

static void read_all(int fd, void *buf, size_t n)
{
    for (char *p = buf; n > 0;) {
        ssize_t k = read(fd, p, n);
        EXPECT(k > 0, "read from the socket failed (peer gone?)");
        p += k;
        n -= (size_t)k;
    }
}

/* Every byte of the shared allocation should be `value`. */
static void expect_all(const void *dev, unsigned char value, const char *who)
{
    unsigned char *host = malloc(BYTES);
    EXPECT(host != NULL, "host malloc");
    CHECK(gpumem_memcpy(host, dev, BYTES));
    for (size_t i = 0; i < BYTES; i++)
        EXPECT(host[i] == value, "%s: byte %zu is 0x%02x, not 0x%02x", who, i, host[i], value);
    free(host);
}

static int child(int sock)
{
    struct message msg;
    int32_t fd;
    read_all(sock, &msg, sizeof msg);
    if (!msg.ok)
        return SKIP;
    CHECK(gpumem_ipc_recv_fd(sock, &fd)); /* a descriptor of our own for the parent's pool */

    gpumem_pool_t pool;
    void *shared;
    CHECK(gpumem_pool_import_from_shareable_handle(&pool, fd, GPUMEM_HANDLE_POSIX_FD));
    close(fd); /* the import does not keep it */
    CHECK(gpumem_pool_import_pointer(&shared, pool, &msg.ptr));

    expect_all(shared, 0x5a, "child reads the parent's data");
    CHECK(gpumem_memset(shared, 0xc3, BYTES));
    CHECK(gpumem_device_synchronize()); /* the write is done before we say so */

    /* The importer lets go first; then the parent may free. */
    CHECK(gpumem_free(shared));
    CHECK(gpumem_pool_destroy(pool));
    write_all(sock, "d", 1);
    CHECK(gpumem_finalize());
    return 0;
}

static int parent(int sock, pid_t pid)
{
    int32_t device;
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    struct message msg;
    memset(&msg, 0, sizeof msg);
    CHECK(gpumem_get_device(&device));
    CHECK(gpumem_device_get_info(device, &info));

    gpumem_pool_t pool = NULL;
    void *shared = NULL;
    int32_t fd = -1;
    msg.ok = (info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;
    if (msg.ok) {
        /* Only a pool made shareable can be exported. */
        gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
        props.device = device;
        props.handle_types = GPUMEM_HANDLE_POSIX_FD;
        CHECK(gpumem_pool_create(&pool, &props));
        CHECK(gpumem_malloc_from_pool_async(&shared, BYTES, pool, NULL));
        CHECK(gpumem_memset_async(shared, 0x5a, BYTES, NULL));
        CHECK(gpumem_stream_synchronize(NULL)); /* the data is there before the child looks */
        CHECK(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
        CHECK(gpumem_pool_export_pointer(&msg.ptr, shared));
    } else {
        printf("ipc_pool: this device exports no POSIX fd handles; skipped\n");
    }

    write_all(sock, &msg, sizeof msg);
    if (msg.ok) {
        CHECK(gpumem_ipc_send_fd(sock, fd));
        close(fd); /* the child has its own descriptor now */
        char done;
        read_all(sock, &done, 1); /* the child has written and let go */
        expect_all(shared, 0xc3, "parent reads the child's data");
        CHECK(gpumem_free(shared));
        CHECK(gpumem_pool_destroy(pool));
    }

    int wstatus;
    EXPECT(waitpid(pid, &wstatus, 0) == pid, "waitpid");
    EXPECT(WIFEXITED(wstatus), "the child died abnormally");
    int code = WEXITSTATUS(wstatus);
    if (code == 0 && msg.ok)
        printf("ipc_pool: OK (both processes saw each other's writes)\n");
    CHECK(gpumem_finalize());
    return code;
}

int main(void)
{
    int sv[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    fflush(stdout); /* so that buffered output is not printed twice */
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) {
        close(sv[0]);
        return child(sv[1]);
    }
    close(sv[1]);
    return parent(sv[0], pid);
}
