/*
 * gpumem: one C ABI over every way a GPU program holds memory.
 *
 * The contract of this header is stable: names, argument order and numeric
 * values never change once released.  Every function returns a
 * gpumem_status_t unless it says "returns"; output parameters come last.
 * Every function is thread-safe and no C++ exception crosses this ABI.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_GPUMEM_H
#define GPUMEM_GPUMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(_WIN32)
#include <sys/types.h> /* ssize_t, for the framework allocator hooks */
#endif

#include "gpumem/gpumem_version.h"

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

#define GPUMEM_SUCCESS 0
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

#define GPUMEM_BACKEND_AUTO 0
#define GPUMEM_BACKEND_HOST 1
#define GPUMEM_BACKEND_CUDA 2
#define GPUMEM_BACKEND_HIP 3

/** @brief Returns the run-time library's GPUMEM_VERSION (major*10000+minor*100+patch). */
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

/** @brief The active backend (GPUMEM_BACKEND_HOST, _CUDA or _HIP). */
GPUMEM_API gpumem_status_t gpumem_get_backend(int32_t *backend);

/** @brief Returns "auto", "host", "cuda", "hip", or "unknown" (never NULL). */
GPUMEM_API const char *gpumem_backend_name(int32_t backend);

/* ------------------------------------------------------------------------ */
/* Devices and capabilities                                                  */
/* ------------------------------------------------------------------------ */

/** The CPU, wherever a device id is taken (prefetch, advice, locations). */
#define GPUMEM_DEVICE_HOST (-1)

#define GPUMEM_SUPPORT_NONE 0
#define GPUMEM_SUPPORT_EMULATED 1 /**< gpumem's fallback provides the semantics */
#define GPUMEM_SUPPORT_NATIVE 2

/** Shareable handle types (bitmask). */
#define GPUMEM_HANDLE_NONE 0
#define GPUMEM_HANDLE_POSIX_FD 0x1

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
    int32_t reserved0;
} gpumem_device_info_t;

#ifdef __cplusplus
#define GPUMEM_DEVICE_INFO_INIT gpumem_device_info_t{sizeof(gpumem_device_info_t), {0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}, 0, 0}
#else
#define GPUMEM_DEVICE_INFO_INIT {.size = sizeof(gpumem_device_info_t)}
#endif

/** @brief Number of devices of the active backend (>= 1 when initialised). */
GPUMEM_API gpumem_status_t gpumem_device_count(int32_t *count);
/** @brief Make @p device current for the calling thread.  INVALID_DEVICE if out of range. */
GPUMEM_API gpumem_status_t gpumem_set_device(int32_t device);
/** @brief The calling thread's current device (0 until set). */
GPUMEM_API gpumem_status_t gpumem_get_device(int32_t *device);
/**
 * @brief Capabilities of @p device, with the support level of each feature
 *        after GPUMEM_DISABLE and GPUMEM_FALLBACK are applied.
 * @param info caller's struct with size set; only fields it covers are written.
 */
GPUMEM_API gpumem_status_t gpumem_device_get_info(int32_t device, gpumem_device_info_t *info);
/** @brief Free and total memory of the current device, bytes. */
GPUMEM_API gpumem_status_t gpumem_mem_get_info(size_t *free_bytes, size_t *total_bytes);

/* ------------------------------------------------------------------------ */
/* Streams and events                                                        */
/* ------------------------------------------------------------------------ */

/** A stream.  NULL means the current device's default stream. */
typedef struct gpumem_stream_s *gpumem_stream_t;
/** An event. */
typedef struct gpumem_event_s *gpumem_event_t;

