/*
 * gpumem: one C ABI over every way a GPU program holds memory.
 *
 * The contract of this header is stable: names, argument order and numeric
 * values never change once released.  Every function returns a
 * gpumem_status_t unless it says "returns".
 * Output parameters come first, as in the CUDA and HIP calls gpumem mirrors
 * (gpumem_malloc(&ptr, size) as cudaMalloc(&ptr, size)), except in the calls that
 * name what they ask about first and give the answer last: gpumem_device_get_info,
 * gpumem_pointer_get_info, gpumem_pool_get_attribute, gpumem_buffer_data,
 * gpumem_buffer_size, gpumem_stream_wrap, gpumem_ipc_recv_fd and
 * gpumem_workarounds_get (its count).
 * Every function is thread-safe and no C++ exception crosses this ABI.
 *
 * SPDX-License-Identifier: MIT
 */
/**
 * @file gpumem.h
 * @brief The gpumem API: status codes, backends, devices, streams and events,
 *        device/pinned/managed memory, pointer introspection and statistics,
 *        stream-ordered pools, virtual memory, growable buffers and IPC.
 *
 * Every function returns a ::gpumem_status_t (::GPUMEM_SUCCESS or an error,
 * with gpumem_last_error_message() saying what failed and what to do) unless
 * its documentation says otherwise.
 * Output parameters come first, as in the CUDA and HIP calls gpumem mirrors
 * (gpumem_malloc(&ptr, size) as cudaMalloc(&ptr, size)), except in the calls that
 * name what they ask about first and give the answer last: gpumem_device_get_info,
 * gpumem_pointer_get_info, gpumem_pool_get_attribute, gpumem_buffer_data,
 * gpumem_buffer_size, gpumem_stream_wrap, gpumem_ipc_recv_fd and
 * gpumem_workarounds_get (its count).
 * Extensible structs begin with their size: start from their `_INIT` macro.
 */
/**
 * @file gpumem_version.h
 * @brief The version of the headers (included by gpumem.h).
 */
/** @def GPUMEM_VERSION_MAJOR
 *  @brief Major version of the headers: a new major may break the ABI. */
/** @def GPUMEM_VERSION_MINOR
 *  @brief Minor version of the headers. */
/** @def GPUMEM_VERSION_PATCH
 *  @brief Patch version of the headers. */
/** @def GPUMEM_VERSION
 *  @brief The headers' version as one number, major*10000+minor*100+patch;
 *         compare with gpumem_version() for the library's.  A program that
 *         uses the 0.2 functions (version node GPUMEM_0.2) tests
 *         `#if GPUMEM_VERSION >= 200` when it is built and
 *         `gpumem_version() >= 200` when it runs. */
#ifndef GPUMEM_GPUMEM_H
#define GPUMEM_GPUMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(_WIN32)
#include <sys/types.h> /* ssize_t, for the framework allocator hooks */
#endif

#include "gpumem/gpumem_version.h"

/** @def GPUMEM_API
 *  @brief Marks the exported functions (default visibility when building the library; empty for users). */
#if defined(GPUMEM_BUILDING_LIBRARY)
#define GPUMEM_API __attribute__((visibility("default")))
#else
#define GPUMEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/** Result of every gpumem call (0 is success). */
typedef int32_t gpumem_status_t;

#define GPUMEM_SUCCESS 0 /**< the call succeeded */
#define GPUMEM_ERROR_INVALID_VALUE 1       /**< bad argument */
#define GPUMEM_ERROR_OUT_OF_MEMORY 2       /**< the allocation cannot be satisfied */
#define GPUMEM_ERROR_NOT_SUPPORTED 3       /**< feature absent and its fallback off */
#define GPUMEM_ERROR_NO_DEVICE 4           /**< no device for the requested backend */
#define GPUMEM_ERROR_INVALID_DEVICE 5      /**< device id out of range */
#define GPUMEM_ERROR_INVALID_POINTER 6     /**< not a live allocation of the kind this call takes */
#define GPUMEM_ERROR_INVALID_HANDLE 7      /**< stream, event, pool, buffer or memory handle not live */
#define GPUMEM_ERROR_BACKEND_UNAVAILABLE 8 /**< the backend's runtime cannot be loaded or started */
#define GPUMEM_ERROR_BACKEND 9             /**< the vendor runtime failed */
#define GPUMEM_ERROR_IPC 10                /**< a shareable handle could not be exported/sent/received/imported */
#define GPUMEM_ERROR_BUSY 11               /**< outstanding work or allocations the call cannot wait for */

/**
 * @brief Name of a status code ("GPUMEM_ERROR_INVALID_VALUE").
 * @param status any value; unknown values give "GPUMEM_ERROR_UNKNOWN".
 * @return a static string, never NULL.
 */
GPUMEM_API const char *gpumem_status_string(gpumem_status_t status);

/**
 * @brief The calling thread's last failure in words: what was asked, what
 *        failed and what to do.  Thread-local, never NULL ("" before any failure).
 * @return a string valid until the next gpumem call on this thread.
 */
GPUMEM_API const char *gpumem_last_error_message(void);

/* ------------------------------------------------------------------------ */
/* Version, init, backends                                                   */
/* ------------------------------------------------------------------------ */

#define GPUMEM_BACKEND_AUTO 0 /**< pick at init: GPUMEM_BACKEND, else HIP, CUDA (with a device), else HOST */
#define GPUMEM_BACKEND_HOST 1 /**< CPU memory standing in for the device; runs everywhere */
#define GPUMEM_BACKEND_CUDA 2 /**< the CUDA driver (libcuda.so.1, loaded at run time) */
#define GPUMEM_BACKEND_HIP 3 /**< the HIP runtime (libamdhip64, loaded at run time) */

/**
 * @brief Returns the run-time library's GPUMEM_VERSION (major*10000+minor*100+patch).
 * @return major*10000+minor*100+patch of the library loaded.
 */
GPUMEM_API int32_t gpumem_version(void);

/**
 * @brief Initialise gpumem with a backend.  Optional: the first call of any
 *        other function does gpumem_init(GPUMEM_BACKEND_AUTO).
 * @param backend GPUMEM_BACKEND_*; AUTO reads GPUMEM_BACKEND, else tries HIP,
 *        CUDA (each counts only with at least one device), then HOST.
 *        After gpumem_finalize it initialises afresh.  In a process forked
 *        from one that had initialised gpumem, the parent's state is unusable
 *        (as in CUDA): every call except gpumem_init, gpumem_finalize and the
 *        version, status-string, last-error and backend-name queries returns
 *        BACKEND_UNAVAILABLE until the child calls gpumem_finalize.
 * @return SUCCESS; BACKEND_UNAVAILABLE when an explicitly requested backend
 *         cannot load; INVALID_VALUE for an unknown backend; BUSY when already
 *         initialised with a different backend (call gpumem_finalize first),
 *         in a fork child that has not called gpumem_finalize yet, or when
 *         called from a trace callback run by gpumem_init/gpumem_finalize.
 */
GPUMEM_API gpumem_status_t gpumem_init(int32_t backend);

/**
 * @brief Release everything still held; leaks are logged (GPUMEM_LOG >= warn).
 *        A later call initialises afresh.  Every handle and pointer from
 *        before is dead: INVALID_HANDLE / INVALID_POINTER, never a crash.
 *        Safe while other threads are inside gpumem calls: it waits for the
 *        calls in flight to return before releasing anything; calls that
 *        begin meanwhile wait for it and then run on a fresh initialisation.
 *        In a fork child it forgets the inherited state without releasing
 *        any of it (the memory is the parent's) and kills its handles; the
 *        child may then initialise afresh.
 * @return SUCCESS; BUSY (nothing done) when called from inside another gpumem
 *         call on the same thread (a trace callback).
 */
GPUMEM_API gpumem_status_t gpumem_finalize(void);

/**
 * @brief The active backend (GPUMEM_BACKEND_HOST, _CUDA or _HIP).
 * @param backend out: GPUMEM_BACKEND_HOST, _CUDA or _HIP
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_get_backend(int32_t *backend);

/**
 * @brief Returns "auto", "host", "cuda", "hip", or "unknown" (never NULL).
 * @param backend a GPUMEM_BACKEND_* value
 * @return "auto", "host", "cuda", "hip" or "unknown", a static string.
 */
GPUMEM_API const char *gpumem_backend_name(int32_t backend);

/* ------------------------------------------------------------------------ */
/* Devices and capabilities                                                  */
/* ------------------------------------------------------------------------ */

/** The CPU, wherever a device id is taken (prefetch, advice, locations). */
#define GPUMEM_DEVICE_HOST (-1)

#define GPUMEM_SUPPORT_NONE 0 /**< absent (and no fallback, or GPUMEM_FALLBACK=deny) */
#define GPUMEM_SUPPORT_EMULATED 1 /**< gpumem's fallback provides the semantics */
#define GPUMEM_SUPPORT_NATIVE 2 /**< the vendor runtime provides it */
/** The runtime claims the feature, and gpumem's self-test of it failed (GPUMEM_SELFTEST, 0.4):
 *  gpumem falls back as if it were absent (emulated where gpumem emulates it, refused under
 *  GPUMEM_FALLBACK=deny or where there is no emulation), and the messages carry the test's
 *  reason.  Only reported where GPUMEM_SELFTEST is set. */
#define GPUMEM_SUPPORT_BROKEN 3

/** Shareable handle types (bitmask). */
#define GPUMEM_HANDLE_NONE 0 /**< not shareable */
#define GPUMEM_HANDLE_POSIX_FD 0x1 /**< a POSIX file descriptor (send it with gpumem_ipc_send_fd) */
/** A fabric handle, for memory shared across nodes over NVLink (0.4).  Creation is
 *  ::GPUMEM_ERROR_NOT_SUPPORTED, with the reason, where the system has no fabric (no IMEX
 *  channel or fabric manager): VMM memory as the driver refuses it, a pool where the process
 *  may open no /dev/nvidia-caps-imex-channels/channel* (checked first: a driver that makes the
 *  pool there cannot share it); gpumem_device_info_t.fabric_handles says whether the
 *  device claims it.  A fabric handle is 64 bytes, not a descriptor: the *_export_to_shareable_handle
 *  and *_import_from_shareable_handle calls refuse it (::GPUMEM_ERROR_NOT_SUPPORTED). */
#define GPUMEM_HANDLE_FABRIC 0x2

