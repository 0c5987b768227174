/*
 * mpi_pool: gpumem in an MPI job.
 *
 *   mpirun -np 4 ./mpi_pool          (any number of ranks, on any number of nodes)
 *
 * 1. Each rank picks its device from its rank on the node (MPI_Comm_split_type
 *    with MPI_COMM_TYPE_SHARED): local rank r uses device r % device_count, the
 *    usual one-rank-per-GPU layout, whatever the launcher's binding.
 * 2. The ranks of one node share one gpumem pool.  The node's first rank
 *    creates it shareable (handle_types = GPUMEM_HANDLE_POSIX_FD), exports it as
 *    a file descriptor and one allocation as 64 opaque bytes, and hands both to
 *    the other local ranks over an AF_UNIX socket.  A descriptor can only
 *    travel as SCM_RIGHTS over such a socket (gpumem_ipc_send_fd/_recv_fd), not
 *    through MPI, which would send the number, meaningless in another process.
 *    The socket's path is derived from a name rank 0 broadcasts, so the ranks
 *    agree on it with nothing else shared.  Each local rank then writes its
 *    slot of the shared allocation and the node's first rank checks them all.
 * 3. The ranks pass data around a ring with MPI, from gpumem memory of each
 *    kind.  Host-accessible kinds (pinned, registered, managed) go to MPI as
 *    they are.  Device memory goes to MPI directly only when the MPI is
 *    GPU-aware (docs/mpi.md); otherwise it is staged through pinned memory.
 *
 * Where a device cannot share pools (gpumem's own pool on a GPU, or
 * GPUMEM_DISABLE=ipc), step 2 is skipped with a message and step 3 still runs.
 *
 * Set GPUMEM_MPI_GPU_AWARE=1 to pass device memory to MPI directly (only with a
 * GPU-aware MPI, on the backend it was built for), =0 to always stage.
 * Otherwise the example asks Open MPI (MPIX_Query_cuda_support /
 * MPIX_Query_rocm_support) when it can, and stages when unsure.
 *
 * SPDX-License-Identifier: MIT
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support, where this Open MPI has it */
#endif

#include "check.h"

#define COUNT 4096 /* ints per slot and per message */

/* An MPI call that fails aborts the whole job (a rank that returned alone would hang the rest). */
#define MPI_CHECK(call)                                                                            \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS) {                                                                  \
            char msg_[MPI_MAX_ERROR_STRING];                                                       \
            int len_ = 0;                                                                          \
            MPI_Error_string(rc_, msg_, &len_);                                                    \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, msg_);            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

/* What the node's first rank sends each local rank besides the descriptor. */
struct share_msg {
    int32_t ok; /* 0: no pool sharing on this node (the reason is printed by the sender) */
    gpumem_pool_ptr_export_data_t ptr;
};

static int world_rank, world_size, local_rank, local_size;

static void write_all(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n > 0;) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        EXPECT(k > 0, "write to the local socket failed");
        p += k;
        n -= (size_t)k;
    }
}

static void read_all(int fd, void *buf, size_t n)
{
    for (char *p = buf; n > 0;) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        EXPECT(k > 0, "read from the local socket failed (peer gone?)");
        p += k;
        n -= (size_t)k;
    }
}

/*
 * The socket's path: $TMPDIR (or /tmp) / gpumem-<job name>-<world rank of the
 * node's first rank>.sock.  The job name comes from rank 0 (its pid and the
 * time), so two jobs on one node do not meet.  Every rank of the node computes
 * the same path.  sun_path holds 108 bytes: a long $TMPDIR falls back to /tmp.
 */
static void socket_path(struct sockaddr_un *addr, const char *job, int leader)
{
    const char *dir = getenv("TMPDIR");
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    if (dir == NULL || dir[0] == '\0' ||
        (size_t)snprintf(addr->sun_path, sizeof addr->sun_path, "%s/gpumem-%s-%d.sock", dir, job,
                         leader) >= sizeof addr->sun_path)
        snprintf(addr->sun_path, sizeof addr->sun_path, "/tmp/gpumem-%s-%d.sock", job, leader);
}