/** @brief Create a stream on the current device. */
GPUMEM_API gpumem_status_t gpumem_stream_create(gpumem_stream_t *stream);
/** @brief Destroy a stream (waits for its work).  The NULL stream cannot be destroyed. */
GPUMEM_API gpumem_status_t gpumem_stream_destroy(gpumem_stream_t stream);
/** @brief Wait for all work on the stream; applies pool release thresholds. */
GPUMEM_API gpumem_status_t gpumem_stream_synchronize(gpumem_stream_t stream);
/** @brief SUCCESS when the stream is idle, BUSY when work is pending. */
GPUMEM_API gpumem_status_t gpumem_stream_query(gpumem_stream_t stream);
/**
 * @brief Wrap a caller's native stream (hipStream_t, cudaStream_t, CUstream;
 *        on the host backend any non-NULL pointer) without owning it.
 *        Destroying the wrapper leaves the native stream alone.
 */
GPUMEM_API gpumem_status_t gpumem_stream_wrap(void *native, gpumem_stream_t *stream);
/** @brief Returns the native stream of @p stream (NULL for the default stream or a dead handle). */
GPUMEM_API void *gpumem_stream_native(gpumem_stream_t stream);

/** @brief Create an event (with timing). */
GPUMEM_API gpumem_status_t gpumem_event_create(gpumem_event_t *event);
/** @brief Destroy an event. */
GPUMEM_API gpumem_status_t gpumem_event_destroy(gpumem_event_t event);
/** @brief Record @p event on @p stream: it completes when the work before it does. */
GPUMEM_API gpumem_status_t gpumem_event_record(gpumem_event_t event, gpumem_stream_t stream);
/** @brief Wait for the event; applies pool release thresholds. */
GPUMEM_API gpumem_status_t gpumem_event_synchronize(gpumem_event_t event);
/** @brief SUCCESS when the event has completed (or was never recorded), BUSY otherwise. */
GPUMEM_API gpumem_status_t gpumem_event_query(gpumem_event_t event);
/** @brief Make later work on @p stream wait for @p event.  Orders pool reuse too. */
GPUMEM_API gpumem_status_t gpumem_stream_wait_event(gpumem_stream_t stream, gpumem_event_t event);
/** @brief Milliseconds between two completed events.  BUSY if either is pending. */
GPUMEM_API gpumem_status_t gpumem_event_elapsed_ms(float *ms, gpumem_event_t start, gpumem_event_t end);
/** @brief Wait for all work on the current device; applies pool release thresholds. */
GPUMEM_API gpumem_status_t gpumem_device_synchronize(void);

/* ------------------------------------------------------------------------ */
/* Explicit device memory and copies                                         */
/* ------------------------------------------------------------------------ */

/** @brief Allocate device memory on the current device.  size 0 gives *ptr = NULL. */
GPUMEM_API gpumem_status_t gpumem_malloc(void **ptr, size_t size);
/**
 * @brief Free a live allocation of any gpumem kind (stream-ordered ones
 *        synchronously).  NULL is SUCCESS.  Buffer data, VMM reservations and
 *        registered host memory are refused (INVALID_POINTER): they have their
 *        own release calls.  Unknown, interior or freed pointers: INVALID_POINTER.
 */