/** What a device supports.  Extensible: set size (use GPUMEM_DEVICE_INFO_INIT). */
typedef struct gpumem_device_info {
    size_t size;                          /**< sizeof(gpumem_device_info_t) of the caller */
    char name[256];                       /**< device name */
    int32_t backend;                      /**< GPUMEM_BACKEND_* serving it */
    int32_t device;                       /**< the id asked for */
    uint64_t total_memory;                /**< bytes */
    uint64_t free_memory;                 /**< bytes */
    int32_t managed_memory;               /**< GPUMEM_SUPPORT_* */
    int32_t managed_migrates;             /**< 1 when managed pages really migrate */
    int32_t pageable_memory_access;       /**< 1 when the device reads plain malloc memory */
    int32_t memory_pools;                 /**< GPUMEM_SUPPORT_* */
    int32_t virtual_memory;               /**< GPUMEM_SUPPORT_* */
    uint32_t ipc_handle_types;            /**< GPUMEM_HANDLE_* bitmask usable for pools and VMM */
    uint64_t vmm_granularity;             /**< minimum VMM granularity, bytes */
    uint64_t vmm_recommended_granularity; /**< recommended VMM granularity, bytes */
    int32_t host_register;                /**< GPUMEM_SUPPORT_* */
    int32_t compute_capability;           /**< major*10+minor on CUDA; 0 elsewhere */
    char arch_name[64];                   /**< "gfx90a:sramecc+:xnack-", "sm_90", "x86_64"... */
    uint32_t pool_ipc_handle_types;       /**< GPUMEM_HANDLE_* usable for pools (0 where the pool in use
                                               cannot be shared, e.g. gpumem's own pool on a GPU) */
    int32_t batch_memops;   /**< GPUMEM_SUPPORT_* of the batched copies, prefetches and discards (0.2) */
    int32_t pinned_pools;   /**< GPUMEM_SUPPORT_* of pools of pinned host memory (0.2) */
    int32_t managed_pools;  /**< GPUMEM_SUPPORT_* of pools of managed memory (0.2) */
    int32_t rdma_memory;    /**< GPUMEM_SUPPORT_* of GPUMEM_POOL_RDMA pools and VMM memory (0.4): NATIVE
                                 where the GPU makes memory that GPUDirect RDMA and NCCL register;
                                 EMULATED on the host backend, whose memory is ordinary host memory
                                 (an RDMA NIC registers it as it is; there is no GPU for NCCL);
                                 NONE where the device cannot (no VMM, no GPUDirect RDMA over VMM,
                                 no POSIX file-descriptor handles) */
    int32_t dmabuf;         /**< GPUMEM_SUPPORT_* of gpumem_mem_export_dmabuf (0.4) */
    int32_t fabric_handles; /**< GPUMEM_SUPPORT_* of GPUMEM_HANDLE_FABRIC, as the driver claims it (0.4) */
    int32_t rows;           /**< GPUMEM_SUPPORT_* of the copies and fills of rows and boxes and of
                                 gpumem_malloc_pitch (0.5): NATIVE where the runtime makes each in one
                                 call; EMULATED on the host backend and where the runtime lacks the
                                 calls (one copy or fill per row, in stream order) */
    int32_t stream_priorities; /**< GPUMEM_SUPPORT_* of stream priorities (0.5): NATIVE where the
                                 runtime schedules by them; EMULATED where gpumem records them and
                                 nothing is scheduled by them (the host backend) */
    int32_t host_funcs;     /**< GPUMEM_SUPPORT_* of gpumem_launch_host_func (0.5): NATIVE where the
                                 runtime runs the function in stream order; EMULATED where gpumem waits
                                 for the stream and calls it (the host backend runs it in stream order) */
    int32_t ipc_events;     /**< GPUMEM_SUPPORT_* of gpumem_ipc_get_event_handle / _open_event_handle
                                 (0.5): NATIVE on a GPU runtime that has them, EMULATED on the host
                                 backend (whose events complete when recorded), NONE elsewhere */
    char pci_bus_id[16];    /**< the device's PCI address, "0000:1b:00.0" (domain:bus:device.function,
                                 lowercase hex, NUL-terminated; 0.5); empty on the host backend and
                                 where the runtime cannot say */
    char uuid[16];          /**< the device's UUID, 16 raw bytes as the runtime gives them (0.5);
                                 on the host backend the machine's id (/etc/machine-id), all zero
                                 where the runtime or the machine has none */
    int32_t numa_node;      /**< the host NUMA node nearest the device, from
                                 `/sys/bus/pci/devices/PCI_BUS_ID/numa_node` (0.5); -1 where unknown,
                                 and on the host backend, whose device is the whole machine */
} gpumem_device_info_t;

/** @def GPUMEM_DEVICE_INFO_INIT
 *  @brief An initialised ::gpumem_device_info_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_DEVICE_INFO_INIT gpumem_device_info_t{sizeof(gpumem_device_info_t), {0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}, {0}, 0}
#else
#define GPUMEM_DEVICE_INFO_INIT {.size = sizeof(gpumem_device_info_t)}
#endif

/**
 * @brief Number of devices of the active backend (>= 1 when initialised).
 * @param count out: the number of devices
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_count(int32_t *count);
/**
 * @brief Make @p device current for the calling thread.  INVALID_DEVICE if out of range.
 *
 * The current device chooses where new allocations go when a call names no device, and
 * which device's default stream a NULL stream means.  Every other call runs on the device
 * that owns what it touches (its memory, stream, event or pool), whichever is current.  On
 * the CUDA and HIP backends gpumem's current device is the runtime's: this call is
 * cudaSetDevice / hipSetDevice (it makes the device's primary context current), and a
 * cudaSetDevice made by the application or a framework moves gpumem's current device too.
 * No other gpumem call changes the runtime's current device or context.
 * @param device device id, 0 to count - 1
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_set_device(int32_t device);
/**
 * @brief The calling thread's current device: what gpumem_set_device (or, on the CUDA and
 *        HIP backends, the runtime's cudaSetDevice / hipSetDevice) made current; 0 on a
 *        thread where nothing is current.
 * @param device out: the current device id
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_get_device(int32_t *device);
/**
 * @brief Capabilities of @p device, with the support level of each feature
 *        after GPUMEM_DISABLE and GPUMEM_FALLBACK are applied.
 * @param info caller's struct with size set; only fields it covers are written.
 * @param device device id, 0 to count - 1
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_get_info(int32_t device, gpumem_device_info_t *info);
/**
 * @brief Free and total memory of the current device, bytes.
 * @param free_bytes out: free bytes (may be NULL)
 * @param total_bytes out: total bytes (may be NULL)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_get_info(size_t *free_bytes, size_t *total_bytes);

/*
 * Peer access (since 0.2).  Lets kernels on one device read and write the
 * plain device memory (gpumem_malloc) of another, as cudaDeviceEnablePeerAccess
 * and hipDeviceEnablePeerAccess do.  Pools (gpumem_pool_set_access) and VMM
 * ranges (gpumem_mem_set_access) have access of their own and need none;
 * managed and pinned host memory need none; gpumem_memcpy between devices
 * needs none (it is only faster with it).  See docs/semantics.md, Multi-GPU.
 */

/**
 * @brief Whether @p device can be given access to the memory of @p peer
 *        (gpumem_device_enable_peer_access).
 * @param can_access out: 1 if it can, 0 if not (always 0 when @p device equals
 *        @p peer, on the host backend, and where the runtime lacks peer access)
 * @param device the device that would access, 0 to count - 1
 * @param peer the device whose memory would be accessed, 0 to count - 1
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a NULL @p can_access,
 *         ::GPUMEM_ERROR_INVALID_DEVICE for a device out of range.
 */
GPUMEM_API gpumem_status_t gpumem_device_can_access_peer(int32_t *can_access, int32_t device, int32_t peer);
/**
 * @brief Let the calling thread's current device access the plain device
 *        memory of @p peer, present and future, until disabled (or until
 *        gpumem_finalize releases the device's context).  Access is one way:
 *        enable it from each side for both.  Idempotent: enabling what is
 *        already enabled is ::GPUMEM_SUCCESS.
 * @param peer the device whose memory becomes accessible, 0 to count - 1, not
 *        the current device
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_DEVICE for @p peer out of range,
 *         ::GPUMEM_ERROR_INVALID_VALUE for @p peer equal to the current device,
 *         ::GPUMEM_ERROR_NOT_SUPPORTED where gpumem_device_can_access_peer answers 0.
 */
GPUMEM_API gpumem_status_t gpumem_device_enable_peer_access(int32_t peer);
/**
 * @brief Withdraw the access that gpumem_device_enable_peer_access gave the
 *        current device to @p peer's memory.  Idempotent: disabling what is
 *        not enabled is ::GPUMEM_SUCCESS.
 * @param peer the device whose memory stops being accessible, 0 to count - 1,
 *        not the current device
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_DEVICE for @p peer out of range,
 *         ::GPUMEM_ERROR_INVALID_VALUE for @p peer equal to the current device.
 */
GPUMEM_API gpumem_status_t gpumem_device_disable_peer_access(int32_t peer);

/**
 * @brief The known bugs of the loaded vendor runtime that gpumem works around
 *        (0.2).  Which apply is decided when the backend loads, from the
 *        runtime and its version; each is also logged once at info level.
 *        The host backend has none.
 * @param names receives up to @p capacity static strings naming the bugs
 *        (e.g. "hip_release_threshold_ignored"); NULL when @p capacity is 0
 * @param descriptions receives the matching static one-line descriptions
 *        (the bug, what gpumem does about it, the source); may be NULL
 * @param capacity entries @p names (and @p descriptions) can hold
 * @param count out: the number of workarounds in force (may exceed @p capacity)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE when @p count is NULL or
 *         @p names is NULL with a non-zero @p capacity.
 */
GPUMEM_API gpumem_status_t gpumem_workarounds_get(const char **names, const char **descriptions, size_t capacity,
                                                  size_t *count);

/* ------------------------------------------------------------------------ */
/* Streams and events                                                        */
/* ------------------------------------------------------------------------ */

/** A stream.  NULL means the current device's default stream. */
typedef struct gpumem_stream_s *gpumem_stream_t;
/** An event. */
typedef struct gpumem_event_s *gpumem_event_t;

/**
 * @brief Create a stream on the current device.
 * @param stream out: the new stream
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_create(gpumem_stream_t *stream);
/**
 * @brief Destroy a stream (waits for its work).  The NULL stream cannot be destroyed.
 * @param stream a stream from gpumem_stream_create or gpumem_stream_wrap
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_destroy(gpumem_stream_t stream);
/**
 * @brief Wait for all work on the stream; applies pool release thresholds.
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_synchronize(gpumem_stream_t stream);
/**
 * @brief SUCCESS when the stream is idle, BUSY when work is pending.
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS when idle, ::GPUMEM_ERROR_BUSY when work is pending, or an error.
 */
GPUMEM_API gpumem_status_t gpumem_stream_query(gpumem_stream_t stream);
/**
 * @brief Wrap a caller's native stream (hipStream_t, cudaStream_t, CUstream;
 *        on the host backend any non-NULL pointer) without owning it.
 *        Destroying the wrapper leaves the native stream alone.
 * @param native the native stream (not NULL)
 * @param stream out: the wrapper
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_wrap(void *native, gpumem_stream_t *stream);
/**
 * @brief Returns the native stream of @p stream (NULL for the default stream or a dead handle).
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return the native stream, or NULL for the default stream or a dead handle.
 */
GPUMEM_API void *gpumem_stream_native(gpumem_stream_t stream);

/**
 * @brief Create an event (with timing).
 * @param event out: the new event
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_event_create(gpumem_event_t *event);
/**
 * @brief Destroy an event.
 * @param event an event from gpumem_event_create
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_event_destroy(gpumem_event_t event);
/**
 * @brief Record @p event on @p stream: it completes when the work before it does.
 * @param event the event to record
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_event_record(gpumem_event_t event, gpumem_stream_t stream);
/**
 * @brief Wait for the event; applies pool release thresholds.
 * @param event the event to wait for
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_event_synchronize(gpumem_event_t event);
/**
 * @brief SUCCESS when the event has completed (or was never recorded), BUSY otherwise.
 * @param event the event to test
 * @return ::GPUMEM_SUCCESS when complete, ::GPUMEM_ERROR_BUSY when pending, or an error.
 */