/* Each local rank writes its slot (COUNT ints of value world_rank) of the node's shared allocation. */
static void fill_slot(int *shared)
{
    int *host = malloc(COUNT * sizeof *host);
    EXPECT(host != NULL, "host malloc");
    for (int i = 0; i < COUNT; i++)
        host[i] = world_rank;
    CHECK(gpumem_memcpy(shared + (size_t)local_rank * COUNT, host, COUNT * sizeof *host));
    CHECK(gpumem_device_synchronize()); /* written before the barrier says so */
    free(host);
}

/* Step 2.  Returns 1 when the node shared a pool, 0 when sharing was skipped. */
static int share_pool_on_node(MPI_Comm node, const char *job, int device)
{
    int leader_world = world_rank;
    MPI_CHECK(MPI_Bcast(&leader_world, 1, MPI_INT, 0, node));
    struct sockaddr_un addr;
    socket_path(&addr, job, leader_world);
    size_t bytes = (size_t)local_size * COUNT * sizeof(int);

    if (local_rank == 0) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        CHECK(gpumem_device_get_info(device, &info));
        struct share_msg msg;
        memset(&msg, 0, sizeof msg);
        msg.ok = (info.pool_ipc_handle_types & GPUMEM_HANDLE_POSIX_FD) != 0;

        gpumem_pool_t pool = NULL;
        int *shared = NULL;
        int32_t fd = -1;
        if (msg.ok) {
            gpumem_pool_props_t props = GPUMEM_POOL_PROPS_INIT;
            props.device = device;
            props.handle_types = GPUMEM_HANDLE_POSIX_FD; /* only a shareable pool can be exported */
            CHECK(gpumem_pool_create(&pool, &props));
            CHECK(gpumem_malloc_from_pool_async((void **)&shared, bytes, pool, NULL));
            CHECK(gpumem_memset_async(shared, 0xff, bytes, NULL));
            CHECK(gpumem_stream_synchronize(NULL));
            CHECK(gpumem_pool_export_to_shareable_handle(&fd, pool, GPUMEM_HANDLE_POSIX_FD));
            CHECK(gpumem_pool_export_pointer(&msg.ptr, shared));
        } else {
            printf("mpi_pool: node of rank %d: device %d (%s) shares no pools here; "
                   "pool sharing skipped\n",
                   world_rank, device, info.name);
        }

        /* Listen before the barrier, so that the others' connect finds the socket. */
        int lsock = socket(AF_UNIX, SOCK_STREAM, 0);
        EXPECT(lsock >= 0, "socket: %s", strerror(errno));
        unlink(addr.sun_path); /* a stale socket of a crashed job with the same name */
        EXPECT(bind(lsock, (struct sockaddr *)&addr, sizeof addr) == 0, "bind %s: %s",
               addr.sun_path, strerror(errno));
        EXPECT(listen(lsock, local_size) == 0, "listen: %s", strerror(errno));
        MPI_CHECK(MPI_Barrier(node));
        for (int i = 1; i < local_size; i++) {
            int conn = accept(lsock, NULL, NULL);
            EXPECT(conn >= 0, "accept: %s", strerror(errno));
            write_all(conn, &msg, sizeof msg);
            if (msg.ok)
                CHECK(gpumem_ipc_send_fd(conn, fd)); /* the receiver gets its own descriptor */
            close(conn);
        }
        close(lsock);
        unlink(addr.sun_path); /* everyone is connected: the name is no longer needed */
        if (fd >= 0)
            close(fd);

        if (msg.ok)
            fill_slot(shared);
        MPI_CHECK(MPI_Barrier(node)); /* every slot written */
        if (msg.ok) {
            int *host = malloc(bytes);
            EXPECT(host != NULL, "host malloc");
            CHECK(gpumem_memcpy(host, shared, bytes));
            int *ranks = malloc((size_t)local_size * sizeof *ranks);
            EXPECT(ranks != NULL, "host malloc");
            MPI_CHECK(MPI_Gather(&world_rank, 1, MPI_INT, ranks, 1, MPI_INT, 0, node));
            for (int r = 0; r < local_size; r++)
                for (int i = 0; i < COUNT; i++)
                    EXPECT(host[(size_t)r * COUNT + i] == ranks[r],
                           "shared slot %d [%d] is %d, not rank %d's %d", r, i,
                           host[(size_t)r * COUNT + i], r, ranks[r]);
            free(ranks);
            free(host);
        }
        MPI_CHECK(MPI_Barrier(node)); /* the importers have let go: now the memory may go */
        if (msg.ok) {
            CHECK(gpumem_free(shared));
            CHECK(gpumem_pool_destroy(pool));
        }
        return msg.ok;
    }

    MPI_CHECK(MPI_Barrier(node)); /* the node's first rank listens */
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT(sock >= 0, "socket: %s", strerror(errno));
    EXPECT(connect(sock, (struct sockaddr *)&addr, sizeof addr) == 0, "connect %s: %s",
           addr.sun_path, strerror(errno));
    struct share_msg msg;
    read_all(sock, &msg, sizeof msg);
    gpumem_pool_t pool = NULL;
    int *shared = NULL;
    if (msg.ok) {
        int32_t fd;
        CHECK(gpumem_ipc_recv_fd(sock, &fd));
        CHECK(gpumem_pool_import_from_shareable_handle(&pool, fd, GPUMEM_HANDLE_POSIX_FD));
        close(fd); /* the import does not keep it */
        CHECK(gpumem_pool_import_pointer((void **)&shared, pool, &msg.ptr));
        fill_slot(shared);
    }
    close(sock);
    MPI_CHECK(MPI_Barrier(node)); /* every slot written */
    if (msg.ok)
        MPI_CHECK(MPI_Gather(&world_rank, 1, MPI_INT, NULL, 1, MPI_INT, 0, node));
    if (msg.ok) {
        CHECK(gpumem_free(shared)); /* importers let go first */
        CHECK(gpumem_pool_destroy(pool));
    }
    MPI_CHECK(MPI_Barrier(node));
    return msg.ok;
}