GPUMEM_API gpumem_status_t gpumem_free(void *ptr);
/** @brief Copy n bytes; direction inferred from the pointers. */
GPUMEM_API gpumem_status_t gpumem_memcpy(void *dst, const void *src, size_t n);
/** @brief Copy n bytes in stream order. */
GPUMEM_API gpumem_status_t gpumem_memcpy_async(void *dst, const void *src, size_t n, gpumem_stream_t stream);
/** @brief Set n bytes to (unsigned char)value. */
GPUMEM_API gpumem_status_t gpumem_memset(void *dst, int32_t value, size_t n);
/** @brief Set n bytes to (unsigned char)value in stream order. */
GPUMEM_API gpumem_status_t gpumem_memset_async(void *dst, int32_t value, size_t n, gpumem_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Page-locked host memory                                                   */
/* ------------------------------------------------------------------------ */

#define GPUMEM_HOST_PORTABLE 0x1
#define GPUMEM_HOST_MAPPED 0x2
#define GPUMEM_HOST_WRITE_COMBINED 0x4
#define GPUMEM_HOST_COHERENT 0x8    /**< AMD hint; accepted and ignored elsewhere */
#define GPUMEM_HOST_NONCOHERENT 0x10 /**< AMD hint; accepted and ignored elsewhere */

#define GPUMEM_HOST_REGISTER_PORTABLE 0x1
#define GPUMEM_HOST_REGISTER_MAPPED 0x2
#define GPUMEM_HOST_REGISTER_READ_ONLY 0x8

/** @brief Allocate page-locked host memory.  COHERENT with NONCOHERENT is INVALID_VALUE. */
GPUMEM_API gpumem_status_t gpumem_host_alloc(void **ptr, size_t size, uint32_t flags);
/** @brief Free memory from gpumem_host_alloc only; anything else INVALID_POINTER. */
GPUMEM_API gpumem_status_t gpumem_host_free(void *ptr);
/** @brief Page-lock an existing host range.  Overlapping a registered range: INVALID_VALUE. */
GPUMEM_API gpumem_status_t gpumem_host_register(void *ptr, size_t size, uint32_t flags);
/** @brief Undo gpumem_host_register (ptr as registered). */
GPUMEM_API gpumem_status_t gpumem_host_unregister(void *ptr);
/** @brief Device address of mapped pinned/registered host memory (interior pointers too). */
GPUMEM_API gpumem_status_t gpumem_host_get_device_pointer(void **dptr, void *hptr);

/* ------------------------------------------------------------------------ */
/* Managed (unified) memory                                                  */
/* ------------------------------------------------------------------------ */

#define GPUMEM_ATTACH_GLOBAL 0x1
#define GPUMEM_ATTACH_HOST 0x2
#define GPUMEM_ATTACH_SINGLE 0x4

#define GPUMEM_ADVISE_SET_READ_MOSTLY 1
#define GPUMEM_ADVISE_UNSET_READ_MOSTLY 2
#define GPUMEM_ADVISE_SET_PREFERRED_LOCATION 3
#define GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION 4
#define GPUMEM_ADVISE_SET_ACCESSED_BY 5
#define GPUMEM_ADVISE_UNSET_ACCESSED_BY 6
#define GPUMEM_ADVISE_SET_COARSE_GRAIN 100   /**< AMD; SUCCESS and no effect elsewhere */
#define GPUMEM_ADVISE_UNSET_COARSE_GRAIN 101 /**< AMD; SUCCESS and no effect elsewhere */

#define GPUMEM_RANGE_READ_MOSTLY 1            /**< int32 */
#define GPUMEM_RANGE_PREFERRED_LOCATION 2     /**< int32 (device id, GPUMEM_DEVICE_HOST, or -2 = none) */
#define GPUMEM_RANGE_ACCESSED_BY 3            /**< int32 array, unused entries -2 */
#define GPUMEM_RANGE_LAST_PREFETCH_LOCATION 4 /**< int32 (-2 = never prefetched) */

/** Value of a location attribute that has no location (CUDA's cudaInvalidDeviceId). */
#define GPUMEM_LOCATION_INVALID (-2)

/** @brief Allocate managed memory (flags 0 = GLOBAL).  Emulated by mapped pinned memory where absent. */
GPUMEM_API gpumem_status_t gpumem_managed_alloc(void **ptr, size_t size, uint32_t flags);
/** @brief Prefetch a managed range to @p device (or GPUMEM_DEVICE_HOST) in stream order. */
GPUMEM_API gpumem_status_t gpumem_prefetch_async(const void *ptr, size_t count, int32_t device, gpumem_stream_t stream);
/** @brief Give advice (GPUMEM_ADVISE_*) about a managed range. */
GPUMEM_API gpumem_status_t gpumem_advise(const void *ptr, size_t count, int32_t advice, int32_t device);
/**
 * @brief Query one attribute of a managed range.
 * @param data out; data_size bytes (4 for scalars, a multiple of 4 for ACCESSED_BY).
 */
GPUMEM_API gpumem_status_t gpumem_range_get_attribute(void *data, size_t data_size, int32_t attribute, const void *ptr, size_t count);
/** @brief Query n attributes at once (arrays as for gpumem_range_get_attribute). */
GPUMEM_API gpumem_status_t gpumem_range_get_attributes(void **data, size_t *data_sizes, int32_t *attributes, size_t n, const void *ptr, size_t count);
/** @brief Attach a managed range to a stream (GPUMEM_ATTACH_*; length 0 = whole allocation). */
GPUMEM_API gpumem_status_t gpumem_stream_attach(gpumem_stream_t stream, void *ptr, size_t length, uint32_t flags);

/* ------------------------------------------------------------------------ */
/* Pointer introspection, statistics, tracing                               */
/* ------------------------------------------------------------------------ */

#define GPUMEM_KIND_UNKNOWN 0
#define GPUMEM_KIND_DEVICE 1
#define GPUMEM_KIND_HOST_PINNED 2
#define GPUMEM_KIND_HOST_REGISTERED 3
#define GPUMEM_KIND_MANAGED 4
#define GPUMEM_KIND_STREAM_ORDERED 5
#define GPUMEM_KIND_VIRTUAL 6
#define GPUMEM_KIND_BUFFER 7
#define GPUMEM_KIND_COUNT 8

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
} gpumem_pointer_info_t;