GPUMEM_API gpumem_status_t gpumem_event_query(gpumem_event_t event);
/**
 * @brief Make later work on @p stream wait for @p event.  Orders pool reuse too.
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @param event the event to wait for
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_wait_event(gpumem_stream_t stream, gpumem_event_t event);
/**
 * @brief Milliseconds between two completed events.  BUSY if either is pending.
 * @param ms out: milliseconds from @p start to @p end
 * @param start the earlier event
 * @param end the later event
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE where either event was made with
 *         GPUMEM_EVENT_DISABLE_TIMING (0.5) or is not recorded; another error status
 *         (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_event_elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end);
/**
 * @brief Wait for all work on the current device; applies pool release thresholds.
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_synchronize(void);

/*
 * Streams and events as programs create them (0.5).  The flags and priorities of CUDA's
 * cuStreamCreateWithPriority / hipStreamCreateWithPriority and the flags of cuEventCreate /
 * hipEventCreateWithFlags, with the same values; the queries answer what the runtime says.
 */

#define GPUMEM_STREAM_DEFAULT 0x0      /**< a blocking stream: ordered with the legacy default stream */
#define GPUMEM_STREAM_NON_BLOCKING 0x1 /**< no implicit synchronisation with the legacy default stream */

/**
 * @brief Create a stream on the current device with flags and a priority (0.5).
 *
 * Priorities are as in CUDA and HIP: lower numbers are more urgent, 0 is the default, and a
 * priority outside gpumem_device_get_stream_priority_range() is clamped to it (as the runtimes
 * do; gpumem_stream_get_priority answers the priority the stream got).
 * @param stream out: the new stream
 * @param flags GPUMEM_STREAM_DEFAULT or GPUMEM_STREAM_NON_BLOCKING
 * @param priority the priority (0: the default)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a NULL @p stream or unknown flags.
 */
GPUMEM_API gpumem_status_t gpumem_stream_create_with_flags(gpumem_stream_t *stream, uint32_t flags, int32_t priority);
/**
 * @brief The range of stream priorities of @p device (0.5): @p least is the least urgent
 *        (0), @p greatest the most urgent (a negative number where the device has
 *        priorities; 0 and 0 where it has none).
 * @param least out: the least urgent priority (may be NULL)
 * @param greatest out: the most urgent priority (may be NULL)
 * @param device device id, 0 to count - 1
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_DEVICE for a device out of range.
 */
GPUMEM_API gpumem_status_t gpumem_device_get_stream_priority_range(int32_t *least, int32_t *greatest,
                                                                   int32_t device);
/**
 * @brief The flags of @p stream (0.5): GPUMEM_STREAM_* (the default stream: GPUMEM_STREAM_DEFAULT).
 * @param flags out: the flags
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_get_flags(uint32_t *flags, gpumem_stream_t stream);
/**
 * @brief The priority @p stream got (0.5; clamped to the device's range; the default stream: 0).
 * @param priority out: the priority
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_get_priority(int32_t *priority, gpumem_stream_t stream);
/**
 * @brief The device of @p stream (0.5; the default stream: the current device).
 * @param device out: the device id
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_get_device(int32_t *device, gpumem_stream_t stream);

#define GPUMEM_EVENT_DEFAULT 0x0        /**< timing enabled, the host spins when it waits */
#define GPUMEM_EVENT_BLOCKING_SYNC 0x1  /**< the host blocks (sleeps) when it waits for the event */
#define GPUMEM_EVENT_DISABLE_TIMING 0x2 /**< no timestamps: cheaper to record and query */
#define GPUMEM_EVENT_INTERPROCESS 0x4   /**< may be shared with gpumem_ipc_get_event_handle (needs DISABLE_TIMING) */

/**
 * @brief Create an event on the current device with GPUMEM_EVENT_* flags (0.5).
 *        gpumem_event_elapsed_ms of an event made with GPUMEM_EVENT_DISABLE_TIMING is
 *        ::GPUMEM_ERROR_INVALID_VALUE.
 * @param event out: the new event
 * @param flags GPUMEM_EVENT_* bitmask; GPUMEM_EVENT_INTERPROCESS needs GPUMEM_EVENT_DISABLE_TIMING
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a NULL @p event, unknown flags or
 *         INTERPROCESS without DISABLE_TIMING.
 */
GPUMEM_API gpumem_status_t gpumem_event_create_with_flags(gpumem_event_t *event, uint32_t flags);

/** An event shared between processes: 64 plain bytes (CUipcEventHandle, hipIpcEventHandle_t). */
typedef struct gpumem_ipc_event_handle {
    char reserved[64]; /**< opaque */
} gpumem_ipc_event_handle_t;

/**
 * @brief The bytes another process opens @p event with (0.5).  They travel any way bytes do
 *        (a pipe, a file, MPI); the event must stay alive while others use it.
 * @param handle out: the handle
 * @param event an event made with GPUMEM_EVENT_INTERPROCESS | GPUMEM_EVENT_DISABLE_TIMING
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for an event made without
 *         GPUMEM_EVENT_INTERPROCESS; ::GPUMEM_ERROR_NOT_SUPPORTED where the device has no IPC
 *         events (gpumem_device_info_t::ipc_events).
 */
GPUMEM_API gpumem_status_t gpumem_ipc_get_event_handle(gpumem_ipc_event_handle_t *handle, gpumem_event_t event);
/**
 * @brief Open an event another process shared with gpumem_ipc_get_event_handle (0.5), on
 *        the current device.  Recording, querying, synchronising and waiting on it act on
 *        the other process's event; gpumem_event_destroy closes it.
 * @param event out: the opened event (it has no timing)
 * @param handle the bytes from gpumem_ipc_get_event_handle
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for bytes that are no handle, or a
 *         handle made in this process (as CUDA refuses it).
 */
GPUMEM_API gpumem_status_t gpumem_ipc_open_event_handle(gpumem_event_t *event,
                                                        const gpumem_ipc_event_handle_t *handle);

/** A function run in stream order by gpumem_launch_host_func. */
typedef void (*gpumem_host_fn_t)(void *user);

/**
 * @brief Run @p fn(@p user) on the host in @p stream's order (0.5): once the work enqueued
 *        on the stream before it is done, and before any work enqueued after it starts
 *        (cuLaunchHostFunc, hipLaunchHostFunc).  @p fn runs on a thread of the runtime (the
 *        host backend: the thread that makes the stream's work run) and must not call
 *        gpumem or the runtime; a call to gpumem from it is ::GPUMEM_ERROR_NOT_SUPPORTED where
 *        gpumem can tell.  On a capturing stream it becomes a host node of the graph, run at
 *        each launch.  Where the runtime cannot (gpumem_device_info_t::host_funcs EMULATED),
 *        gpumem waits for the stream and calls @p fn before returning.
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @param fn the function (not NULL)
 * @param user its argument
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_launch_host_func(gpumem_stream_t stream, gpumem_host_fn_t fn, void *user);

/* ------------------------------------------------------------------------ */
/* Explicit device memory and copies                                         */
/* ------------------------------------------------------------------------ */

/**
 * @brief Allocate device memory on the current device.  size 0 gives *ptr = NULL.
 * @param ptr out: the allocation (NULL for size 0)
 * @param size bytes
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_malloc(void **ptr, size_t size);
/**
 * @brief Free a live allocation of any gpumem kind (stream-ordered ones
 *        synchronously).  NULL is SUCCESS.  Buffer data, VMM reservations and
 *        registered host memory are refused (INVALID_POINTER): they have their
 *        own release calls.  Unknown, interior or freed pointers: INVALID_POINTER.
 * @param ptr the allocation's base address, or NULL
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_free(void *ptr);
/**
 * @brief Copy n bytes; direction inferred from the pointers.
 * @param dst destination, memory of any kind
 * @param src source, memory of any kind
 * @param n bytes to copy
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memcpy(void *dst, const void *src, size_t n);
/**
 * @brief Copy n bytes in stream order.
 * @param dst destination, memory of any kind
 * @param src source, memory of any kind
 * @param n bytes to copy
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_async(void *dst, const void *src, size_t n, gpumem_stream_t stream);
/**
 * @brief Set n bytes to (unsigned char)value.
 * @param dst destination, memory of any kind
 * @param value the byte value (only its low 8 bits are used)
 * @param n bytes to set
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset(void *dst, int32_t value, size_t n);
/**
 * @brief Set n bytes to (unsigned char)value in stream order.
 * @param dst destination, memory of any kind
 * @param value the byte value (only its low 8 bits are used)
 * @param n bytes to set
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset_async(void *dst, int32_t value, size_t n, gpumem_stream_t stream);

/*
 * Rows and boxes (0.5): pitched allocations, copies of rows (2-D) and boxes (3-D) and fills of
 * rows and of 16- and 32-bit elements, as cudaMallocPitch, cudaMemcpy2D(Async), cudaMemcpy3D(Async),
 * cudaMemset2D(Async) and cuMemsetD16/D32(Async) do, and their HIP twins.  A row is `width`
 * bytes; row r of a pitched range starts at ptr + r * pitch.  Any pair of kinds of memory, the
 * direction inferred from the pointers; where an operation runs is decided as for
 * gpumem_memcpy (docs/semantics.md, "Where an operation runs").  A bad pointer in any row is
 * an error naming the row, and nothing is enqueued.  gpumem_device_info_t::rows says whether the
 * runtime makes each in one call (NATIVE) or gpumem makes one call per row (EMULATED).
 */

/**
 * @brief Allocate device memory for @p height rows of @p width bytes, each row starting at a
 *        multiple of *@p pitch bytes chosen for the device (0.5).  Free it with gpumem_free.
 *        A @p width or @p height of 0 gives *ptr = NULL and *pitch = 0.
 * @param ptr out: the allocation (pitch * height bytes)
 * @param pitch out: bytes from one row's start to the next (>= @p width)
 * @param width bytes of a row
 * @param height rows
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_malloc_pitch(void **ptr, size_t *pitch, size_t width, size_t height);
/**
 * @brief Copy @p height rows of @p width bytes (0.5); the rows of @p src are @p spitch bytes
 *        apart, those of @p dst @p dpitch.  Returns once the bytes are in place.
 * @param dst destination, memory of any kind
 * @param dpitch bytes between the starts of destination rows (>= @p width)
 * @param src source, memory of any kind
 * @param spitch bytes between the starts of source rows (>= @p width)
 * @param width bytes of each row (0 copies nothing)
 * @param height rows (0 copies nothing)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a pitch below @p width;
 *         ::GPUMEM_ERROR_INVALID_POINTER (or INVALID_VALUE, past an allocation's end) for a
 *         row gpumem cannot copy, named in the message.
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                            size_t height);
/**
 * @brief gpumem_memcpy_2d in stream order (0.5).
 * @param dst destination, memory of any kind
 * @param dpitch bytes between the starts of destination rows (>= @p width)
 * @param src source, memory of any kind
 * @param spitch bytes between the starts of source rows (>= @p width)
 * @param width bytes of each row
 * @param height rows
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                  size_t width, size_t height, gpumem_stream_t stream);
/**
 * @brief Set @p height rows of @p width bytes, @p pitch bytes apart, to (unsigned char)@p value (0.5).
 * @param dst destination, memory of any kind
 * @param pitch bytes between the starts of rows (>= @p width)
 * @param value the byte value (only its low 8 bits are used)
 * @param width bytes of each row
 * @param height rows
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset_2d(void *dst, size_t pitch, int32_t value, size_t width, size_t height);
/**
 * @brief gpumem_memset_2d in stream order (0.5).
 * @param dst destination, memory of any kind
 * @param pitch bytes between the starts of rows (>= @p width)
 * @param value the byte value (only its low 8 bits are used)
 * @param width bytes of each row
 * @param height rows
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset_2d_async(void *dst, size_t pitch, int32_t value, size_t width,
                                                  size_t height, gpumem_stream_t stream);
/**
 * @brief Set @p count 16-bit elements at @p dst to @p value (0.5).
 * @param dst destination, memory of any kind, aligned to 2 bytes
 * @param value the element's value, at most 0xFFFF
 * @param count elements (0 sets nothing)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a misaligned @p dst or a value above 0xFFFF.
 */