/* Whether device memory may go to MPI as it is (see the comment at the top). */
static int mpi_takes_device_memory(int32_t backend)
{
    const char *env = getenv("GPUMEM_MPI_GPU_AWARE");
    if (env != NULL && env[0] != '\0')
        return env[0] == '1';
    (void)backend;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (backend == GPUMEM_BACKEND_CUDA && MPIX_Query_cuda_support())
        return 1;
#endif
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
    if (backend == GPUMEM_BACKEND_HIP && MPIX_Query_rocm_support())
        return 1;
#endif
    return 0;
}

/* Memory the CPU (and so any MPI) can read and write: pinned, registered, managed. */
static int host_accessible(const void *ptr)
{
    gpumem_pointer_info_t info = GPUMEM_POINTER_INFO_INIT;
    CHECK(gpumem_pointer_get_info(ptr, &info));
    return info.kind == GPUMEM_KIND_HOST_PINNED || info.kind == GPUMEM_KIND_HOST_REGISTERED ||
           info.kind == GPUMEM_KIND_MANAGED || info.kind == GPUMEM_KIND_UNKNOWN;
}

/*
 * Send COUNT ints from `send` to the next rank and receive COUNT ints from
 * the previous one into `recv`, both gpumem memory of any kind.  `staging`
 * is pinned memory of 2 * COUNT ints.
 */