#ifdef __cplusplus
#define GPUMEM_POINTER_INFO_INIT gpumem_pointer_info_t{sizeof(gpumem_pointer_info_t), 0, 0, 0, 0, 0, 0, 0, 0}
#else
#define GPUMEM_POINTER_INFO_INIT {.size = sizeof(gpumem_pointer_info_t)}
#endif

/** @brief Describe @p ptr (interior pointers too).  Unknown memory: SUCCESS, kind UNKNOWN. */
GPUMEM_API gpumem_status_t gpumem_pointer_get_info(const void *ptr, gpumem_pointer_info_t *info);

/** Process-wide counters per kind.  Extensible: use GPUMEM_STATS_INIT. */
typedef struct gpumem_stats {
    size_t size;
    uint64_t current_bytes[GPUMEM_KIND_COUNT]; /**< live bytes */
    uint64_t peak_bytes[GPUMEM_KIND_COUNT];    /**< highest current_bytes since init or reset */
    uint64_t alloc_count[GPUMEM_KIND_COUNT];
    uint64_t free_count[GPUMEM_KIND_COUNT];
    uint64_t fallback_count;                   /**< allocations served by a fallback */
} gpumem_stats_t;

#ifdef __cplusplus
#define GPUMEM_STATS_INIT gpumem_stats_t{sizeof(gpumem_stats_t), {0}, {0}, {0}, {0}, 0}
#else
#define GPUMEM_STATS_INIT {.size = sizeof(gpumem_stats_t)}
#endif

/** @brief Read the counters. */
GPUMEM_API gpumem_status_t gpumem_get_stats(gpumem_stats_t *stats);
/** @brief Set every peak_bytes to its current_bytes. */
GPUMEM_API gpumem_status_t gpumem_reset_peak_stats(void);

#define GPUMEM_TRACE_ALLOC 1
#define GPUMEM_TRACE_FREE 2

/** One allocation or free, as passed to a trace callback. */
typedef struct gpumem_trace_event {
    size_t size;            /**< sizeof(gpumem_trace_event_t) of the library */
    int32_t op;             /**< GPUMEM_TRACE_ALLOC or GPUMEM_TRACE_FREE */
    int32_t kind;           /**< GPUMEM_KIND_* */
    void *ptr;
    size_t bytes;           /**< the allocation's size */
    int32_t device;
    int32_t emulated;
    gpumem_stream_t stream; /**< stream-ordered operations, else NULL */
    gpumem_pool_t pool;     /**< stream-ordered operations, else NULL */
} gpumem_trace_event_t;

/** Called on the allocating thread; must not call back into gpumem. */
typedef void (*gpumem_trace_fn)(const gpumem_trace_event_t *event, void *user);

/** @brief Install (or with NULL remove) the trace callback. */
GPUMEM_API gpumem_status_t gpumem_set_trace_callback(gpumem_trace_fn fn, void *user);