GPUMEM_API gpumem_status_t gpumem_memset_d16(void *dst, uint32_t value, size_t count);
/**
 * @brief gpumem_memset_d16 in stream order (0.5).
 * @param dst destination, memory of any kind, aligned to 2 bytes
 * @param value the element's value, at most 0xFFFF
 * @param count elements
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset_d16_async(void *dst, uint32_t value, size_t count, gpumem_stream_t stream);
/**
 * @brief Set @p count 32-bit elements at @p dst to @p value (0.5).
 * @param dst destination, memory of any kind, aligned to 4 bytes
 * @param value the element's value
 * @param count elements (0 sets nothing)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a misaligned @p dst.
 */
GPUMEM_API gpumem_status_t gpumem_memset_d32(void *dst, uint32_t value, size_t count);
/**
 * @brief gpumem_memset_d32 in stream order (0.5).
 * @param dst destination, memory of any kind, aligned to 4 bytes
 * @param value the element's value
 * @param count elements
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memset_d32_async(void *dst, uint32_t value, size_t count, gpumem_stream_t stream);

/**
 * A copy of a box (0.5): @p depth slices of @p height rows of @p width bytes.  The byte at
 * (x, y, z) of the source is src + z * src_pitch * src_height + y * src_pitch + x; the box
 * starts at (src_x, src_y, src_z) there and at (dst_x, dst_y, dst_z) in the destination.
 * Extensible: use GPUMEM_MEMCPY3D_INIT and set every field.
 */
typedef struct gpumem_memcpy3d {
    size_t size;       /**< sizeof(gpumem_memcpy3d_t) of the caller */
    const void *src;   /**< source, memory of any kind */
    size_t src_pitch;  /**< bytes between the starts of source rows (>= src_x + width) */
    size_t src_height; /**< rows of a source slice (>= src_y + height) */
    size_t src_x;      /**< the box's first byte in a source row */
    size_t src_y;      /**< the box's first row in a source slice */
    size_t src_z;      /**< the box's first source slice */
    void *dst;         /**< destination, memory of any kind */
    size_t dst_pitch;  /**< bytes between the starts of destination rows (>= dst_x + width) */
    size_t dst_height; /**< rows of a destination slice (>= dst_y + height) */
    size_t dst_x;      /**< the box's first byte in a destination row */
    size_t dst_y;      /**< the box's first row in a destination slice */
    size_t dst_z;      /**< the box's first destination slice */
    size_t width;      /**< bytes of each row of the box (0 copies nothing) */
    size_t height;     /**< rows of each slice of the box (0 copies nothing) */
    size_t depth;      /**< slices of the box (0 copies nothing) */
} gpumem_memcpy3d_t;

/** @def GPUMEM_MEMCPY3D_INIT
 *  @brief An initialised ::gpumem_memcpy3d_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_MEMCPY3D_INIT gpumem_memcpy3d_t{sizeof(gpumem_memcpy3d_t), nullptr, 0, 0, 0, 0, 0, nullptr, 0, 0, 0, 0, 0, 0, 0, 0}
#else
#define GPUMEM_MEMCPY3D_INIT {.size = sizeof(gpumem_memcpy3d_t)}
#endif

/**
 * @brief Copy the box @p copy describes (0.5).  Returns once the bytes are in place.
 * @param copy the box (GPUMEM_MEMCPY3D_INIT, then every field)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a box that does not fit its pitch
 *         or slice height; ::GPUMEM_ERROR_INVALID_POINTER for a row gpumem cannot copy, named in
 *         the message.
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_3d(const gpumem_memcpy3d_t *copy);
/**
 * @brief gpumem_memcpy_3d in stream order (0.5).
 * @param copy the box (GPUMEM_MEMCPY3D_INIT, then every field)
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_3d_async(const gpumem_memcpy3d_t *copy, gpumem_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Page-locked host memory                                                   */
/* ------------------------------------------------------------------------ */

#define GPUMEM_HOST_PORTABLE 0x1 /**< pinned for every device, not only the current one */
#define GPUMEM_HOST_MAPPED 0x2 /**< mapped into the device address space (gpumem_host_get_device_pointer) */
#define GPUMEM_HOST_WRITE_COMBINED 0x4 /**< write-combined: fast for the device to read, slow for the CPU to read */
#define GPUMEM_HOST_COHERENT 0x8    /**< AMD hint; accepted and ignored elsewhere */
#define GPUMEM_HOST_NONCOHERENT 0x10 /**< AMD hint; accepted and ignored elsewhere */

#define GPUMEM_HOST_REGISTER_PORTABLE 0x1 /**< registered for every device */
#define GPUMEM_HOST_REGISTER_MAPPED 0x2 /**< mapped into the device address space */
#define GPUMEM_HOST_REGISTER_READ_ONLY 0x8 /**< the device only reads the range */

/**
 * @brief Allocate page-locked host memory.  COHERENT with NONCOHERENT is INVALID_VALUE.
 * @param ptr out: the allocation
 * @param size bytes
 * @param flags GPUMEM_HOST_* bitmask (0: default)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_host_alloc(void **ptr, size_t size, uint32_t flags);
/**
 * @brief Free memory from gpumem_host_alloc only; anything else INVALID_POINTER.
 * @param ptr memory from gpumem_host_alloc, or NULL
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_host_free(void *ptr);
/**
 * @brief Page-lock an existing host range.  Overlapping a registered range: INVALID_VALUE.
 * @param ptr start of the host range
 * @param size bytes
 * @param flags GPUMEM_HOST_REGISTER_* bitmask
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_host_register(void *ptr, size_t size, uint32_t flags);
/**
 * @brief Undo gpumem_host_register (ptr as registered).
 * @param ptr the address given to gpumem_host_register
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_host_unregister(void *ptr);
/**
 * @brief Device address of mapped pinned/registered host memory (interior pointers too).
 * @param dptr out: the device address
 * @param hptr a host address inside mapped pinned or registered memory
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_host_get_device_pointer(void **dptr, void *hptr);

/* ------------------------------------------------------------------------ */
/* Managed (unified) memory                                                  */
/* ------------------------------------------------------------------------ */

#define GPUMEM_ATTACH_GLOBAL 0x1 /**< accessible from any stream and device */
#define GPUMEM_ATTACH_HOST 0x2 /**< accessible from the host only, until attached otherwise */
#define GPUMEM_ATTACH_SINGLE 0x4 /**< accessible from one stream (gpumem_stream_attach) */

#define GPUMEM_ADVISE_SET_READ_MOSTLY 1 /**< mostly read: devices may keep read-only copies */
#define GPUMEM_ADVISE_UNSET_READ_MOSTLY 2 /**< undo SET_READ_MOSTLY */
#define GPUMEM_ADVISE_SET_PREFERRED_LOCATION 3 /**< keep the pages on the given device (or the host) */
#define GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION 4 /**< undo SET_PREFERRED_LOCATION */
#define GPUMEM_ADVISE_SET_ACCESSED_BY 5 /**< the given device accesses the range: keep it mapped there */
#define GPUMEM_ADVISE_UNSET_ACCESSED_BY 6 /**< undo SET_ACCESSED_BY */
#define GPUMEM_ADVISE_SET_COARSE_GRAIN 100   /**< AMD; SUCCESS and no effect elsewhere */
#define GPUMEM_ADVISE_UNSET_COARSE_GRAIN 101 /**< AMD; SUCCESS and no effect elsewhere */

#define GPUMEM_RANGE_READ_MOSTLY 1            /**< int32 */
#define GPUMEM_RANGE_PREFERRED_LOCATION 2     /**< int32 (device id, GPUMEM_DEVICE_HOST, or -2 = none) */
#define GPUMEM_RANGE_ACCESSED_BY 3            /**< int32 array, unused entries -2 */
#define GPUMEM_RANGE_LAST_PREFETCH_LOCATION 4 /**< int32 (-2 = never prefetched) */

/** Value of a location attribute that has no location (CUDA's cudaInvalidDeviceId). */
#define GPUMEM_LOCATION_INVALID (-2)

/**
 * @brief Allocate managed memory (flags 0 = GLOBAL).  Emulated by mapped pinned memory where absent.
 * @param ptr out: the allocation
 * @param size bytes
 * @param flags GPUMEM_ATTACH_GLOBAL or GPUMEM_ATTACH_HOST (0: GLOBAL)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_managed_alloc(void **ptr, size_t size, uint32_t flags);
/**
 * @brief Prefetch a managed range to @p device (or GPUMEM_DEVICE_HOST) in stream order.
 * @param ptr start of the managed range
 * @param count bytes
 * @param device destination device id, or GPUMEM_DEVICE_HOST
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_prefetch_async(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream);
/**
 * @brief Give advice (GPUMEM_ADVISE_*) about a managed range.
 * @param ptr start of the managed range
 * @param count bytes
 * @param advice GPUMEM_ADVISE_*
 * @param device the device the advice is about (GPUMEM_DEVICE_HOST for the CPU)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_advise(const void *ptr, size_t count, int32_t advice, int32_t device);
/**
 * @brief Query one attribute of a managed range.
 * @param data out; data_size bytes (4 for scalars, a multiple of 4 for ACCESSED_BY).
 * @param data_size bytes at @p data
 * @param attribute GPUMEM_RANGE_*
 * @param ptr start of the managed range
 * @param count bytes
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_range_get_attribute(void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count);
/**
 * @brief Query n attributes at once (arrays as for gpumem_range_get_attribute).
 * @param data array of @p n output buffers
 * @param data_sizes array of @p n sizes in bytes
 * @param attributes array of @p n GPUMEM_RANGE_* values
 * @param n number of attributes
 * @param ptr start of the managed range
 * @param count bytes
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_range_get_attributes(void **data, size_t *data_sizes, int32_t *attributes, size_t n, const void *ptr, size_t count);
/**
 * @brief Attach a managed range to a stream (GPUMEM_ATTACH_*; length 0 = whole allocation).
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @param ptr a managed allocation
 * @param length bytes (0: the whole allocation)
 * @param flags GPUMEM_ATTACH_*
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_stream_attach(gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags);

/* ------------------------------------------------------------------------ */
/* Pointer introspection, statistics, tracing                               */
/* ------------------------------------------------------------------------ */

#define GPUMEM_KIND_UNKNOWN 0 /**< memory gpumem did not make */
#define GPUMEM_KIND_DEVICE 1 /**< gpumem_malloc */
#define GPUMEM_KIND_HOST_PINNED 2 /**< gpumem_host_alloc */
#define GPUMEM_KIND_HOST_REGISTERED 3 /**< gpumem_host_register */
#define GPUMEM_KIND_MANAGED 4 /**< gpumem_managed_alloc */
#define GPUMEM_KIND_STREAM_ORDERED 5 /**< gpumem_malloc_async, gpumem_malloc_from_pool_async, imported pool pointers */
#define GPUMEM_KIND_VIRTUAL 6 /**< gpumem_mem_map (VMM) */
#define GPUMEM_KIND_BUFFER 7 /**< data of a gpumem_buffer_t */
#define GPUMEM_KIND_COUNT 8 /**< number of kinds (the length of the arrays in gpumem_stats_t) */