static void ring_exchange(void *send, void *recv, int direct_device, int *staging)
{
    int next = (world_rank + 1) % world_size, prev = (world_rank + world_size - 1) % world_size;
    size_t bytes = COUNT * sizeof(int);
    int send_direct = direct_device || host_accessible(send);
    int recv_direct = direct_device || host_accessible(recv);
    void *sbuf = send_direct ? send : staging;
    void *rbuf = recv_direct ? recv : staging + COUNT;
    if (!send_direct)
        CHECK(gpumem_memcpy(sbuf, send, bytes)); /* device -> pinned */
    /* Managed memory: the CPU may touch it only when the device is done with it. */
    CHECK(gpumem_device_synchronize());
    MPI_CHECK(MPI_Sendrecv(sbuf, COUNT, MPI_INT, next, 0, rbuf, COUNT, MPI_INT, prev, 0,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    if (!recv_direct)
        CHECK(gpumem_memcpy(recv, rbuf, bytes)); /* pinned -> device */
}

static void expect_from_prev(const void *recv, const char *what)
{
    int prev = (world_rank + world_size - 1) % world_size;
    int *host = malloc(COUNT * sizeof *host);
    EXPECT(host != NULL, "host malloc");
    CHECK(gpumem_memcpy(host, recv, COUNT * sizeof *host));
    for (int i = 0; i < COUNT; i++)
        EXPECT(host[i] == prev * 1000 + i, "rank %d, %s: element %d is %d, not %d", world_rank,
               what, i, host[i], prev * 1000 + i);
    free(host);
}

int main(int argc, char **argv)
{
    MPI_CHECK(MPI_Init(&argc, &argv));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));

    /* 1. Local rank -> device. */
    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                                  &node));
    MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    MPI_CHECK(MPI_Comm_size(node, &local_size));
    int32_t devices, backend;
    CHECK(gpumem_device_count(&devices));
    CHECK(gpumem_get_backend(&backend));
    int32_t device = local_rank % devices;
    CHECK(gpumem_set_device(device));

    /* 2. One pool per node, shared by IPC. */
    char job[32];
    if (world_rank == 0)
        snprintf(job, sizeof job, "%ld-%ld", (long)getpid(), (long)time(NULL));
    MPI_CHECK(MPI_Bcast(job, sizeof job, MPI_CHAR, 0, MPI_COMM_WORLD));
    int shared = share_pool_on_node(node, job, device);

    /* 3. A ring exchange from each kind of memory. */
    int direct = mpi_takes_device_memory(backend);
    int *staging;
    CHECK(gpumem_host_alloc((void **)&staging, 2 * COUNT * sizeof(int), 0));
    size_t bytes = COUNT * sizeof(int);
    int *pattern = malloc(bytes);
    EXPECT(pattern != NULL, "host malloc");
    for (int i = 0; i < COUNT; i++)
        pattern[i] = world_rank * 1000 + i;

    static const char *const names[] = {"device", "pinned", "managed", "stream-ordered"};
    for (int k = 0; k < 4; k++) {
        void *send = NULL, *recv = NULL;
        switch (k) {
        case 0:
            CHECK(gpumem_malloc(&send, bytes));
            CHECK(gpumem_malloc(&recv, bytes));
            break;
        case 1:
            CHECK(gpumem_host_alloc(&send, bytes, 0));
            CHECK(gpumem_host_alloc(&recv, bytes, 0));
            break;
        case 2:
            CHECK(gpumem_managed_alloc(&send, bytes, GPUMEM_ATTACH_GLOBAL));
            CHECK(gpumem_managed_alloc(&recv, bytes, GPUMEM_ATTACH_GLOBAL));
            break;
        default:
            CHECK(gpumem_malloc_async(&send, bytes, NULL));
            CHECK(gpumem_malloc_async(&recv, bytes, NULL));
            break;
        }
        CHECK(gpumem_memcpy(send, pattern, bytes));
        CHECK(gpumem_memset(recv, 0, bytes));
        ring_exchange(send, recv, direct, staging);
        expect_from_prev(recv, names[k]);
        if (k == 1) {
            CHECK(gpumem_host_free(send));
            CHECK(gpumem_host_free(recv));
        } else {
            CHECK(gpumem_free(send));
            CHECK(gpumem_free(recv));
        }
    }
    free(pattern);
    CHECK(gpumem_host_free(staging));

    int all_shared = 0;
    MPI_CHECK(MPI_Allreduce(&shared, &all_shared, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    if (world_rank == 0)
        printf("mpi_pool: OK: %d ranks; pool sharing %s; device memory to MPI %s\n", world_size,
               all_shared ? "on every node" : "skipped on some node",
               direct ? "directly" : "staged through pinned memory");
    MPI_CHECK(MPI_Comm_free(&node));
    CHECK(gpumem_finalize());
    MPI_CHECK(MPI_Finalize());
    return 0;
}