/* ------------------------------------------------------------------------ */
/* Stream-ordered allocation and memory pools                                */
/* ------------------------------------------------------------------------ */

#define GPUMEM_POOL_AUTO 0    /**< native where the device has pools, else built-in */
#define GPUMEM_POOL_NATIVE 1  /**< the vendor's pool; NOT_SUPPORTED where absent */
#define GPUMEM_POOL_BUILTIN 2 /**< gpumem's own allocator even where native pools exist */

/** Pool properties.  Extensible: use GPUMEM_POOL_PROPS_INIT. */
typedef struct gpumem_pool_props {
    size_t size;
    int32_t device;          /**< owning device */
    uint32_t handle_types;   /**< GPUMEM_HANDLE_* for export */
    uint64_t max_size;       /**< bytes the pool may reserve, 0 = unlimited */
    int32_t implementation;  /**< GPUMEM_POOL_* */
    int32_t reserved0;
} gpumem_pool_props_t;

#ifdef __cplusplus
#define GPUMEM_POOL_PROPS_INIT gpumem_pool_props_t{sizeof(gpumem_pool_props_t), 0, 0, 0, 0, 0}
#else
#define GPUMEM_POOL_PROPS_INIT {.size = sizeof(gpumem_pool_props_t)}
#endif

#define GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES 1   /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC 2         /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3 /**< int32 0/1, default 1 */
#define GPUMEM_POOL_ATTR_RELEASE_THRESHOLD 4                 /**< uint64, default 0 */
#define GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT 5              /**< uint64, read-only */
#define GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH 6                 /**< uint64, set 0 to reset */
#define GPUMEM_POOL_ATTR_USED_MEM_CURRENT 7                  /**< uint64, read-only */
#define GPUMEM_POOL_ATTR_USED_MEM_HIGH 8                     /**< uint64, set 0 to reset */

#define GPUMEM_ACCESS_NONE 0
#define GPUMEM_ACCESS_READ 1
#define GPUMEM_ACCESS_READWRITE 3

/** Who may access a pool or VMM range, and how. */
typedef struct gpumem_access_desc {
    int32_t device; /**< device id */
    int32_t flags;  /**< GPUMEM_ACCESS_* */
} gpumem_access_desc_t;

/** A pointer exported from a shareable pool (opaque). */
typedef struct gpumem_pool_ptr_export_data {
    unsigned char reserved[64];
} gpumem_pool_ptr_export_data_t;

/** @brief Allocate from the current device's current pool, in stream order. */
GPUMEM_API gpumem_status_t gpumem_malloc_async(void **ptr, size_t size, gpumem_stream_t stream);
/** @brief Free a stream-ordered allocation in stream order. */
GPUMEM_API gpumem_status_t gpumem_free_async(void *ptr, gpumem_stream_t stream);
/** @brief Create a pool (props NULL = the current device's defaults). */
GPUMEM_API gpumem_status_t gpumem_pool_create(gpumem_pool_t *pool, const gpumem_pool_props_t *props);
/**
 * @brief Destroy a pool.  Outstanding allocations stay valid; the pool's
 *        memory goes when the last is freed.  A device's default pool cannot be
 *        destroyed (INVALID_VALUE); a current pool reverts to the default.
 */