/** A memory pool (stream-ordered allocation); NULL is never a pool. */
typedef struct gpumem_pool_s *gpumem_pool_t;

/** What gpumem knows of a pointer.  Extensible: use GPUMEM_POINTER_INFO_INIT. */
typedef struct gpumem_pointer_info {
    size_t size;         /**< sizeof(gpumem_pointer_info_t) of the caller */
    int32_t kind;        /**< GPUMEM_KIND_* (UNKNOWN for memory gpumem did not make) */
    int32_t device;      /**< owning device, GPUMEM_DEVICE_HOST for host kinds */
    void *base;          /**< start of the allocation holding ptr */
    size_t alloc_size;   /**< its size in bytes */
    int32_t emulated;    /**< 1 when a fallback provides this memory */
    uint32_t flags;      /**< flags it was made with */
    gpumem_pool_t pool;  /**< pool of a stream-ordered allocation, else NULL */
    void *device_pointer; /**< address valid on the device (mapped host memory), else ptr's base */
    int32_t memory;       /**< GPUMEM_POOL_MEMORY_*: where the bytes live (0.2); for memory gpumem did not
                               make, what the runtime says (0.5), else GPUMEM_POOL_MEMORY_UNKNOWN */
    int32_t vendor_known; /**< 1 when ptr is memory gpumem did not make and the runtime knows it (0.5): kind
                               stays UNKNOWN and memory, device, base and alloc_size are the runtime's
                               answer (base NULL and alloc_size 0 where it tells no range); 0 for
                               memory gpumem made (its own record answers), memory no runtime knows,
                               and on the host backend, which has no runtime to ask */
} gpumem_pointer_info_t;

/** @def GPUMEM_POINTER_INFO_INIT
 *  @brief An initialised ::gpumem_pointer_info_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_POINTER_INFO_INIT gpumem_pointer_info_t{sizeof(gpumem_pointer_info_t), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
#else
#define GPUMEM_POINTER_INFO_INIT {.size = sizeof(gpumem_pointer_info_t)}
#endif

/**
 * @brief Describe @p ptr (interior pointers too).  Unknown memory: SUCCESS, kind UNKNOWN.
 *
 * Memory gpumem did not make (cudaMalloc'ed by a framework, hipHostMalloc'ed by a library) keeps
 * kind UNKNOWN; where the runtime knows it, vendor_known is 1 and memory, device, base and
 * alloc_size are the runtime's answer (cuPointerGetAttribute, hipPointerGetAttributes), so that a
 * program handed bytes by another can tell device memory from host memory and find the allocation.
 * Memory gpumem freed and still holds (its caches, its pools' free space) is gpumem's: not asked.
 * @param ptr any address
 * @param info caller's struct with size set (GPUMEM_POINTER_INFO_INIT)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pointer_get_info(const void *ptr, gpumem_pointer_info_t *info);

/** Process-wide counters per kind.  Extensible: use GPUMEM_STATS_INIT. */
typedef struct gpumem_stats {
    size_t size; /**< sizeof(gpumem_stats_t) of the caller */
    uint64_t current_bytes[GPUMEM_KIND_COUNT]; /**< live bytes */
    uint64_t peak_bytes[GPUMEM_KIND_COUNT];    /**< highest current_bytes since init or reset */
    uint64_t alloc_count[GPUMEM_KIND_COUNT]; /**< allocations made */
    uint64_t free_count[GPUMEM_KIND_COUNT]; /**< allocations freed */
    uint64_t fallback_count;                   /**< allocations served by a fallback */
} gpumem_stats_t;

/** @def GPUMEM_STATS_INIT
 *  @brief An initialised ::gpumem_stats_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_STATS_INIT gpumem_stats_t{sizeof(gpumem_stats_t), {0}, {0}, {0}, {0}, 0}
#else
#define GPUMEM_STATS_INIT {.size = sizeof(gpumem_stats_t)}
#endif

/**
 * @brief Read the counters.
 * @param stats caller's struct with size set (GPUMEM_STATS_INIT)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_get_stats(gpumem_stats_t *stats);
/**
 * @brief Set every peak_bytes to its current_bytes.
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_reset_peak_stats(void);

#define GPUMEM_TRACE_ALLOC 1 /**< an allocation */
#define GPUMEM_TRACE_FREE 2 /**< a free */

/**
 * One allocation or free, as passed to a trace callback.  A growable buffer's
 * resize appears as a FREE of its old extent followed by an ALLOC of the new
 * one (and counts so in gpumem_stats_t), so the ALLOC minus FREE bytes of a
 * trace always equal what is live.
 */
typedef struct gpumem_trace_event {
    size_t size;            /**< sizeof(gpumem_trace_event_t) of the library */
    int32_t op;             /**< GPUMEM_TRACE_ALLOC or GPUMEM_TRACE_FREE */
    int32_t kind;           /**< GPUMEM_KIND_* */
    void *ptr; /**< the allocation */
    size_t bytes;           /**< the allocation's size */
    int32_t device; /**< its device (GPUMEM_DEVICE_HOST for host kinds) */
    int32_t emulated; /**< 1 when a fallback provides it */
    gpumem_stream_t stream; /**< stream-ordered operations, else NULL */
    gpumem_pool_t pool;     /**< stream-ordered operations, else NULL */
} gpumem_trace_event_t;

/**
 * Called on the allocating thread, inside the gpumem call that allocated or freed.  It may call
 * gpumem: such a call runs on the runtime of the call that invoked it, and gpumem_finalize from
 * there returns ::GPUMEM_ERROR_BUSY (docs/semantics.md, "Nested calls").  Keep it short: the
 * allocating call waits for it.
 */
typedef void (*gpumem_trace_fn)(const gpumem_trace_event_t *event, void *user);

/**
 * @brief Install (or with NULL remove) the trace callback.
 * @param fn the callback, or NULL to remove it
 * @param user passed to every call of @p fn
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_set_trace_callback(gpumem_trace_fn fn, void *user);

/* ------------------------------------------------------------------------ */
/* Seeing and debugging memory (since 0.2)                                   */
/* ------------------------------------------------------------------------ */

/**
 * @brief The name of a memory kind, as traces and snapshots write it.
 * @param kind GPUMEM_KIND_*
 * @return "unknown", "device", "host_pinned", "host_registered", "managed",
 *         "stream_ordered", "virtual" or "buffer"; "unknown" for any other value (never NULL).
 */
GPUMEM_API const char *gpumem_kind_name(int32_t kind);

/*
 * A snapshot: every live allocation gpumem made and every segment (chunk) that
 * gpumem's own pools hold, with its free blocks, at one moment.  The library
 * allocates it and the caller only reads it, until gpumem_snapshot_release.
 * Every struct begins with its size (the library's sizeof): a later gpumem may
 * add fields at the end, so step through an array with GPUMEM_SNAPSHOT_ITEM,
 * and read a field only when the struct's size covers it.
 */

/** A free block of a pool segment (FREE or cached for a stream: not handed out). */
typedef struct gpumem_snapshot_free_block {
    size_t offset; /**< from the segment's base */
    size_t bytes; /**< its size in bytes */
} gpumem_snapshot_free_block_t;

/** A device as the snapshot saw it. */
typedef struct gpumem_snapshot_device {
    size_t size;    /**< sizeof(gpumem_snapshot_device_t) of the library */
    int32_t device; /**< the device id */
    int32_t reserved0; /**< 0 */
    char name[256]; /**< its name, as gpumem_device_info_t has it */
    uint64_t total; /**< bytes of memory */
    uint64_t free;  /**< bytes free when the snapshot was taken (the vendor's answer); 0 for a GPU this
                         process has not used (gpumem starts no context there: docs/multi-gpu.md) */
} gpumem_snapshot_device_t;

/** A live pool. */
typedef struct gpumem_snapshot_pool {
    size_t size;            /**< sizeof(gpumem_snapshot_pool_t) of the library */
    gpumem_pool_t pool; /**< the pool handle */
    int32_t device; /**< its device */
    int32_t implementation; /**< GPUMEM_POOL_NATIVE or GPUMEM_POOL_BUILTIN */
    int32_t memory;         /**< GPUMEM_POOL_MEMORY_* */
    int32_t reserved0; /**< 0 */
    uint64_t reserved_bytes; /**< GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT */
    uint64_t used_bytes;     /**< GPUMEM_POOL_ATTR_USED_MEM_CURRENT */
} gpumem_snapshot_pool_t;

/** A live allocation. */
typedef struct gpumem_snapshot_allocation {
    size_t size;            /**< sizeof(gpumem_snapshot_allocation_t) of the library */
    void *ptr;              /**< its base address */
    size_t bytes;           /**< its size as asked */
    int32_t kind;           /**< GPUMEM_KIND_* */
    int32_t memory;         /**< GPUMEM_POOL_MEMORY_*: where its bytes live */
    int32_t device;         /**< GPUMEM_DEVICE_HOST for host kinds */
    uint32_t thread;        /**< the allocating thread's kernel id (gettid) */
    gpumem_pool_t pool;     /**< stream-ordered: its pool (NULL once the pool was destroyed), else NULL */
    gpumem_stream_t stream; /**< stream-ordered: the stream it was allocated on (NULL: a default stream) */
    uint64_t time_us;       /**< when, in microseconds since gpumem_init (1-4 ms resolution) */
    void *const *backtrace; /**< return addresses with GPUMEM_BACKTRACE=1, else NULL */
    size_t backtrace_depth; /**< entries in backtrace */
    uint64_t graph;         /**< gpumem's own pool: the capture whose graph owns the block (0: none) (0.3) */
} gpumem_snapshot_allocation_t;

/** A segment (chunk) of one of gpumem's own pools. */
typedef struct gpumem_snapshot_segment {
    size_t size;        /**< sizeof(gpumem_snapshot_segment_t) of the library */
    gpumem_pool_t pool; /**< NULL once the pool's handle was destroyed */
    int32_t device; /**< its pool's device */
    int32_t reserved0; /**< 0 */
    void *base; /**< the segment's first byte */
    size_t bytes; /**< its size in bytes (address space the pool reserved whole) */
    const gpumem_snapshot_free_block_t *free_blocks; /**< in address order */
    size_t free_block_count; /**< entries in free_blocks */
    /** Bytes of it backed by memory (0.2).  A paged pool backs only the pages
     *  under its blocks and gives back those under free holes, so this may be
     *  less than bytes; the backed bytes of a pool's segments add up to its
     *  RESERVED_MEM_CURRENT.  Read it only where size says it is there. */
    size_t backed_bytes;
} gpumem_snapshot_segment_t;

/** The snapshot. */
typedef struct gpumem_snapshot {
    size_t size;      /**< sizeof(gpumem_snapshot_t) of the library */
    int32_t backend;  /**< GPUMEM_BACKEND_* */
    int32_t reserved0; /**< 0 */
    uint64_t time_us; /**< when it was taken, in microseconds since gpumem_init */
    const gpumem_snapshot_device_t *devices; /**< every device, by id */
    size_t device_count; /**< entries in devices */
    const gpumem_snapshot_pool_t *pools; /**< every live pool */
    size_t pool_count; /**< entries in pools */
    const gpumem_snapshot_allocation_t *allocations; /**< sorted by address */
    size_t allocation_count; /**< entries in allocations */
    const gpumem_snapshot_segment_t *segments; /**< sorted by pool, then address */
    size_t segment_count; /**< entries in segments */
} gpumem_snapshot_t;

/** @def GPUMEM_SNAPSHOT_ITEM
 *  @brief Element @p i of a snapshot array of @p type, stepping by the library's element size. */