GPUMEM_API gpumem_status_t gpumem_pool_destroy(gpumem_pool_t pool);
/** @brief The device's default pool. */
GPUMEM_API gpumem_status_t gpumem_device_get_default_pool(gpumem_pool_t *pool, int32_t device);
/** @brief Make @p pool the device's current pool (used by gpumem_malloc_async). */
GPUMEM_API gpumem_status_t gpumem_device_set_pool(int32_t device, gpumem_pool_t pool);
/** @brief The device's current pool. */
GPUMEM_API gpumem_status_t gpumem_device_get_pool(gpumem_pool_t *pool, int32_t device);
/** @brief Allocate from @p pool in stream order. */
GPUMEM_API gpumem_status_t gpumem_malloc_from_pool_async(void **ptr, size_t size, gpumem_pool_t pool, gpumem_stream_t stream);
/** @brief Set a pool attribute (GPUMEM_POOL_ATTR_*). */
GPUMEM_API gpumem_status_t gpumem_pool_set_attribute(gpumem_pool_t pool, int32_t attr, const void *value);
/** @brief Read a pool attribute (GPUMEM_POOL_ATTR_*). */
GPUMEM_API gpumem_status_t gpumem_pool_get_attribute(gpumem_pool_t pool, int32_t attr, void *value);
/** @brief Release unused memory until at most @p min_bytes_to_keep stay reserved (as free memory allows). */
GPUMEM_API gpumem_status_t gpumem_pool_trim_to(gpumem_pool_t pool, size_t min_bytes_to_keep);
/** @brief Grant devices access to the pool's memory. */
GPUMEM_API gpumem_status_t gpumem_pool_set_access(gpumem_pool_t pool, const gpumem_access_desc_t *descs, size_t count);
/** @brief How @p device may access the pool's memory (GPUMEM_ACCESS_*). */
GPUMEM_API gpumem_status_t gpumem_pool_get_access(int32_t *flags, gpumem_pool_t pool, int32_t device);
/** @brief Export a pool created with handle_types POSIX_FD as a new file descriptor (caller closes it). */
GPUMEM_API gpumem_status_t gpumem_pool_export_to_shareable_handle(int32_t *fd, gpumem_pool_t pool, int32_t handle_type);
/** @brief Import a pool exported by another process (the fd stays the caller's). */
GPUMEM_API gpumem_status_t gpumem_pool_import_from_shareable_handle(gpumem_pool_t *pool, int32_t fd, int32_t handle_type);
/** @brief Describe a pointer of a shareable pool for another process. */
GPUMEM_API gpumem_status_t gpumem_pool_export_pointer(gpumem_pool_ptr_export_data_t *data, void *ptr);
/** @brief Map a pointer exported from the pool that @p pool imports.  Free it with gpumem_free(_async). */
GPUMEM_API gpumem_status_t gpumem_pool_import_pointer(void **ptr, gpumem_pool_t pool, const gpumem_pool_ptr_export_data_t *data);

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                 */
/* ------------------------------------------------------------------------ */

/** A physical memory allocation (0 is never a valid handle). */
typedef uint64_t gpumem_mem_handle_t;

/** Properties of a physical allocation.  Extensible: use GPUMEM_ALLOC_PROPS_INIT. */
typedef struct gpumem_alloc_props {
    size_t size;
    int32_t device;        /**< device that holds the memory */
    uint32_t handle_types; /**< GPUMEM_HANDLE_* for export */
} gpumem_alloc_props_t;

#ifdef __cplusplus
#define GPUMEM_ALLOC_PROPS_INIT gpumem_alloc_props_t{sizeof(gpumem_alloc_props_t), 0, 0}
#else
#define GPUMEM_ALLOC_PROPS_INIT {.size = sizeof(gpumem_alloc_props_t)}
#endif

#define GPUMEM_GRANULARITY_MINIMUM 0
#define GPUMEM_GRANULARITY_RECOMMENDED 1