#define GPUMEM_SNAPSHOT_ITEM(type, array, i) \
    ((const type *)(const void *)((const char *)(array) + (size_t)(i) * (array)[0].size))

/**
 * @brief Take a snapshot of every live allocation and of gpumem's own pool segments.
 * @param snapshot receives the snapshot; release it with gpumem_snapshot_release
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_snapshot_take(gpumem_snapshot_t **snapshot);
/**
 * @brief Free a snapshot.  It stays valid across gpumem_finalize until released.
 * @param snapshot from gpumem_snapshot_take (NULL: nothing to do)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for anything else (already released included).
 */
GPUMEM_API gpumem_status_t gpumem_snapshot_release(gpumem_snapshot_t *snapshot);
/**
 * @brief Write a snapshot as JSON (docs/semantics.md, "Snapshots"), symbolising backtraces.
 * @param snapshot from gpumem_snapshot_take
 * @param path the file to create or replace; %p is the process id, %r the MPI rank, and a file
 *        another live process writes gets this process's pid appended (docs/semantics.md,
 *        "One file per process")
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_snapshot_write_json(const gpumem_snapshot_t *snapshot, const char *path);

/* ------------------------------------------------------------------------ */
/* Out of memory: what would have fit                                        */
/* ------------------------------------------------------------------------ */

/** One remedy of an out-of-memory report: what it frees and whether the request would then fit. */
typedef struct gpumem_oom_remedy {
    uint64_t bytes; /**< bytes the remedy would free (for the limit: by how much it must rise) */
    int32_t fits;   /**< 1 when the request would have fit after this remedy alone, else 0 */
    int32_t reserved0; /**< 0 */
} gpumem_oom_remedy_t;

/**
 * The calling thread's last OUT_OF_MEMORY, and what would have fit (0.4; docs/debugging.md, "Out of
 * memory: what would have fit").  Every figure comes from gpumem's own books at the moment the
 * allocation failed; nothing was changed to find them.  Extensible: set size (use
 * GPUMEM_OOM_REPORT_INIT); fields past the caller's size are not written.
 */
typedef struct gpumem_oom_report {
    size_t size;          /**< sizeof(gpumem_oom_report_t) of the caller */
    int32_t has_report;   /**< 1 when this thread has had an OUT_OF_MEMORY (the report is of its last),
                               else 0 (and every other field 0) */
    /* The request. */
    int32_t device;       /**< the device asked for */
    int32_t kind;         /**< GPUMEM_KIND_* of the request (UNKNOWN where the call makes no one kind) */
    int32_t reserved0;    /**< 0 */
    uint64_t bytes;       /**< bytes asked for */
    uint64_t rounded_bytes; /**< bytes the request needs after the allocator's rounding (the own pool's
                                 granularity, the driver's 2 MiB pages), the figure every "fits" uses */
    gpumem_pool_t pool;   /**< the pool asked (stream-ordered requests), else NULL */
    gpumem_stream_t stream; /**< the stream asked (NULL: the default stream) */
    /* The device and gpumem's holdings on it. */
    uint64_t device_free;  /**< the device's free bytes then (0 where unknown) */
    uint64_t device_total; /**< the device's total bytes */
    uint64_t gpumem_reserved; /**< bytes gpumem holds on the device: live allocations and pool reserves */
    uint64_t gpumem_used;     /**< of which in live allocations */
    uint64_t limit;       /**< GPUMEM_LIMIT on the device (0: none) */
    uint64_t limit_held;  /**< what counts against it then */
    /* The remedies. */
    gpumem_oom_remedy_t trim;     /**< trimming gpumem's pools on the device to what they use */
    gpumem_pool_t trim_pool;      /**< the pool whose trim gives back most (NULL: none gives back) */
    uint64_t trim_pool_bytes;     /**< what that pool alone gives back */
    gpumem_oom_remedy_t pending;  /**< blocks of the pool asked (gpumem's own) freed on other streams
                                       and still pending, once those streams are synchronised */
    gpumem_stream_t pending_stream; /**< the stream holding most of them */
    gpumem_oom_remedy_t fragmentation; /**< the pool asked (gpumem's own) if its free memory were one
                                            block: bytes is its free total */
    uint64_t largest_free_block;  /**< the largest free block in that pool the stream asked may take */
    gpumem_oom_remedy_t limit_raise; /**< raising GPUMEM_LIMIT: bytes is how far it must rise */
    gpumem_oom_remedy_t outside;  /**< memory of the device held outside gpumem (other allocators in
                                       this process, other processes): total - free - gpumem_reserved */
    char verdict[256];            /**< one line; the OUT_OF_MEMORY message ends with it */
} gpumem_oom_report_t;

/** @def GPUMEM_OOM_REPORT_INIT
 *  @brief An initialised ::gpumem_oom_report_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_OOM_REPORT_INIT gpumem_oom_report_t{sizeof(gpumem_oom_report_t), 0, 0, 0, 0, 0, 0, nullptr, nullptr, 0, 0, 0, 0, 0, 0, {0, 0, 0}, nullptr, 0, {0, 0, 0}, nullptr, {0, 0, 0}, 0, {0, 0, 0}, {0, 0, 0}, {0}}
#else
#define GPUMEM_OOM_REPORT_INIT {.size = sizeof(gpumem_oom_report_t)}
#endif

/**
 * @brief The calling thread's last OUT_OF_MEMORY and what would have fit.
 *
 * Each OUT_OF_MEMORY from an allocation (gpumem_malloc, gpumem_malloc_async,
 * gpumem_malloc_from_pool_async, gpumem_managed_alloc, gpumem_host_alloc, gpumem_mem_create,
 * gpumem_buffer_create and _resize, the framework hooks) records the report for the thread that made the call; a later one
 * replaces it (it outlives gpumem_finalize).  Any other call that fails OUT_OF_MEMORY records a
 * report with kind UNKNOWN and a verdict saying that it is not one allocation.  The verdict is
 * the end of that call's gpumem_last_error_message().  Building it changes nothing, and costs
 * nothing until an allocation fails.
 *
 * @param report receives the report; report->size must be set (GPUMEM_OOM_REPORT_INIT)
 * @return ::GPUMEM_SUCCESS, with report->has_report 0 when this thread has had no OUT_OF_MEMORY;
 *         ::GPUMEM_ERROR_INVALID_VALUE for a NULL @p report or a size that does not cover its
 *         size field (nothing written).
 */
GPUMEM_API gpumem_status_t gpumem_last_oom_report(gpumem_oom_report_t *report);

/* ------------------------------------------------------------------------ */
/* Stream-ordered allocation and memory pools                                */
/* ------------------------------------------------------------------------ */

#define GPUMEM_POOL_AUTO 0    /**< native where the device has pools, else built-in */
#define GPUMEM_POOL_NATIVE 1  /**< the vendor's pool; NOT_SUPPORTED where absent */
#define GPUMEM_POOL_BUILTIN 2 /**< gpumem's own allocator even where native pools exist */

/** Where a pool's memory lives (gpumem_pool_props_t.memory, gpumem_pointer_info_t.memory). */
#define GPUMEM_POOL_MEMORY_UNKNOWN (-1) /**< pointer info only: memory gpumem did not make */
#define GPUMEM_POOL_MEMORY_DEVICE 0     /**< device memory (the default) */
#define GPUMEM_POOL_MEMORY_PINNED 1     /**< page-locked host memory that devices can reach */
#define GPUMEM_POOL_MEMORY_MANAGED 2    /**< managed (unified) memory */

/** @def GPUMEM_POOL_RDMA
 *  @brief gpumem_pool_props_t.flags and gpumem_alloc_props_t.flags: memory that GPUDirect RDMA
 *  and NCCL's buffer registration (ncclCommRegister, PyTorch's register_mem_pool) accept (0.4).
 *
 *  On CUDA it is VMM memory (cuMemCreate) made with allocFlags.gpuDirectRDMACapable and a POSIX
 *  file-descriptor handle, as NCCL's own allocator makes it; HIP passes the same flag (ROCm has
 *  no attribute to ask first, so a runtime that refuses it refuses at the first allocation,
 *  NOT_SUPPORTED).  A pool with it is gpumem's own pool over paged VMM chunks, its pages mapped
 *  for the owning device only until gpumem_pool_set_access grants a peer (then every page, now
 *  and later).  The vendor's pools (cuMemPoolCreate) take no RDMA flag, so GPUMEM_POOL_NATIVE
 *  with it is NOT_SUPPORTED and AUTO takes gpumem's own pool.  Only for device memory
 *  (GPUMEM_POOL_MEMORY_DEVICE).  Where the device cannot (gpumem_device_info_t.rdma_memory is
 *  NONE: no VMM, GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED 0, or no POSIX handles) the call is
 *  NOT_SUPPORTED and says what is missing.  The host backend accepts it: its memory is ordinary
 *  host memory, which an RDMA NIC registers as it is (rdma_memory EMULATED).
 *  A block larger than 8 VMM pages spans several physical allocations mapped back to back. */
#define GPUMEM_POOL_RDMA 0x1

/** Pool properties.  Extensible: use GPUMEM_POOL_PROPS_INIT (it sets numa_node to -1, "any"). */
typedef struct gpumem_pool_props {
    size_t size; /**< sizeof(gpumem_pool_props_t) of the caller */
    int32_t device;          /**< owning device */
    uint32_t handle_types;   /**< GPUMEM_HANDLE_* for export */
    uint64_t max_size;       /**< bytes the pool may reserve, 0 = unlimited */
    int32_t implementation;  /**< GPUMEM_POOL_* */
    int32_t memory;          /**< GPUMEM_POOL_MEMORY_* (0.2; was reserved0, so 0 = device memory) */
    int32_t numa_node;       /**< PINNED pools: the host NUMA node, -1 = any (0.2; callers whose size
                                  ends before this field get -1) */
    uint32_t reserved1;      /**< ignored.  It names the 0.2 struct's tail padding: a 0.2 or 0.3
                                  caller's size is 40 with those 4 bytes uninitialised, so `flags`
                                  begins after them and such callers get flags 0 */
    uint32_t flags;          /**< GPUMEM_POOL_RDMA, or 0 (0.4; callers whose size ends before this
                                  field get 0) */
} gpumem_pool_props_t;

/** @def GPUMEM_POOL_PROPS_INIT
 *  @brief An initialised ::gpumem_pool_props_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_POOL_PROPS_INIT gpumem_pool_props_t{sizeof(gpumem_pool_props_t), 0, 0, 0, 0, 0, -1, 0, 0}
#else
#define GPUMEM_POOL_PROPS_INIT {.size = sizeof(gpumem_pool_props_t), .numa_node = -1}
#endif

#define GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES 1   /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC 2         /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3 /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_RELEASE_THRESHOLD 4                 /**< uint64, default 0 */
#define GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT 5              /**< uint64, read-only */
#define GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH 6                 /**< uint64, set 0 to reset */
#define GPUMEM_POOL_ATTR_USED_MEM_CURRENT 7                  /**< uint64, read-only */
#define GPUMEM_POOL_ATTR_USED_MEM_HIGH 8                     /**< uint64, set 0 to reset */

#define GPUMEM_ACCESS_NONE 0 /**< no access */
#define GPUMEM_ACCESS_READ 1 /**< read-only access */
#define GPUMEM_ACCESS_READWRITE 3 /**< read and write access */

/** Who may access a pool or VMM range, and how. */
typedef struct gpumem_access_desc {
    int32_t device; /**< device id */
    int32_t flags;  /**< GPUMEM_ACCESS_* */
} gpumem_access_desc_t;

/** A pointer exported from a shareable pool (opaque). */
typedef struct gpumem_pool_ptr_export_data {
    unsigned char reserved[64]; /**< opaque bytes, copied as they are to the importing process */
} gpumem_pool_ptr_export_data_t;

/**
 * @brief Allocate from the current device's current pool, in stream order.
 * @param ptr out: the allocation
 * @param size bytes
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_malloc_async(void **ptr, size_t size, gpumem_stream_t stream);
/**
 * @brief Free a stream-ordered allocation in stream order.
 * @param ptr a stream-ordered allocation
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_free_async(void *ptr, gpumem_stream_t stream);
/**
 * @brief Create a pool (props NULL = the current device's defaults).
 * @param pool out: the new pool
 * @param props properties (GPUMEM_POOL_PROPS_INIT), or NULL
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_create(gpumem_pool_t *pool, const gpumem_pool_props_t *props);
/**
 * @brief Destroy a pool.  Outstanding allocations stay valid; the pool's
 *        memory goes when the last is freed.  A device's default pool cannot be
 *        destroyed (INVALID_VALUE); a current pool reverts to the default.
 * @param pool a pool from gpumem_pool_create or an import
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_destroy(gpumem_pool_t pool);
/**
 * @brief The device's default pool.
 * @param pool out: the default pool
 * @param device device id
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_get_default_pool(gpumem_pool_t *pool, int32_t device);
/**
 * @brief The process's default pool of @p memory, made on first use (0.2).
 *        The same (memory, location) always gives the same pool; it cannot be
 *        destroyed and goes at gpumem_finalize.  For DEVICE it is
 *        gpumem_device_get_default_pool(pool, location).
 * @param pool out: the pool
 * @param memory GPUMEM_POOL_MEMORY_DEVICE, _PINNED or _MANAGED
 * @param location a device id (DEVICE: the pool's device; MANAGED: its preferred
 *        location), or for PINNED a host NUMA node (-1 = any node)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why):
 *         ::GPUMEM_ERROR_NOT_SUPPORTED where such pools are absent and GPUMEM_FALLBACK=deny,
 *         or for a NUMA node where only gpumem's own pool serves pinned pools.
 */
GPUMEM_API gpumem_status_t gpumem_get_default_pool_for(gpumem_pool_t *pool, int32_t memory, int32_t location);
/**
 * @brief Make @p pool the device's current pool (used by gpumem_malloc_async).
 * @param device device id
 * @param pool a pool of that device
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_set_pool(int32_t device, gpumem_pool_t pool);
/**
 * @brief The device's current pool.
 * @param pool out: the current pool
 * @param device device id
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_device_get_pool(gpumem_pool_t *pool, int32_t device);
/**
 * @brief Allocate from @p pool in stream order.
 * @param ptr out: the allocation
 * @param size bytes
 * @param pool the pool to allocate from
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_malloc_from_pool_async(void **ptr, size_t size, gpumem_pool_t pool, gpumem_stream_t stream);
/**
 * @brief Set a pool attribute (GPUMEM_POOL_ATTR_*).
 * @param pool the pool
 * @param attr GPUMEM_POOL_ATTR_*
 * @param value pointer to an int32_t or uint64_t, as the attribute says
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported pool
 *         resets its high-water marks; its reuse flags and release threshold are the exporting pool's
 *         (::GPUMEM_ERROR_NOT_SUPPORTED).
 */
GPUMEM_API gpumem_status_t gpumem_pool_set_attribute(gpumem_pool_t pool, int32_t attr, const void *value);
/**
 * @brief Read a pool attribute (GPUMEM_POOL_ATTR_*).
 * @param pool the pool
 * @param attr GPUMEM_POOL_ATTR_*
 * @param value out: an int32_t or uint64_t, as the attribute says
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported pool's
 *         reserved and used bytes are what its imported pointers map in this process; its reuse flags and
 *         release threshold are the exporting pool's (::GPUMEM_ERROR_NOT_SUPPORTED).
 */
GPUMEM_API gpumem_status_t gpumem_pool_get_attribute(gpumem_pool_t pool, int32_t attr, void *value);
/**
 * @brief Release unused memory until at most @p min_bytes_to_keep stay reserved (as free memory allows).
 * @param pool the pool
 * @param min_bytes_to_keep bytes the pool may keep reserved
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported pool
 *         holds nothing of its own: ::GPUMEM_SUCCESS, nothing given back.
 */
GPUMEM_API gpumem_status_t gpumem_pool_trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep);
/**
 * @brief Grant devices access to the pool's memory.
 * @param pool the pool
 * @param descs array of @p count access descriptors
 * @param count number of descriptors
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs, size_t count);
/**
 * @brief How @p device may access the pool's memory (GPUMEM_ACCESS_*).
 * @param flags out: GPUMEM_ACCESS_*
 * @param pool the pool
 * @param device device id
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_get_access(int32_t *flags, gpumem_pool_t pool, int32_t device);
/**
 * @brief Export a pool created with handle_types POSIX_FD as a new file descriptor (caller closes it).
 * @param fd out: a new file descriptor
 * @param pool a pool created with handle_types POSIX_FD
 * @param handle_type GPUMEM_HANDLE_POSIX_FD (GPUMEM_HANDLE_FABRIC: ::GPUMEM_ERROR_NOT_SUPPORTED, a fabric
 *        handle is not a descriptor)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported pool:
 *         ::GPUMEM_ERROR_NOT_SUPPORTED (only its creator exports it; pass on the descriptor it came from).
 */
GPUMEM_API gpumem_status_t gpumem_pool_export_to_shareable_handle(int32_t *fd, gpumem_pool_t pool, int32_t handle_type);
/**
 * @brief Import a pool exported by another process (the fd stays the caller's).
 * @param pool out: the imported pool
 * @param fd a descriptor received from the exporting process
 * @param handle_type GPUMEM_HANDLE_POSIX_FD
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_import_from_shareable_handle(gpumem_pool_t *pool, int32_t fd, int32_t handle_type);
/**
 * @brief Describe a pointer of a shareable pool for another process.
 * @param data out: 64 bytes to pass to the other process any way
 * @param ptr an allocation of a shareable pool
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported
 *         pointer: ::GPUMEM_ERROR_NOT_SUPPORTED (only the allocating process exports it).
 */
GPUMEM_API gpumem_status_t gpumem_pool_export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr);
/**
 * @brief Map a pointer exported from the pool that @p pool imports.  Free it with gpumem_free(_async).
 *        It is one allocation of 0 bytes in the statistics: its memory is the exporter's.
 * @param ptr out: the address in this process
 * @param pool the imported pool
 * @param data what gpumem_pool_export_pointer gave the exporter
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_pool_import_pointer(void **ptr, gpumem_pool_t pool, const gpumem_pool_ptr_export_data_t *data);

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                 */
/* ------------------------------------------------------------------------ */

/** A physical memory allocation (0 is never a valid handle). */
typedef uint64_t gpumem_mem_handle_t;

/** Properties of a physical allocation.  Extensible: use GPUMEM_ALLOC_PROPS_INIT. */
typedef struct gpumem_alloc_props {
    size_t size; /**< sizeof(gpumem_alloc_props_t) of the caller */
    int32_t device;        /**< device that holds the memory */
    uint32_t handle_types; /**< GPUMEM_HANDLE_* for export */
    uint32_t flags;        /**< GPUMEM_POOL_RDMA (the memory GPUDirect RDMA and NCCL register;
                                it implies nothing about handle_types), or 0 (0.4; callers whose
                                size ends before this field get 0) */
} gpumem_alloc_props_t;

/** @def GPUMEM_ALLOC_PROPS_INIT
 *  @brief An initialised ::gpumem_alloc_props_t: size set, every other field 0 (C and C++). */
#ifdef __cplusplus
#define GPUMEM_ALLOC_PROPS_INIT gpumem_alloc_props_t{sizeof(gpumem_alloc_props_t), 0, 0, 0}
#else
#define GPUMEM_ALLOC_PROPS_INIT {.size = sizeof(gpumem_alloc_props_t)}
#endif

#define GPUMEM_GRANULARITY_MINIMUM 0 /**< the smallest granularity the device allows */
#define GPUMEM_GRANULARITY_RECOMMENDED 1 /**< the granularity that performs best */

/**
 * @brief Granularity of sizes, offsets and addresses for VMM.
 * @param granularity out: bytes
 * @param props allocation properties (GPUMEM_ALLOC_PROPS_INIT)
 * @param option GPUMEM_GRANULARITY_MINIMUM or _RECOMMENDED
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_get_granularity(size_t *granularity, const gpumem_alloc_props_t *props, int32_t option);
/**
 * @brief Create physical memory (size a multiple of the granularity).
 * @param handle out: the new handle
 * @param size bytes, a multiple of the granularity
 * @param props allocation properties (GPUMEM_ALLOC_PROPS_INIT)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_create(gpumem_mem_handle_t *handle, size_t size, const gpumem_alloc_props_t *props);
/**
 * @brief Release a handle; memory still mapped lives until unmapped.
 * @param handle a handle from gpumem_mem_create, an import or gpumem_mem_retain_allocation_handle
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_release(gpumem_mem_handle_t handle);
/**
 * @brief A new handle to the physical memory mapped at @p ptr (0.5), as cuMemRetainAllocationHandle:
 *        a VMM mapping made with gpumem_mem_map or by the application with the runtime's own calls,
 *        from any address inside it.
 *
 * The handle is a reference of its own: release it with gpumem_mem_release (the memory lives while
 * it is mapped or any handle holds it).  It maps, exports and answers
 * gpumem_mem_get_allocation_properties as the handle it was mapped from.  It is not counted again
 * in the statistics: no memory was made.  An address in no mapping (unmapped address space, memory
 * of gpumem_malloc or cudaMalloc, host memory, freed memory) is ::GPUMEM_ERROR_INVALID_VALUE; a
 * device without VMM ::GPUMEM_ERROR_NOT_SUPPORTED.
 * @param handle out: the new handle
 * @param ptr an address inside a VMM mapping
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_retain_allocation_handle(gpumem_mem_handle_t *handle, void *ptr);
/**
 * @brief The properties of a physical allocation (0.5), as the runtime tells them
 *        (cuMemGetAllocationPropertiesFromHandle, hipMemGetAllocationPropertiesFromHandle).
 * @param props caller's struct with size set (GPUMEM_ALLOC_PROPS_INIT); out: device, handle_types
 *        and flags (GPUMEM_POOL_RDMA for memory GPUDirect RDMA registers), the fields size covers
 * @param handle a handle from gpumem_mem_create, an import or gpumem_mem_retain_allocation_handle
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_get_allocation_properties(gpumem_alloc_props_t *props,
                                                                gpumem_mem_handle_t handle);
/**
 * @brief Reserve an address range (alignment 0 = granularity; hint may be ignored).
 * @param ptr out: start of the reserved range
 * @param size bytes, a multiple of the granularity
 * @param alignment alignment in bytes (0: the granularity)
 * @param addr_hint preferred address, or NULL
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_address_reserve(void **ptr, size_t size, size_t alignment, void *addr_hint);
/**
 * @brief Free a whole reservation (ptr and size as reserved; nothing may be mapped).
 * @param ptr start of the reservation
 * @param size its size
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_address_free(void *ptr, size_t size);
/**
 * @brief Map @p size bytes of @p handle from @p offset at @p ptr (inside a reservation).
 * @param ptr address inside a reservation
 * @param size bytes to map
 * @param offset offset into the physical memory
 * @param handle the physical memory
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle);
/**
 * @brief Unmap a range mapped with gpumem_mem_map (ptr and size as mapped).
 * @param ptr address as mapped
 * @param size bytes as mapped
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_unmap(void *ptr, size_t size);
/**
 * @brief Set access to mapped memory; until then it is inaccessible.
 * @param ptr start of a mapped range
 * @param size bytes
 * @param descs array of @p count access descriptors
 * @param count number of descriptors
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs, size_t count);
/**
 * @brief How @p device may access the mapping holding @p ptr (GPUMEM_ACCESS_*).
 * @param flags out: GPUMEM_ACCESS_*
 * @param device device id
 * @param ptr an address inside a mapping
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_get_access(uint64_t *flags, int32_t device, void *ptr);
/**
 * @brief Export a handle created with handle_types POSIX_FD as a new fd (caller closes it).
 * @param fd out: a new file descriptor
 * @param handle a handle created with handle_types POSIX_FD
 * @param handle_type GPUMEM_HANDLE_POSIX_FD
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).  An imported
 *         handle: ::GPUMEM_ERROR_NOT_SUPPORTED (pass on the descriptor it came from).
 */