/** @brief Granularity of sizes, offsets and addresses for VMM. */
GPUMEM_API gpumem_status_t gpumem_mem_get_granularity(size_t *granularity, const gpumem_alloc_props_t *props, int32_t option);
/** @brief Create physical memory (size a multiple of the granularity). */
GPUMEM_API gpumem_status_t gpumem_mem_create(gpumem_mem_handle_t *handle, size_t size, const gpumem_alloc_props_t *props);
/** @brief Release a handle; memory still mapped lives until unmapped. */
GPUMEM_API gpumem_status_t gpumem_mem_release(gpumem_mem_handle_t handle);
/** @brief Reserve an address range (alignment 0 = granularity; hint may be ignored). */
GPUMEM_API gpumem_status_t gpumem_mem_address_reserve(void **ptr, size_t size, size_t alignment, void *addr_hint);
/** @brief Free a whole reservation (ptr and size as reserved; nothing may be mapped). */
GPUMEM_API gpumem_status_t gpumem_mem_address_free(void *ptr, size_t size);
/** @brief Map @p size bytes of @p handle from @p offset at @p ptr (inside a reservation). */
GPUMEM_API gpumem_status_t gpumem_mem_map(void *ptr, size_t size, size_t offset, gpumem_mem_handle_t handle);
/** @brief Unmap a range mapped with gpumem_mem_map (ptr and size as mapped). */
GPUMEM_API gpumem_status_t gpumem_mem_unmap(void *ptr, size_t size);
/** @brief Set access to mapped memory; until then it is inaccessible. */
GPUMEM_API gpumem_status_t gpumem_mem_set_access(void *ptr, size_t size, const gpumem_access_desc_t *descs, size_t count);
/** @brief How @p device may access the mapping holding @p ptr (GPUMEM_ACCESS_*). */
GPUMEM_API gpumem_status_t gpumem_mem_get_access(uint64_t *flags, int32_t device, void *ptr);
/** @brief Export a handle created with handle_types POSIX_FD as a new fd (caller closes it). */
GPUMEM_API gpumem_status_t gpumem_mem_export_to_shareable_handle(int32_t *fd, gpumem_mem_handle_t handle, int32_t handle_type);
/** @brief Import a handle from an fd (the fd stays the caller's). */
GPUMEM_API gpumem_status_t gpumem_mem_import_from_shareable_handle(gpumem_mem_handle_t *handle, int32_t fd, int32_t handle_type);

/* ------------------------------------------------------------------------ */
/* Growable buffers                                                          */
/* ------------------------------------------------------------------------ */

typedef struct gpumem_buffer_s *gpumem_buffer_t;

/** @brief Reserve @p max_size (0 = device memory) and back @p size bytes on @p device. */
GPUMEM_API gpumem_status_t gpumem_buffer_create(gpumem_buffer_t *buffer, size_t size, size_t max_size, int32_t device);
/** @brief Grow or shrink; bytes up to min(old, new) keep their values. */
GPUMEM_API gpumem_status_t gpumem_buffer_resize(gpumem_buffer_t buffer, size_t new_size);
/** @brief Current data address (NULL while the size is 0 and nothing is mapped). */
GPUMEM_API gpumem_status_t gpumem_buffer_data(gpumem_buffer_t buffer, void **ptr);
/** @brief Current size in bytes. */
GPUMEM_API gpumem_status_t gpumem_buffer_size(gpumem_buffer_t buffer, size_t *size);
/** @brief Destroy the buffer and its memory. */
GPUMEM_API gpumem_status_t gpumem_buffer_destroy(gpumem_buffer_t buffer);

/* ------------------------------------------------------------------------ */
/* IPC helpers                                                               */
/* ------------------------------------------------------------------------ */

/** @brief Send @p fd over a connected AF_UNIX socket (SCM_RIGHTS). */
GPUMEM_API gpumem_status_t gpumem_ipc_send_fd(int32_t socket, int32_t fd);
/** @brief Receive a descriptor sent with gpumem_ipc_send_fd (caller closes it). */
GPUMEM_API gpumem_status_t gpumem_ipc_recv_fd(int32_t socket, int32_t *fd);

/* ------------------------------------------------------------------------ */
/* Allocator hooks for frameworks (PyTorch CUDAPluggableAllocator, CuPy)     */
/* ------------------------------------------------------------------------ */

#if !defined(_WIN32)
/** @brief Returns memory from @p device's current pool in @p stream's order; NULL on failure. */
GPUMEM_API void *gpumem_pluggable_malloc(ssize_t size, int device, void *stream);
/** @brief Returns @p ptr to its pool in @p stream's order. */
GPUMEM_API void gpumem_pluggable_free(void *ptr, ssize_t size, int device, void *stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUMEM_GPUMEM_H */