GPUMEM_API gpumem_status_t gpumem_mem_export_to_shareable_handle(int32_t *fd, gpumem_mem_handle_t handle, int32_t handle_type);
/**
 * @brief Import a handle from an fd (the fd stays the caller's).
 * @param handle out: the imported handle
 * @param fd a descriptor received from the exporting process
 * @param handle_type GPUMEM_HANDLE_POSIX_FD
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_import_from_shareable_handle(gpumem_mem_handle_t *handle, int32_t fd, int32_t handle_type);
/**
 * @brief A dma-buf file descriptor for [@p ptr, @p ptr + @p size) of device memory gpumem made
 *        (0.4), for ibv_reg_dmabuf_mr, other drivers, DRM or Vulkan.  The caller closes it.
 *
 * The range is device memory of one allocation: gpumem_malloc memory, a stream-ordered block
 * of a device pool, mapped VMM memory (mappings that follow one another count as one range),
 * or a buffer's data.  @p ptr and @p size are multiples of the host page size.  Pinned,
 * registered and managed memory, memory gpumem did not make, freed memory and a range that
 * runs past its allocation are ::GPUMEM_ERROR_INVALID_VALUE, the message saying which.
 * Where the device has no dma-buf export (gpumem_device_info_t.dmabuf is
 * ::GPUMEM_SUPPORT_NONE: the host backend, a runtime without the call, a CUDA driver without
 * the open kernel module) it is ::GPUMEM_ERROR_NOT_SUPPORTED.  CUDA:
 * cuMemGetHandleForAddressRange; HIP: hipMemGetHandleForAddressRange.
 * @param fd out: a new dma-buf file descriptor
 * @param ptr the first byte, a multiple of the host page size
 * @param size bytes, > 0, a multiple of the host page size
 * @param flags 0 (no flag is defined yet)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_mem_export_dmabuf(int32_t *fd, const void *ptr, size_t size, uint32_t flags);

/* ------------------------------------------------------------------------ */
/* Growable buffers                                                          */
/* ------------------------------------------------------------------------ */

/** A growable buffer (VMM where available, else allocate-copy-free). */
typedef struct gpumem_buffer_s *gpumem_buffer_t;

/**
 * @brief Reserve @p max_size (0 = device memory) and back @p size bytes on @p device.
 * @param buffer out: the new buffer
 * @param size initial size in bytes
 * @param max_size largest size to reserve address space for (0: the device's memory)
 * @param device device id
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_buffer_create(gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device);
/**
 * @brief Grow or shrink; bytes up to min(old, new) keep their values.
 * @param buffer the buffer
 * @param new_size bytes
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_buffer_resize(gpumem_buffer_t buffer, size_t new_size);
/**
 * @brief Current data address (NULL while the size is 0 and nothing is mapped).
 * @param buffer the buffer
 * @param ptr out: the data address (it may change on resize)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_buffer_data(gpumem_buffer_t buffer, void **ptr);
/**
 * @brief Current size in bytes.
 * @param buffer the buffer
 * @param size out: bytes
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_buffer_size(gpumem_buffer_t buffer, size_t *size);
/**
 * @brief Destroy the buffer and its memory.
 * @param buffer the buffer
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_buffer_destroy(gpumem_buffer_t buffer);

/* ------------------------------------------------------------------------ */
/* IPC helpers                                                               */
/* ------------------------------------------------------------------------ */

/**
 * @brief Send @p fd over a connected AF_UNIX socket (SCM_RIGHTS).
 * @param socket a connected AF_UNIX socket
 * @param fd the descriptor to send (still the caller's afterwards)
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_ipc_send_fd(int32_t socket, int32_t fd);
/**
 * @brief Receive a descriptor sent with gpumem_ipc_send_fd (caller closes it).
 * @param socket a connected AF_UNIX socket
 * @param fd out: a new descriptor in this process
 * @return ::GPUMEM_SUCCESS, or an error status (gpumem_last_error_message() says why).
 */
GPUMEM_API gpumem_status_t gpumem_ipc_recv_fd(int32_t socket, int32_t *fd);

/* ------------------------------------------------------------------------ */
/* Batched copies, prefetches and discards (0.2)                             */
/* ------------------------------------------------------------------------ */

/**
 * @brief Enqueue many copies on @p stream with one call: entry i copies
 *        sizes[i] bytes from srcs[i] to dsts[i] (any kinds of memory, as
 *        gpumem_memcpy_async).  Every entry is checked before anything is
 *        enqueued.  The batch as a whole runs in stream order; its copies run
 *        in no particular order among themselves, so a destination may not
 *        overlap another entry's destination or source.  One runtime call
 *        where the runtime has batched copies and @p stream is not the
 *        default stream (gpumem_device_info_t::batch_memops is then
 *        ::GPUMEM_SUPPORT_NATIVE), else one copy per entry.
 * @param dsts count destination pointers
 * @param srcs count source pointers
 * @param sizes count sizes in bytes; an entry of size 0 copies nothing (its pointers may be NULL)
 * @param count entries; 0 is ::GPUMEM_SUCCESS and touches no array
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a NULL array or a
 *         bad entry (gpumem_last_error_message() names the entry: "entry 7: ..."),
 *         and then nothing was enqueued; another error status if the runtime fails.
 */
GPUMEM_API gpumem_status_t gpumem_memcpy_batch_async(void *const *dsts, const void *const *srcs,
                                                     const size_t *sizes, size_t count, gpumem_stream_t stream);
/**
 * @brief Prefetch many ranges of managed memory, each to its own device, in
 *        @p stream's order (as gpumem_prefetch_async does for one).  Every
 *        entry is checked before anything is enqueued.
 * @param ptrs count pointers into managed allocations
 * @param sizes count sizes in bytes (not 0); each range lies in one managed allocation
 * @param count entries; 0 is ::GPUMEM_SUCCESS and touches no array
 * @param devices count destinations: a device id, or ::GPUMEM_DEVICE_HOST for the CPU
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE (a NULL array, memory that
 *         is not managed, an empty range) or ::GPUMEM_ERROR_INVALID_DEVICE with the
 *         entry named, and then nothing was enqueued.
 */
GPUMEM_API gpumem_status_t gpumem_prefetch_batch_async(const void *const *ptrs, const size_t *sizes, size_t count,
                                                       const int32_t *devices, gpumem_stream_t stream);
/**
 * @brief Tell the runtime that the contents of many ranges of managed memory
 *        are no longer needed, in @p stream's order: after the discard their
 *        bytes are undefined (the runtime may skip migrating them) until
 *        written again; the memory stays valid to read and write.  Where the
 *        runtime cannot discard (no batched discard, emulated managed memory,
 *        the host backend) the contents are simply kept.
 * @param ptrs count pointers into managed allocations
 * @param sizes count sizes in bytes (not 0); each range lies in one managed allocation
 * @param count entries; 0 is ::GPUMEM_SUCCESS and touches no array
 * @param stream a ::gpumem_stream_t (NULL: the current device's default stream)
 * @return ::GPUMEM_SUCCESS; ::GPUMEM_ERROR_INVALID_VALUE for a NULL array or a bad
 *         entry (named in the message), and then nothing was enqueued.
 */
GPUMEM_API gpumem_status_t gpumem_discard_batch_async(void *const *ptrs, const size_t *sizes, size_t count,
                                                      gpumem_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Allocator hooks for frameworks (PyTorch CUDAPluggableAllocator, CuPy)     */
/* ------------------------------------------------------------------------ */

#if !defined(_WIN32)
/**
 * @brief Returns memory from @p device's current pool in @p stream's order; NULL on failure.
 * @param size bytes
 * @param device device id
 * @param stream the framework's native stream (cudaStream_t, hipStream_t), or NULL
 * @return the allocation, or NULL on failure.
 */
GPUMEM_API void *gpumem_pluggable_malloc(ssize_t size, int device, void *stream);
/**
 * @brief Returns @p ptr to its pool in @p stream's order.
 * @param ptr memory from gpumem_pluggable_malloc
 * @param size its size (unused)
 * @param device device id (unused)
 * @param stream the framework's native stream, or NULL
 */
GPUMEM_API void gpumem_pluggable_free(void *ptr, ssize_t size, int device, void *stream);
/**
 * @brief gpumem_pluggable_malloc for C++ hosts that expect an allocator to throw, such as
 *        PyTorch's process-wide CUDAPluggableAllocator (0.4).
 *
 * PyTorch's CUDAPluggableAllocator does not check the pointer a hook returns: NULL becomes a
 * tensor without memory, which faults at first use. This entry throws instead, and PyTorch turns
 * the exception into a Python RuntimeError carrying its text. The exception derives from
 * std::bad_alloc; its what() begins "CUDA out of memory." (or "HIP out of memory.") for an
 * OUT_OF_MEMORY, as PyTorch's own message does, and ends with gpumem's message and its
 * out-of-memory verdict. Any other failure throws the same type with gpumem's status and
 * message. Never call it from C, or from any caller that cannot unwind a C++ exception (ctypes,
 * Fortran). gpumem.use_torch_allocator() installs it.
 * @param size bytes (0 returns NULL, as gpumem_pluggable_malloc does)
 * @param device device id
 * @param stream the framework's native stream, or NULL
 * @return the allocation; never NULL for a non-zero size.
 */
GPUMEM_API void *gpumem_pluggable_malloc_or_throw(ssize_t size, int device, void *stream);
/**
 * @brief gpumem_pluggable_malloc for allocator hooks that take C functions with one opaque
 *        parameter first, such as CuPy's CFunctionAllocator (0.2).
 * @param stream the native stream whose order the allocation follows (the hook's parameter);
 *        NULL: the legacy default stream, which orders itself after every blocking stream
 * @param size bytes
 * @param device device id
 * @return the allocation, or NULL on failure (gpumem_last_error_message() says why).
 */
GPUMEM_API void *gpumem_hook_malloc(void *stream, size_t size, int device);
/**
 * @brief Returns @p ptr (from gpumem_hook_malloc) to its pool in @p stream's order (0.2).
 * @param stream the native stream given to gpumem_hook_malloc
 * @param ptr the allocation
 * @param device device id (unused)
 */
GPUMEM_API void gpumem_hook_free(void *stream, void *ptr, int device);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUMEM_GPUMEM_H */
