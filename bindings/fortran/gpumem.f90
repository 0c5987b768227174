! gpumem: Fortran bindings (Fortran 2008 + iso_c_binding).
!
! Every C function of include/gpumem/gpumem.h is declared here under its own
! name with bind(C), and every constant is a named parameter of the same name.
! Type mapping (the C ABI is unchanged):
!   gpumem_status_t, int32_t       integer(c_int32_t)
!   uint32_t (flags, bitmasks)     integer(c_int32_t): same bits; Fortran has no unsigned
!   uint64_t, gpumem_mem_handle_t  integer(c_int64_t): values >= 2**63 read as negative
!   size_t                         integer(c_size_t)
!   void *, streams, events, pools, buffers    type(c_ptr) (c_null_ptr = NULL stream)
!   const char * results           type(c_ptr); gpumem_c_string() converts
!   gpumem_trace_fn                type(c_funptr) (c_funloc of a bind(C) subroutine)
! Exceptions forced by Fortran's case-insensitive names:
!   GPUMEM_VERSION (the macro) is GPUMEM_VERSION_NUMBER: it would clash with gpumem_version().
!   GPUMEM_<STRUCT>_INIT macros are the functions gpumem_<struct>_init().
! Arrays indexed by kind (gpumem_stats_t) run from 0 to GPUMEM_KIND_COUNT-1, so
! stats%current_bytes(GPUMEM_KIND_MANAGED) reads the C element of that index.
!
! SPDX-License-Identifier: MIT
module gpumem
  use, intrinsic :: iso_c_binding
  implicit none
  private :: array_bytes

  !> Kind of every gpumem status value.
  integer, parameter :: gpumem_status_kind = c_int32_t

  ! ---------------------------------------------------------------- constants
  integer(c_int32_t), parameter :: GPUMEM_VERSION_MAJOR = 0
  integer(c_int32_t), parameter :: GPUMEM_VERSION_MINOR = 4
  integer(c_int32_t), parameter :: GPUMEM_VERSION_PATCH = 0
  integer(c_int32_t), parameter :: GPUMEM_SUCCESS = 0
  integer(c_int32_t), parameter :: GPUMEM_ERROR_INVALID_VALUE = 1  ! bad argument
  integer(c_int32_t), parameter :: GPUMEM_ERROR_OUT_OF_MEMORY = 2  ! the allocation cannot be satisfied
  integer(c_int32_t), parameter :: GPUMEM_ERROR_NOT_SUPPORTED = 3  ! feature absent and its fallback off
  integer(c_int32_t), parameter :: GPUMEM_ERROR_NO_DEVICE = 4  ! no device for the requested backend
  integer(c_int32_t), parameter :: GPUMEM_ERROR_INVALID_DEVICE = 5  ! device id out of range
  ! not a live allocation of the kind this call takes
  integer(c_int32_t), parameter :: GPUMEM_ERROR_INVALID_POINTER = 6
  ! stream, event, pool, buffer or memory handle not live
  integer(c_int32_t), parameter :: GPUMEM_ERROR_INVALID_HANDLE = 7
  ! the backend's runtime cannot be loaded or started
  integer(c_int32_t), parameter :: GPUMEM_ERROR_BACKEND_UNAVAILABLE = 8
  integer(c_int32_t), parameter :: GPUMEM_ERROR_BACKEND = 9  ! the vendor runtime failed
  ! a shareable handle could not be exported/sent/received/imported
  integer(c_int32_t), parameter :: GPUMEM_ERROR_IPC = 10
  ! outstanding work or allocations the call cannot wait for
  integer(c_int32_t), parameter :: GPUMEM_ERROR_BUSY = 11
  integer(c_int32_t), parameter :: GPUMEM_BACKEND_AUTO = 0
  integer(c_int32_t), parameter :: GPUMEM_BACKEND_HOST = 1
  integer(c_int32_t), parameter :: GPUMEM_BACKEND_CUDA = 2
  integer(c_int32_t), parameter :: GPUMEM_BACKEND_HIP = 3
  integer(c_int32_t), parameter :: GPUMEM_DEVICE_HOST = -1
  integer(c_int32_t), parameter :: GPUMEM_SUPPORT_NONE = 0
  integer(c_int32_t), parameter :: GPUMEM_SUPPORT_EMULATED = 1  ! gpumem's fallback provides the semantics
  integer(c_int32_t), parameter :: GPUMEM_SUPPORT_NATIVE = 2
  integer(c_int32_t), parameter :: GPUMEM_SUPPORT_BROKEN = 3  ! claimed, but its self-test failed (0.4)
  integer(c_int32_t), parameter :: GPUMEM_HANDLE_NONE = 0
  integer(c_int32_t), parameter :: GPUMEM_HANDLE_POSIX_FD = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_HANDLE_FABRIC = 2  ! 0x2
  integer(c_int32_t), parameter :: GPUMEM_HOST_PORTABLE = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_HOST_MAPPED = 2  ! 0x2
  integer(c_int32_t), parameter :: GPUMEM_HOST_WRITE_COMBINED = 4  ! 0x4
  integer(c_int32_t), parameter :: GPUMEM_HOST_COHERENT = 8  ! 0x8; AMD hint; accepted and ignored elsewhere
  ! 0x10; AMD hint; accepted and ignored elsewhere
  integer(c_int32_t), parameter :: GPUMEM_HOST_NONCOHERENT = 16
  integer(c_int32_t), parameter :: GPUMEM_HOST_REGISTER_PORTABLE = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_HOST_REGISTER_MAPPED = 2  ! 0x2
  integer(c_int32_t), parameter :: GPUMEM_HOST_REGISTER_READ_ONLY = 8  ! 0x8
  integer(c_int32_t), parameter :: GPUMEM_ATTACH_GLOBAL = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_ATTACH_HOST = 2  ! 0x2
  integer(c_int32_t), parameter :: GPUMEM_ATTACH_SINGLE = 4  ! 0x4
  ! Streams and events as programs create them (0.5)
  integer(c_int32_t), parameter :: GPUMEM_STREAM_DEFAULT = 0  ! 0x0
  integer(c_int32_t), parameter :: GPUMEM_STREAM_NON_BLOCKING = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_EVENT_DEFAULT = 0  ! 0x0
  integer(c_int32_t), parameter :: GPUMEM_EVENT_BLOCKING_SYNC = 1  ! 0x1
  integer(c_int32_t), parameter :: GPUMEM_EVENT_DISABLE_TIMING = 2  ! 0x2
  integer(c_int32_t), parameter :: GPUMEM_EVENT_INTERPROCESS = 4  ! 0x4
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_SET_READ_MOSTLY = 1
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_UNSET_READ_MOSTLY = 2
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_SET_PREFERRED_LOCATION = 3
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_UNSET_PREFERRED_LOCATION = 4
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_SET_ACCESSED_BY = 5
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_UNSET_ACCESSED_BY = 6
  ! AMD; SUCCESS and no effect elsewhere
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_SET_COARSE_GRAIN = 100
  ! AMD; SUCCESS and no effect elsewhere
  integer(c_int32_t), parameter :: GPUMEM_ADVISE_UNSET_COARSE_GRAIN = 101
  integer(c_int32_t), parameter :: GPUMEM_RANGE_READ_MOSTLY = 1  ! int32
  ! int32 (device id, GPUMEM_DEVICE_HOST, or -2 = none)
  integer(c_int32_t), parameter :: GPUMEM_RANGE_PREFERRED_LOCATION = 2
  integer(c_int32_t), parameter :: GPUMEM_RANGE_ACCESSED_BY = 3  ! int32 array, unused entries -2
  integer(c_int32_t), parameter :: GPUMEM_RANGE_LAST_PREFETCH_LOCATION = 4  ! int32 (-2 = never prefetched)
  integer(c_int32_t), parameter :: GPUMEM_LOCATION_INVALID = -2
  integer(c_int32_t), parameter :: GPUMEM_KIND_UNKNOWN = 0
  integer(c_int32_t), parameter :: GPUMEM_KIND_DEVICE = 1
  integer(c_int32_t), parameter :: GPUMEM_KIND_HOST_PINNED = 2
  integer(c_int32_t), parameter :: GPUMEM_KIND_HOST_REGISTERED = 3
  integer(c_int32_t), parameter :: GPUMEM_KIND_MANAGED = 4
  integer(c_int32_t), parameter :: GPUMEM_KIND_STREAM_ORDERED = 5
  integer(c_int32_t), parameter :: GPUMEM_KIND_VIRTUAL = 6
  integer(c_int32_t), parameter :: GPUMEM_KIND_BUFFER = 7
  integer(c_int32_t), parameter :: GPUMEM_KIND_COUNT = 8
  integer(c_int32_t), parameter :: GPUMEM_TRACE_ALLOC = 1
  integer(c_int32_t), parameter :: GPUMEM_TRACE_FREE = 2
  integer(c_int32_t), parameter :: GPUMEM_POOL_AUTO = 0  ! native where the device has pools, else built-in
  integer(c_int32_t), parameter :: GPUMEM_POOL_NATIVE = 1  ! the vendor's pool; NOT_SUPPORTED where absent
  ! gpumem's own allocator even where native pools exist
  integer(c_int32_t), parameter :: GPUMEM_POOL_BUILTIN = 2
  integer(c_int32_t), parameter :: GPUMEM_POOL_RDMA = 1
  integer(c_int32_t), parameter :: GPUMEM_POOL_MEMORY_UNKNOWN = -1
  integer(c_int32_t), parameter :: GPUMEM_POOL_MEMORY_DEVICE = 0
  integer(c_int32_t), parameter :: GPUMEM_POOL_MEMORY_PINNED = 1
  integer(c_int32_t), parameter :: GPUMEM_POOL_MEMORY_MANAGED = 2
  ! int32 0/1, default 1
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2  ! int32 0/1, default 1
  ! int32 0/1, default 1
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_RELEASE_THRESHOLD = 4  ! uint64, default 0
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT = 5  ! uint64, read-only
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_RESERVED_MEM_HIGH = 6  ! uint64, set 0 to reset
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_USED_MEM_CURRENT = 7  ! uint64, read-only
  integer(c_int32_t), parameter :: GPUMEM_POOL_ATTR_USED_MEM_HIGH = 8  ! uint64, set 0 to reset
  integer(c_int32_t), parameter :: GPUMEM_ACCESS_NONE = 0
  integer(c_int32_t), parameter :: GPUMEM_ACCESS_READ = 1
  integer(c_int32_t), parameter :: GPUMEM_ACCESS_READWRITE = 3
  integer(c_int32_t), parameter :: GPUMEM_GRANULARITY_MINIMUM = 0
  integer(c_int32_t), parameter :: GPUMEM_GRANULARITY_RECOMMENDED = 1

  !> GPUMEM_VERSION of the header this module was made from (major*10000+minor*100+patch).
  integer(c_int32_t), parameter :: GPUMEM_VERSION_NUMBER = &
    GPUMEM_VERSION_MAJOR * 10000 + GPUMEM_VERSION_MINOR * 100 + GPUMEM_VERSION_PATCH

  ! ---------------------------------------------------------------- structs
  ! Field order and types are those of the C structs; use the *_init()
  ! functions, which set size, as C uses the GPUMEM_*_INIT initialisers.

  type, bind(C) :: gpumem_device_info_t
    integer(c_size_t) :: size = 0
    character(kind=c_char) :: name(256) = c_null_char
    integer(c_int32_t) :: backend = 0
    integer(c_int32_t) :: device = 0
    integer(c_int64_t) :: total_memory = 0
    integer(c_int64_t) :: free_memory = 0
    integer(c_int32_t) :: managed_memory = 0
    integer(c_int32_t) :: managed_migrates = 0
    integer(c_int32_t) :: pageable_memory_access = 0
    integer(c_int32_t) :: memory_pools = 0
    integer(c_int32_t) :: virtual_memory = 0
    integer(c_int32_t) :: ipc_handle_types = 0
    integer(c_int64_t) :: vmm_granularity = 0
    integer(c_int64_t) :: vmm_recommended_granularity = 0
    integer(c_int32_t) :: host_register = 0
    integer(c_int32_t) :: compute_capability = 0
    character(kind=c_char) :: arch_name(64) = c_null_char
    integer(c_int32_t) :: pool_ipc_handle_types = 0
    integer(c_int32_t) :: batch_memops = 0
    integer(c_int32_t) :: pinned_pools = 0
    integer(c_int32_t) :: managed_pools = 0
    integer(c_int32_t) :: rdma_memory = 0
    integer(c_int32_t) :: dmabuf = 0
    integer(c_int32_t) :: fabric_handles = 0
    integer(c_int32_t) :: rows = 0
    integer(c_int32_t) :: stream_priorities = 0
    integer(c_int32_t) :: host_funcs = 0
    integer(c_int32_t) :: ipc_events = 0
    character(kind=c_char) :: pci_bus_id(16) = c_null_char  ! 0.5: "0000:1b:00.0", NUL-terminated
    character(kind=c_char) :: uuid(16) = c_null_char        ! 0.5: the UUID's 16 raw bytes
    integer(c_int32_t) :: numa_node = 0                     ! 0.5: -1 where unknown
  end type gpumem_device_info_t

  type, bind(C) :: gpumem_pointer_info_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: kind = 0
    integer(c_int32_t) :: device = 0
    type(c_ptr) :: base = c_null_ptr
    integer(c_size_t) :: alloc_size = 0
    integer(c_int32_t) :: emulated = 0
    integer(c_int32_t) :: flags = 0
    type(c_ptr) :: pool = c_null_ptr
    type(c_ptr) :: device_pointer = c_null_ptr
    integer(c_int32_t) :: memory = 0
    integer(c_int32_t) :: vendor_known = 0  ! 0.5: 1 when the runtime described memory gpumem did not make
  end type gpumem_pointer_info_t

  type, bind(C) :: gpumem_stats_t
    integer(c_size_t) :: size = 0
    integer(c_int64_t) :: current_bytes(0:GPUMEM_KIND_COUNT - 1) = 0
    integer(c_int64_t) :: peak_bytes(0:GPUMEM_KIND_COUNT - 1) = 0
    integer(c_int64_t) :: alloc_count(0:GPUMEM_KIND_COUNT - 1) = 0
    integer(c_int64_t) :: free_count(0:GPUMEM_KIND_COUNT - 1) = 0
    integer(c_int64_t) :: fallback_count = 0
  end type gpumem_stats_t

  type, bind(C) :: gpumem_trace_event_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: op = 0
    integer(c_int32_t) :: kind = 0
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_size_t) :: bytes = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: emulated = 0
    type(c_ptr) :: stream = c_null_ptr
    type(c_ptr) :: pool = c_null_ptr
  end type gpumem_trace_event_t

  ! Snapshots (0.2): the library fills them; read them through c_f_pointer,
  ! stepping through each array by its elements' size field.
  type, bind(C) :: gpumem_snapshot_free_block_t
    integer(c_size_t) :: offset = 0
    integer(c_size_t) :: bytes = 0
  end type gpumem_snapshot_free_block_t

  type, bind(C) :: gpumem_snapshot_device_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: reserved0 = 0
    character(kind=c_char) :: name(256) = c_null_char
    integer(c_int64_t) :: total = 0
    integer(c_int64_t) :: free = 0
  end type gpumem_snapshot_device_t

  type, bind(C) :: gpumem_snapshot_pool_t
    integer(c_size_t) :: size = 0
    type(c_ptr) :: pool = c_null_ptr
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: implementation = 0
    integer(c_int32_t) :: memory = 0
    integer(c_int32_t) :: reserved0 = 0
    integer(c_int64_t) :: reserved_bytes = 0
    integer(c_int64_t) :: used_bytes = 0
  end type gpumem_snapshot_pool_t

  type, bind(C) :: gpumem_snapshot_allocation_t
    integer(c_size_t) :: size = 0
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_size_t) :: bytes = 0
    integer(c_int32_t) :: kind = 0
    integer(c_int32_t) :: memory = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: thread = 0
    type(c_ptr) :: pool = c_null_ptr
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int64_t) :: time_us = 0
    type(c_ptr) :: backtrace = c_null_ptr
    integer(c_size_t) :: backtrace_depth = 0
    integer(c_int64_t) :: graph = 0
  end type gpumem_snapshot_allocation_t

  type, bind(C) :: gpumem_snapshot_segment_t
    integer(c_size_t) :: size = 0
    type(c_ptr) :: pool = c_null_ptr
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: reserved0 = 0
    type(c_ptr) :: base = c_null_ptr
    integer(c_size_t) :: bytes = 0
    type(c_ptr) :: free_blocks = c_null_ptr
    integer(c_size_t) :: free_block_count = 0
    integer(c_size_t) :: backed_bytes = 0
  end type gpumem_snapshot_segment_t

  type, bind(C) :: gpumem_snapshot_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: backend = 0
    integer(c_int32_t) :: reserved0 = 0
    integer(c_int64_t) :: time_us = 0
    type(c_ptr) :: devices = c_null_ptr
    integer(c_size_t) :: device_count = 0
    type(c_ptr) :: pools = c_null_ptr
    integer(c_size_t) :: pool_count = 0
    type(c_ptr) :: allocations = c_null_ptr
    integer(c_size_t) :: allocation_count = 0
    type(c_ptr) :: segments = c_null_ptr
    integer(c_size_t) :: segment_count = 0
  end type gpumem_snapshot_t

  type, bind(C) :: gpumem_oom_remedy_t
    integer(c_int64_t) :: bytes = 0
    integer(c_int32_t) :: fits = 0
    integer(c_int32_t) :: reserved0 = 0
  end type gpumem_oom_remedy_t

  type, bind(C) :: gpumem_oom_report_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: has_report = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: kind = 0
    integer(c_int32_t) :: reserved0 = 0
    integer(c_int64_t) :: bytes = 0
    integer(c_int64_t) :: rounded_bytes = 0
    type(c_ptr) :: pool = c_null_ptr
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int64_t) :: device_free = 0
    integer(c_int64_t) :: device_total = 0
    integer(c_int64_t) :: gpumem_reserved = 0
    integer(c_int64_t) :: gpumem_used = 0
    integer(c_int64_t) :: limit = 0
    integer(c_int64_t) :: limit_held = 0
    type(gpumem_oom_remedy_t) :: trim
    type(c_ptr) :: trim_pool = c_null_ptr
    integer(c_int64_t) :: trim_pool_bytes = 0
    type(gpumem_oom_remedy_t) :: pending
    type(c_ptr) :: pending_stream = c_null_ptr
    type(gpumem_oom_remedy_t) :: fragmentation
    integer(c_int64_t) :: largest_free_block = 0
    type(gpumem_oom_remedy_t) :: limit_raise
    type(gpumem_oom_remedy_t) :: outside
    character(kind=c_char) :: verdict(256) = c_null_char
  end type gpumem_oom_report_t

  type, bind(C) :: gpumem_pool_props_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: handle_types = 0
    integer(c_int64_t) :: max_size = 0
    integer(c_int32_t) :: implementation = 0
    integer(c_int32_t) :: memory = 0
    integer(c_int32_t) :: numa_node = -1
    integer(c_int32_t) :: reserved1 = 0
    integer(c_int32_t) :: flags = 0
  end type gpumem_pool_props_t

  type, bind(C) :: gpumem_access_desc_t
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: flags = 0
  end type gpumem_access_desc_t

  type, bind(C) :: gpumem_pool_ptr_export_data_t
    integer(c_int8_t) :: reserved(64) = 0
  end type gpumem_pool_ptr_export_data_t

  !> An event shared between processes (0.5): 64 plain bytes.
  type, bind(C) :: gpumem_ipc_event_handle_t
    character(kind=c_char) :: reserved(64) = c_null_char
  end type gpumem_ipc_event_handle_t

  !> A copy of a box (0.5): gpumem_memcpy3d_init(), then every field.
  type, bind(C) :: gpumem_memcpy3d_t
    integer(c_size_t) :: size = 0
    type(c_ptr) :: src = c_null_ptr
    integer(c_size_t) :: src_pitch = 0
    integer(c_size_t) :: src_height = 0
    integer(c_size_t) :: src_x = 0
    integer(c_size_t) :: src_y = 0
    integer(c_size_t) :: src_z = 0
    type(c_ptr) :: dst = c_null_ptr
    integer(c_size_t) :: dst_pitch = 0
    integer(c_size_t) :: dst_height = 0
    integer(c_size_t) :: dst_x = 0
    integer(c_size_t) :: dst_y = 0
    integer(c_size_t) :: dst_z = 0
    integer(c_size_t) :: width = 0
    integer(c_size_t) :: height = 0
    integer(c_size_t) :: depth = 0
  end type gpumem_memcpy3d_t

  type, bind(C) :: gpumem_alloc_props_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: device = 0
    integer(c_int32_t) :: handle_types = 0
    integer(c_int32_t) :: flags = 0
  end type gpumem_alloc_props_t

  ! ---------------------------------------------------------------- C functions
  interface
    function gpumem_status_string(status) bind(C, name="gpumem_status_string")
      import
      integer(c_int32_t), value :: status
      type(c_ptr) :: gpumem_status_string
    end function gpumem_status_string

    function gpumem_last_error_message() bind(C, name="gpumem_last_error_message")
      import
      type(c_ptr) :: gpumem_last_error_message
    end function gpumem_last_error_message

    function gpumem_version() bind(C, name="gpumem_version")
      import
      integer(c_int32_t) :: gpumem_version
    end function gpumem_version

    function gpumem_init(backend) bind(C, name="gpumem_init")
      import
      integer(c_int32_t), value :: backend
      integer(c_int32_t) :: gpumem_init
    end function gpumem_init

    function gpumem_finalize() bind(C, name="gpumem_finalize")
      import
      integer(c_int32_t) :: gpumem_finalize
    end function gpumem_finalize

    function gpumem_get_backend(backend) bind(C, name="gpumem_get_backend")
      import
      integer(c_int32_t), intent(out) :: backend
      integer(c_int32_t) :: gpumem_get_backend
    end function gpumem_get_backend

    function gpumem_backend_name(backend) bind(C, name="gpumem_backend_name")
      import
      integer(c_int32_t), value :: backend
      type(c_ptr) :: gpumem_backend_name
    end function gpumem_backend_name

    function gpumem_device_count(count) bind(C, name="gpumem_device_count")
      import
      integer(c_int32_t), intent(out) :: count
      integer(c_int32_t) :: gpumem_device_count
    end function gpumem_device_count

    function gpumem_set_device(device) bind(C, name="gpumem_set_device")
      import
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_set_device
    end function gpumem_set_device

    function gpumem_get_device(device) bind(C, name="gpumem_get_device")
      import
      integer(c_int32_t), intent(out) :: device
      integer(c_int32_t) :: gpumem_get_device
    end function gpumem_get_device

    function gpumem_device_get_info(device, info) bind(C, name="gpumem_device_get_info")
      import
      integer(c_int32_t), value :: device
      type(gpumem_device_info_t), intent(inout) :: info
      integer(c_int32_t) :: gpumem_device_get_info
    end function gpumem_device_get_info

    ! Peer access (0.2): the current device reaching another device's plain device memory.
    function gpumem_device_can_access_peer(can_access, device, peer) bind(C, name="gpumem_device_can_access_peer")
      import
      integer(c_int32_t), intent(out) :: can_access
      integer(c_int32_t), value :: device
      integer(c_int32_t), value :: peer
      integer(c_int32_t) :: gpumem_device_can_access_peer
    end function gpumem_device_can_access_peer

    function gpumem_device_enable_peer_access(peer) bind(C, name="gpumem_device_enable_peer_access")
      import
      integer(c_int32_t), value :: peer
      integer(c_int32_t) :: gpumem_device_enable_peer_access
    end function gpumem_device_enable_peer_access

    function gpumem_device_disable_peer_access(peer) bind(C, name="gpumem_device_disable_peer_access")
      import
      integer(c_int32_t), value :: peer
      integer(c_int32_t) :: gpumem_device_disable_peer_access
    end function gpumem_device_disable_peer_access

    ! names and descriptions receive C strings (c_f_pointer / a strlen loop reads them);
    ! pass c_null_ptr-filled arrays of capacity entries, or capacity 0 for the count alone.
    function gpumem_workarounds_get(names, descriptions, capacity, count) bind(C, name="gpumem_workarounds_get")
      import
      type(c_ptr), intent(out) :: names(*)
      type(c_ptr), intent(out) :: descriptions(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: count
      integer(c_int32_t) :: gpumem_workarounds_get
    end function gpumem_workarounds_get

    function gpumem_mem_get_info(free_bytes, total_bytes) bind(C, name="gpumem_mem_get_info")
      import
      integer(c_size_t), intent(out) :: free_bytes
      integer(c_size_t), intent(out) :: total_bytes
      integer(c_int32_t) :: gpumem_mem_get_info
    end function gpumem_mem_get_info

    function gpumem_stream_create(stream) bind(C, name="gpumem_stream_create")
      import
      type(c_ptr), intent(out) :: stream
      integer(c_int32_t) :: gpumem_stream_create
    end function gpumem_stream_create

    function gpumem_stream_destroy(stream) bind(C, name="gpumem_stream_destroy")
      import
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_destroy
    end function gpumem_stream_destroy

    function gpumem_stream_synchronize(stream) bind(C, name="gpumem_stream_synchronize")
      import
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_synchronize
    end function gpumem_stream_synchronize

    function gpumem_stream_query(stream) bind(C, name="gpumem_stream_query")
      import
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_query
    end function gpumem_stream_query

    function gpumem_stream_wrap(native, stream) bind(C, name="gpumem_stream_wrap")
      import
      type(c_ptr), value :: native
      type(c_ptr), intent(out) :: stream
      integer(c_int32_t) :: gpumem_stream_wrap
    end function gpumem_stream_wrap

    function gpumem_stream_native(stream) bind(C, name="gpumem_stream_native")
      import
      type(c_ptr), value :: stream
      type(c_ptr) :: gpumem_stream_native
    end function gpumem_stream_native

    function gpumem_event_create(event) bind(C, name="gpumem_event_create")
      import
      type(c_ptr), intent(out) :: event
      integer(c_int32_t) :: gpumem_event_create
    end function gpumem_event_create

    function gpumem_event_destroy(event) bind(C, name="gpumem_event_destroy")
      import
      type(c_ptr), value :: event
      integer(c_int32_t) :: gpumem_event_destroy
    end function gpumem_event_destroy

    function gpumem_event_record(event, stream) bind(C, name="gpumem_event_record")
      import
      type(c_ptr), value :: event
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_event_record
    end function gpumem_event_record

    function gpumem_event_synchronize(event) bind(C, name="gpumem_event_synchronize")
      import
      type(c_ptr), value :: event
      integer(c_int32_t) :: gpumem_event_synchronize
    end function gpumem_event_synchronize

    function gpumem_event_query(event) bind(C, name="gpumem_event_query")
      import
      type(c_ptr), value :: event
      integer(c_int32_t) :: gpumem_event_query
    end function gpumem_event_query

    function gpumem_stream_wait_event(stream, event) bind(C, name="gpumem_stream_wait_event")
      import
      type(c_ptr), value :: stream
      type(c_ptr), value :: event
      integer(c_int32_t) :: gpumem_stream_wait_event
    end function gpumem_stream_wait_event

    function gpumem_event_elapsed_ms(ms, start_event, end_event) &
        bind(C, name="gpumem_event_elapsed_ms")
      import
      real(c_float), intent(out) :: ms
      type(c_ptr), value :: start_event
      type(c_ptr), value :: end_event
      integer(c_int32_t) :: gpumem_event_elapsed_ms
    end function gpumem_event_elapsed_ms

    function gpumem_device_synchronize() bind(C, name="gpumem_device_synchronize")
      import
      integer(c_int32_t) :: gpumem_device_synchronize
    end function gpumem_device_synchronize

    ! Streams and events as programs create them (0.5).
    function gpumem_stream_create_with_flags(stream, flags, priority) &
        bind(C, name="gpumem_stream_create_with_flags")
      import
      type(c_ptr), intent(out) :: stream
      integer(c_int32_t), value :: flags
      integer(c_int32_t), value :: priority
      integer(c_int32_t) :: gpumem_stream_create_with_flags
    end function gpumem_stream_create_with_flags

    function gpumem_device_get_stream_priority_range(least, greatest, device) &
        bind(C, name="gpumem_device_get_stream_priority_range")
      import
      integer(c_int32_t), intent(out) :: least
      integer(c_int32_t), intent(out) :: greatest
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_device_get_stream_priority_range
    end function gpumem_device_get_stream_priority_range

    function gpumem_stream_get_flags(flags, stream) bind(C, name="gpumem_stream_get_flags")
      import
      integer(c_int32_t), intent(out) :: flags
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_get_flags
    end function gpumem_stream_get_flags

    function gpumem_stream_get_priority(priority, stream) bind(C, name="gpumem_stream_get_priority")
      import
      integer(c_int32_t), intent(out) :: priority
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_get_priority
    end function gpumem_stream_get_priority

    function gpumem_stream_get_device(device, stream) bind(C, name="gpumem_stream_get_device")
      import
      integer(c_int32_t), intent(out) :: device
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_stream_get_device
    end function gpumem_stream_get_device

    function gpumem_event_create_with_flags(event, flags) bind(C, name="gpumem_event_create_with_flags")
      import
      type(c_ptr), intent(out) :: event
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_event_create_with_flags
    end function gpumem_event_create_with_flags

    function gpumem_ipc_get_event_handle(handle, event) bind(C, name="gpumem_ipc_get_event_handle")
      import
      type(gpumem_ipc_event_handle_t), intent(out) :: handle
      type(c_ptr), value :: event
      integer(c_int32_t) :: gpumem_ipc_get_event_handle
    end function gpumem_ipc_get_event_handle

    function gpumem_ipc_open_event_handle(event, handle) bind(C, name="gpumem_ipc_open_event_handle")
      import
      type(c_ptr), intent(out) :: event
      type(gpumem_ipc_event_handle_t), intent(in) :: handle
      integer(c_int32_t) :: gpumem_ipc_open_event_handle
    end function gpumem_ipc_open_event_handle

    ! fn: c_funloc of a bind(C) subroutine taking one type(c_ptr), value argument.
    function gpumem_launch_host_func(stream, fn, user) bind(C, name="gpumem_launch_host_func")
      import
      type(c_ptr), value :: stream
      type(c_funptr), value :: fn
      type(c_ptr), value :: user
      integer(c_int32_t) :: gpumem_launch_host_func
    end function gpumem_launch_host_func

    function gpumem_malloc(ptr, size) bind(C, name="gpumem_malloc")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t) :: gpumem_malloc
    end function gpumem_malloc

    function gpumem_free(ptr) bind(C, name="gpumem_free")
      import
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_free
    end function gpumem_free

    function gpumem_memcpy(dst, src, n) bind(C, name="gpumem_memcpy")
      import
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      integer(c_size_t), value :: n
      integer(c_int32_t) :: gpumem_memcpy
    end function gpumem_memcpy

    function gpumem_memcpy_async(dst, src, n, stream) bind(C, name="gpumem_memcpy_async")
      import
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      integer(c_size_t), value :: n
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memcpy_async
    end function gpumem_memcpy_async

    function gpumem_memset(dst, val, n) bind(C, name="gpumem_memset")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: n
      integer(c_int32_t) :: gpumem_memset
    end function gpumem_memset

    function gpumem_memset_async(dst, val, n, stream) bind(C, name="gpumem_memset_async")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: n
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memset_async
    end function gpumem_memset_async

    ! Rows and boxes (0.5).
    function gpumem_malloc_pitch(ptr, pitch, width, height) bind(C, name="gpumem_malloc_pitch")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), intent(out) :: pitch
      integer(c_size_t), value :: width
      integer(c_size_t), value :: height
      integer(c_int32_t) :: gpumem_malloc_pitch
    end function gpumem_malloc_pitch

    function gpumem_memcpy_2d(dst, dpitch, src, spitch, width, height) bind(C, name="gpumem_memcpy_2d")
      import
      type(c_ptr), value :: dst
      integer(c_size_t), value :: dpitch
      type(c_ptr), value :: src
      integer(c_size_t), value :: spitch
      integer(c_size_t), value :: width
      integer(c_size_t), value :: height
      integer(c_int32_t) :: gpumem_memcpy_2d
    end function gpumem_memcpy_2d

    function gpumem_memcpy_2d_async(dst, dpitch, src, spitch, width, height, stream) &
        bind(C, name="gpumem_memcpy_2d_async")
      import
      type(c_ptr), value :: dst
      integer(c_size_t), value :: dpitch
      type(c_ptr), value :: src
      integer(c_size_t), value :: spitch
      integer(c_size_t), value :: width
      integer(c_size_t), value :: height
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memcpy_2d_async
    end function gpumem_memcpy_2d_async

    function gpumem_memset_2d(dst, pitch, val, width, height) bind(C, name="gpumem_memset_2d")
      import
      type(c_ptr), value :: dst
      integer(c_size_t), value :: pitch
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: width
      integer(c_size_t), value :: height
      integer(c_int32_t) :: gpumem_memset_2d
    end function gpumem_memset_2d

    function gpumem_memset_2d_async(dst, pitch, val, width, height, stream) &
        bind(C, name="gpumem_memset_2d_async")
      import
      type(c_ptr), value :: dst
      integer(c_size_t), value :: pitch
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: width
      integer(c_size_t), value :: height
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memset_2d_async
    end function gpumem_memset_2d_async

    function gpumem_memset_d16(dst, val, count) bind(C, name="gpumem_memset_d16")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_memset_d16
    end function gpumem_memset_d16

    function gpumem_memset_d16_async(dst, val, count, stream) bind(C, name="gpumem_memset_d16_async")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: count
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memset_d16_async
    end function gpumem_memset_d16_async

    function gpumem_memset_d32(dst, val, count) bind(C, name="gpumem_memset_d32")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_memset_d32
    end function gpumem_memset_d32

    function gpumem_memset_d32_async(dst, val, count, stream) bind(C, name="gpumem_memset_d32_async")
      import
      type(c_ptr), value :: dst
      integer(c_int32_t), value :: val
      integer(c_size_t), value :: count
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memset_d32_async
    end function gpumem_memset_d32_async

    function gpumem_memcpy_3d(copy) bind(C, name="gpumem_memcpy_3d")
      import
      type(gpumem_memcpy3d_t), intent(in) :: copy
      integer(c_int32_t) :: gpumem_memcpy_3d
    end function gpumem_memcpy_3d

    function gpumem_memcpy_3d_async(copy, stream) bind(C, name="gpumem_memcpy_3d_async")
      import
      type(gpumem_memcpy3d_t), intent(in) :: copy
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memcpy_3d_async
    end function gpumem_memcpy_3d_async

    ! Batched copies, prefetches and discards (0.2): arrays of count entries.
    function gpumem_memcpy_batch_async(dsts, srcs, sizes, count, stream) &
        bind(C, name="gpumem_memcpy_batch_async")
      import
      type(c_ptr), intent(in) :: dsts(*)
      type(c_ptr), intent(in) :: srcs(*)
      integer(c_size_t), intent(in) :: sizes(*)
      integer(c_size_t), value :: count
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_memcpy_batch_async
    end function gpumem_memcpy_batch_async

    function gpumem_prefetch_batch_async(ptrs, sizes, count, devices, stream) &
        bind(C, name="gpumem_prefetch_batch_async")
      import
      type(c_ptr), intent(in) :: ptrs(*)
      integer(c_size_t), intent(in) :: sizes(*)
      integer(c_size_t), value :: count
      integer(c_int32_t), intent(in) :: devices(*)
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_prefetch_batch_async
    end function gpumem_prefetch_batch_async

    function gpumem_discard_batch_async(ptrs, sizes, count, stream) &
        bind(C, name="gpumem_discard_batch_async")
      import
      type(c_ptr), intent(in) :: ptrs(*)
      integer(c_size_t), intent(in) :: sizes(*)
      integer(c_size_t), value :: count
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_discard_batch_async
    end function gpumem_discard_batch_async

    function gpumem_host_alloc(ptr, size, flags) bind(C, name="gpumem_host_alloc")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_host_alloc
    end function gpumem_host_alloc

    function gpumem_host_free(ptr) bind(C, name="gpumem_host_free")
      import
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_host_free
    end function gpumem_host_free

    function gpumem_host_register(ptr, size, flags) bind(C, name="gpumem_host_register")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_host_register
    end function gpumem_host_register

    function gpumem_host_unregister(ptr) bind(C, name="gpumem_host_unregister")
      import
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_host_unregister
    end function gpumem_host_unregister

    function gpumem_host_get_device_pointer(dptr, hptr) &
        bind(C, name="gpumem_host_get_device_pointer")
      import
      type(c_ptr), intent(out) :: dptr
      type(c_ptr), value :: hptr
      integer(c_int32_t) :: gpumem_host_get_device_pointer
    end function gpumem_host_get_device_pointer

    function gpumem_managed_alloc(ptr, size, flags) bind(C, name="gpumem_managed_alloc")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_managed_alloc
    end function gpumem_managed_alloc

    function gpumem_prefetch_async(ptr, count, device, stream) bind(C, name="gpumem_prefetch_async")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: count
      integer(c_int32_t), value :: device
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_prefetch_async
    end function gpumem_prefetch_async

    function gpumem_advise(ptr, count, advice, device) bind(C, name="gpumem_advise")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: count
      integer(c_int32_t), value :: advice
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_advise
    end function gpumem_advise

    function gpumem_range_get_attribute(data, data_size, attribute, ptr, count) &
        bind(C, name="gpumem_range_get_attribute")
      import
      type(c_ptr), value :: data
      integer(c_size_t), value :: data_size
      integer(c_int32_t), value :: attribute
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_range_get_attribute
    end function gpumem_range_get_attribute

    function gpumem_range_get_attributes(data, data_sizes, attributes, n, ptr, count) &
        bind(C, name="gpumem_range_get_attributes")
      import
      type(c_ptr), intent(in) :: data(*)
      integer(c_size_t), intent(in) :: data_sizes(*)
      integer(c_int32_t), intent(in) :: attributes(*)
      integer(c_size_t), value :: n
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_range_get_attributes
    end function gpumem_range_get_attributes

    function gpumem_stream_attach(stream, ptr, length, flags) bind(C, name="gpumem_stream_attach")
      import
      type(c_ptr), value :: stream
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: length
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_stream_attach
    end function gpumem_stream_attach

    function gpumem_pointer_get_info(ptr, info) bind(C, name="gpumem_pointer_get_info")
      import
      type(c_ptr), value :: ptr
      type(gpumem_pointer_info_t), intent(inout) :: info
      integer(c_int32_t) :: gpumem_pointer_get_info
    end function gpumem_pointer_get_info

    function gpumem_get_stats(stats) bind(C, name="gpumem_get_stats")
      import
      type(gpumem_stats_t), intent(inout) :: stats
      integer(c_int32_t) :: gpumem_get_stats
    end function gpumem_get_stats

    function gpumem_reset_peak_stats() bind(C, name="gpumem_reset_peak_stats")
      import
      integer(c_int32_t) :: gpumem_reset_peak_stats
    end function gpumem_reset_peak_stats

    function gpumem_set_trace_callback(fn, user) bind(C, name="gpumem_set_trace_callback")
      import
      type(c_funptr), value :: fn
      type(c_ptr), value :: user
      integer(c_int32_t) :: gpumem_set_trace_callback
    end function gpumem_set_trace_callback

    ! Seeing and debugging memory (0.2)
    function gpumem_kind_name(kind) bind(C, name="gpumem_kind_name")
      import
      integer(c_int32_t), value :: kind
      type(c_ptr) :: gpumem_kind_name
    end function gpumem_kind_name

    function gpumem_snapshot_take(snapshot) bind(C, name="gpumem_snapshot_take")
      import
      type(c_ptr), intent(out) :: snapshot
      integer(c_int32_t) :: gpumem_snapshot_take
    end function gpumem_snapshot_take

    function gpumem_snapshot_release(snapshot) bind(C, name="gpumem_snapshot_release")
      import
      type(c_ptr), value :: snapshot
      integer(c_int32_t) :: gpumem_snapshot_release
    end function gpumem_snapshot_release

    function gpumem_snapshot_write_json(snapshot, path) bind(C, name="gpumem_snapshot_write_json")
      import
      type(c_ptr), value :: snapshot
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int32_t) :: gpumem_snapshot_write_json
    end function gpumem_snapshot_write_json

    function gpumem_last_oom_report(report) bind(C, name="gpumem_last_oom_report")
      import
      type(gpumem_oom_report_t), intent(inout) :: report
      integer(c_int32_t) :: gpumem_last_oom_report
    end function gpumem_last_oom_report

    function gpumem_malloc_async(ptr, size, stream) bind(C, name="gpumem_malloc_async")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_malloc_async
    end function gpumem_malloc_async

    function gpumem_free_async(ptr, stream) bind(C, name="gpumem_free_async")
      import
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_free_async
    end function gpumem_free_async

    function gpumem_pool_create(pool, props) bind(C, name="gpumem_pool_create")
      import
      type(c_ptr), intent(out) :: pool
      type(gpumem_pool_props_t), intent(in) :: props
      integer(c_int32_t) :: gpumem_pool_create
    end function gpumem_pool_create

    function gpumem_pool_destroy(pool) bind(C, name="gpumem_pool_destroy")
      import
      type(c_ptr), value :: pool
      integer(c_int32_t) :: gpumem_pool_destroy
    end function gpumem_pool_destroy

    function gpumem_device_get_default_pool(pool, device) &
        bind(C, name="gpumem_device_get_default_pool")
      import
      type(c_ptr), intent(out) :: pool
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_device_get_default_pool
    end function gpumem_device_get_default_pool

    ! 0.2: the process's default pool of GPUMEM_POOL_MEMORY_* for a device or a host NUMA node.
    function gpumem_get_default_pool_for(pool, memory, location) &
        bind(C, name="gpumem_get_default_pool_for")
      import
      type(c_ptr), intent(out) :: pool
      integer(c_int32_t), value :: memory
      integer(c_int32_t), value :: location
      integer(c_int32_t) :: gpumem_get_default_pool_for
    end function gpumem_get_default_pool_for

    function gpumem_device_set_pool(device, pool) bind(C, name="gpumem_device_set_pool")
      import
      integer(c_int32_t), value :: device
      type(c_ptr), value :: pool
      integer(c_int32_t) :: gpumem_device_set_pool
    end function gpumem_device_set_pool

    function gpumem_device_get_pool(pool, device) bind(C, name="gpumem_device_get_pool")
      import
      type(c_ptr), intent(out) :: pool
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_device_get_pool
    end function gpumem_device_get_pool

    function gpumem_malloc_from_pool_async(ptr, size, pool, stream) &
        bind(C, name="gpumem_malloc_from_pool_async")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      type(c_ptr), value :: pool
      type(c_ptr), value :: stream
      integer(c_int32_t) :: gpumem_malloc_from_pool_async
    end function gpumem_malloc_from_pool_async

    function gpumem_pool_set_attribute(pool, attr, val) bind(C, name="gpumem_pool_set_attribute")
      import
      type(c_ptr), value :: pool
      integer(c_int32_t), value :: attr
      type(c_ptr), value :: val
      integer(c_int32_t) :: gpumem_pool_set_attribute
    end function gpumem_pool_set_attribute

    function gpumem_pool_get_attribute(pool, attr, val) bind(C, name="gpumem_pool_get_attribute")
      import
      type(c_ptr), value :: pool
      integer(c_int32_t), value :: attr
      type(c_ptr), value :: val
      integer(c_int32_t) :: gpumem_pool_get_attribute
    end function gpumem_pool_get_attribute

    function gpumem_pool_trim_to(pool, min_bytes_to_keep) bind(C, name="gpumem_pool_trim_to")
      import
      type(c_ptr), value :: pool
      integer(c_size_t), value :: min_bytes_to_keep
      integer(c_int32_t) :: gpumem_pool_trim_to
    end function gpumem_pool_trim_to

    function gpumem_pool_set_access(pool, descs, count) bind(C, name="gpumem_pool_set_access")
      import
      type(c_ptr), value :: pool
      type(gpumem_access_desc_t), intent(in) :: descs(*)
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_pool_set_access
    end function gpumem_pool_set_access

    function gpumem_pool_get_access(flags, pool, device) bind(C, name="gpumem_pool_get_access")
      import
      integer(c_int32_t), intent(out) :: flags
      type(c_ptr), value :: pool
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_pool_get_access
    end function gpumem_pool_get_access

    function gpumem_pool_export_to_shareable_handle(fd, pool, handle_type) &
        bind(C, name="gpumem_pool_export_to_shareable_handle")
      import
      integer(c_int32_t), intent(out) :: fd
      type(c_ptr), value :: pool
      integer(c_int32_t), value :: handle_type
      integer(c_int32_t) :: gpumem_pool_export_to_shareable_handle
    end function gpumem_pool_export_to_shareable_handle

    function gpumem_pool_import_from_shareable_handle(pool, fd, handle_type) &
        bind(C, name="gpumem_pool_import_from_shareable_handle")
      import
      type(c_ptr), intent(out) :: pool
      integer(c_int32_t), value :: fd
      integer(c_int32_t), value :: handle_type
      integer(c_int32_t) :: gpumem_pool_import_from_shareable_handle
    end function gpumem_pool_import_from_shareable_handle

    function gpumem_pool_export_pointer(data, ptr) bind(C, name="gpumem_pool_export_pointer")
      import
      type(gpumem_pool_ptr_export_data_t), intent(out) :: data
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_pool_export_pointer
    end function gpumem_pool_export_pointer

    function gpumem_pool_import_pointer(ptr, pool, data) bind(C, name="gpumem_pool_import_pointer")
      import
      type(c_ptr), intent(out) :: ptr
      type(c_ptr), value :: pool
      type(gpumem_pool_ptr_export_data_t), intent(in) :: data
      integer(c_int32_t) :: gpumem_pool_import_pointer
    end function gpumem_pool_import_pointer

    function gpumem_mem_get_granularity(granularity, props, option) &
        bind(C, name="gpumem_mem_get_granularity")
      import
      integer(c_size_t), intent(out) :: granularity
      type(gpumem_alloc_props_t), intent(in) :: props
      integer(c_int32_t), value :: option
      integer(c_int32_t) :: gpumem_mem_get_granularity
    end function gpumem_mem_get_granularity

    function gpumem_mem_create(handle, size, props) bind(C, name="gpumem_mem_create")
      import
      integer(c_int64_t), intent(out) :: handle
      integer(c_size_t), value :: size
      type(gpumem_alloc_props_t), intent(in) :: props
      integer(c_int32_t) :: gpumem_mem_create
    end function gpumem_mem_create

    function gpumem_mem_release(handle) bind(C, name="gpumem_mem_release")
      import
      integer(c_int64_t), value :: handle
      integer(c_int32_t) :: gpumem_mem_release
    end function gpumem_mem_release

    function gpumem_mem_retain_allocation_handle(handle, ptr) bind(C, name="gpumem_mem_retain_allocation_handle")
      import
      integer(c_int64_t), intent(out) :: handle
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_mem_retain_allocation_handle
    end function gpumem_mem_retain_allocation_handle

    function gpumem_mem_get_allocation_properties(props, handle) &
        bind(C, name="gpumem_mem_get_allocation_properties")
      import
      type(gpumem_alloc_props_t), intent(inout) :: props
      integer(c_int64_t), value :: handle
      integer(c_int32_t) :: gpumem_mem_get_allocation_properties
    end function gpumem_mem_get_allocation_properties

    function gpumem_mem_address_reserve(ptr, size, alignment, addr_hint) &
        bind(C, name="gpumem_mem_address_reserve")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: size
      integer(c_size_t), value :: alignment
      type(c_ptr), value :: addr_hint
      integer(c_int32_t) :: gpumem_mem_address_reserve
    end function gpumem_mem_address_reserve

    function gpumem_mem_address_free(ptr, size) bind(C, name="gpumem_mem_address_free")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t) :: gpumem_mem_address_free
    end function gpumem_mem_address_free

    function gpumem_mem_map(ptr, size, offset, handle) bind(C, name="gpumem_mem_map")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_size_t), value :: offset
      integer(c_int64_t), value :: handle
      integer(c_int32_t) :: gpumem_mem_map
    end function gpumem_mem_map

    function gpumem_mem_unmap(ptr, size) bind(C, name="gpumem_mem_unmap")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t) :: gpumem_mem_unmap
    end function gpumem_mem_unmap

    function gpumem_mem_set_access(ptr, size, descs, count) bind(C, name="gpumem_mem_set_access")
      import
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      type(gpumem_access_desc_t), intent(in) :: descs(*)
      integer(c_size_t), value :: count
      integer(c_int32_t) :: gpumem_mem_set_access
    end function gpumem_mem_set_access

    function gpumem_mem_get_access(flags, device, ptr) bind(C, name="gpumem_mem_get_access")
      import
      integer(c_int64_t), intent(out) :: flags
      integer(c_int32_t), value :: device
      type(c_ptr), value :: ptr
      integer(c_int32_t) :: gpumem_mem_get_access
    end function gpumem_mem_get_access

    function gpumem_mem_export_to_shareable_handle(fd, handle, handle_type) &
        bind(C, name="gpumem_mem_export_to_shareable_handle")
      import
      integer(c_int32_t), intent(out) :: fd
      integer(c_int64_t), value :: handle
      integer(c_int32_t), value :: handle_type
      integer(c_int32_t) :: gpumem_mem_export_to_shareable_handle
    end function gpumem_mem_export_to_shareable_handle

    function gpumem_mem_import_from_shareable_handle(handle, fd, handle_type) &
        bind(C, name="gpumem_mem_import_from_shareable_handle")
      import
      integer(c_int64_t), intent(out) :: handle
      integer(c_int32_t), value :: fd
      integer(c_int32_t), value :: handle_type
      integer(c_int32_t) :: gpumem_mem_import_from_shareable_handle
    end function gpumem_mem_import_from_shareable_handle

    function gpumem_mem_export_dmabuf(fd, ptr, size, flags) bind(C, name="gpumem_mem_export_dmabuf")
      import
      integer(c_int32_t), intent(out) :: fd
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_int32_t), value :: flags
      integer(c_int32_t) :: gpumem_mem_export_dmabuf
    end function gpumem_mem_export_dmabuf

    function gpumem_buffer_create(buffer, size, max_size, device) &
        bind(C, name="gpumem_buffer_create")
      import
      type(c_ptr), intent(out) :: buffer
      integer(c_size_t), value :: size
      integer(c_size_t), value :: max_size
      integer(c_int32_t), value :: device
      integer(c_int32_t) :: gpumem_buffer_create
    end function gpumem_buffer_create

    function gpumem_buffer_resize(buffer, new_size) bind(C, name="gpumem_buffer_resize")
      import
      type(c_ptr), value :: buffer
      integer(c_size_t), value :: new_size
      integer(c_int32_t) :: gpumem_buffer_resize
    end function gpumem_buffer_resize

    function gpumem_buffer_data(buffer, ptr) bind(C, name="gpumem_buffer_data")
      import
      type(c_ptr), value :: buffer
      type(c_ptr), intent(out) :: ptr
      integer(c_int32_t) :: gpumem_buffer_data
    end function gpumem_buffer_data

    function gpumem_buffer_size(buffer, size) bind(C, name="gpumem_buffer_size")
      import
      type(c_ptr), value :: buffer
      integer(c_size_t), intent(out) :: size
      integer(c_int32_t) :: gpumem_buffer_size
    end function gpumem_buffer_size

    function gpumem_buffer_destroy(buffer) bind(C, name="gpumem_buffer_destroy")
      import
      type(c_ptr), value :: buffer
      integer(c_int32_t) :: gpumem_buffer_destroy
    end function gpumem_buffer_destroy

    function gpumem_ipc_send_fd(socket, fd) bind(C, name="gpumem_ipc_send_fd")
      import
      integer(c_int32_t), value :: socket
      integer(c_int32_t), value :: fd
      integer(c_int32_t) :: gpumem_ipc_send_fd
    end function gpumem_ipc_send_fd

    function gpumem_ipc_recv_fd(socket, fd) bind(C, name="gpumem_ipc_recv_fd")
      import
      integer(c_int32_t), value :: socket
      integer(c_int32_t), intent(out) :: fd
      integer(c_int32_t) :: gpumem_ipc_recv_fd
    end function gpumem_ipc_recv_fd

    function gpumem_pluggable_malloc(size, device, stream) bind(C, name="gpumem_pluggable_malloc")
      import
      integer(c_intptr_t), value :: size
      integer(c_int), value :: device
      type(c_ptr), value :: stream
      type(c_ptr) :: gpumem_pluggable_malloc
    end function gpumem_pluggable_malloc

    subroutine gpumem_pluggable_free(ptr, size, device, stream) &
        bind(C, name="gpumem_pluggable_free")
      import
      type(c_ptr), value :: ptr
      integer(c_intptr_t), value :: size
      integer(c_int), value :: device
      type(c_ptr), value :: stream
    end subroutine gpumem_pluggable_free

    function gpumem_hook_malloc(stream, size, device) bind(C, name="gpumem_hook_malloc")
      import
      type(c_ptr), value :: stream
      integer(c_size_t), value :: size
      integer(c_int), value :: device
      type(c_ptr) :: gpumem_hook_malloc
    end function gpumem_hook_malloc

    subroutine gpumem_hook_free(stream, ptr, device) bind(C, name="gpumem_hook_free")
      import
      type(c_ptr), value :: stream
      type(c_ptr), value :: ptr
      integer(c_int), value :: device
    end subroutine gpumem_hook_free
  end interface

  ! ---------------------------------------------------------------- Fortran helpers
  ! gpumem_view(ptr, shape, array): a Fortran array pointer over host-accessible
  !   gpumem memory (managed, pinned, buffer data on the host backend); real(4),
  !   real(8), integer(4), integer(8), ranks 1 to 3.  array is nullified when ptr
  !   is NULL or size(shape) differs from the rank.
  ! gpumem_alloc_managed(array, shape, status [, flags, ptr]) and
  ! gpumem_alloc_pinned(array, shape, status [, flags, ptr]): allocate
  !   product(shape) elements with gpumem_managed_alloc / gpumem_host_alloc and
  !   point array at them; free with gpumem_free(c_loc(array)) (or the ptr returned).
  ! gpumem_alloc_device(ptr, shape, mold, status): gpumem_malloc of product(shape)
  !   elements of mold's type; device memory has no Fortran array: copy with
  !   gpumem_memcpy(ptr, c_loc(host), bytes).
  interface gpumem_view
    module procedure gpumem_view_r4_1d
    module procedure gpumem_view_r4_2d
    module procedure gpumem_view_r4_3d
    module procedure gpumem_view_r8_1d
    module procedure gpumem_view_r8_2d
    module procedure gpumem_view_r8_3d
    module procedure gpumem_view_i4_1d
    module procedure gpumem_view_i4_2d
    module procedure gpumem_view_i4_3d
    module procedure gpumem_view_i8_1d
    module procedure gpumem_view_i8_2d
    module procedure gpumem_view_i8_3d
  end interface gpumem_view

  interface gpumem_alloc_managed
    module procedure gpumem_alloc_managed_r4_1d
    module procedure gpumem_alloc_managed_r4_2d
    module procedure gpumem_alloc_managed_r4_3d
    module procedure gpumem_alloc_managed_r8_1d
    module procedure gpumem_alloc_managed_r8_2d
    module procedure gpumem_alloc_managed_r8_3d
    module procedure gpumem_alloc_managed_i4_1d
    module procedure gpumem_alloc_managed_i4_2d
    module procedure gpumem_alloc_managed_i4_3d
    module procedure gpumem_alloc_managed_i8_1d
    module procedure gpumem_alloc_managed_i8_2d
    module procedure gpumem_alloc_managed_i8_3d
  end interface gpumem_alloc_managed

  interface gpumem_alloc_pinned
    module procedure gpumem_alloc_pinned_r4_1d
    module procedure gpumem_alloc_pinned_r4_2d
    module procedure gpumem_alloc_pinned_r4_3d
    module procedure gpumem_alloc_pinned_r8_1d
    module procedure gpumem_alloc_pinned_r8_2d
    module procedure gpumem_alloc_pinned_r8_3d
    module procedure gpumem_alloc_pinned_i4_1d
    module procedure gpumem_alloc_pinned_i4_2d
    module procedure gpumem_alloc_pinned_i4_3d
    module procedure gpumem_alloc_pinned_i8_1d
    module procedure gpumem_alloc_pinned_i8_2d
    module procedure gpumem_alloc_pinned_i8_3d
  end interface gpumem_alloc_pinned

  interface gpumem_alloc_device
    module procedure gpumem_alloc_device_r4
    module procedure gpumem_alloc_device_r8
    module procedure gpumem_alloc_device_i4
    module procedure gpumem_alloc_device_i8
  end interface gpumem_alloc_device

contains

  ! ---------------------------------------------------------------- struct initialisers
  !> GPUMEM_DEVICE_INFO_INIT
  function gpumem_device_info_init() result(v)
    type(gpumem_device_info_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_device_info_init

  !> GPUMEM_POINTER_INFO_INIT
  function gpumem_pointer_info_init() result(v)
    type(gpumem_pointer_info_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_pointer_info_init

  !> GPUMEM_OOM_REPORT_INIT
  function gpumem_oom_report_init() result(v)
    type(gpumem_oom_report_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_oom_report_init

  !> GPUMEM_STATS_INIT
  function gpumem_stats_init() result(v)
    type(gpumem_stats_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_stats_init

  !> GPUMEM_POOL_PROPS_INIT
  function gpumem_pool_props_init() result(v)
    type(gpumem_pool_props_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_pool_props_init

  !> GPUMEM_MEMCPY3D_INIT
  function gpumem_memcpy3d_init() result(v)
    type(gpumem_memcpy3d_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_memcpy3d_init

  !> GPUMEM_ALLOC_PROPS_INIT
  function gpumem_alloc_props_init() result(v)
    type(gpumem_alloc_props_t), target :: v
    v%size = c_sizeof(v)
  end function gpumem_alloc_props_init

  ! ---------------------------------------------------------------- strings
  !> A NUL-terminated C string as a Fortran string ("" for NULL).
  function gpumem_c_string(s) result(str)
    type(c_ptr), intent(in) :: s
    character(:), allocatable :: str
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(s)) then
      str = ''
      return
    end if
    ! Look no further than the NUL: the bound only makes the pointer valid.
    call c_f_pointer(s, chars, [huge(0)])
    n = 0
    do while (chars(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate(character(n) :: str)
    do i = 1, n
      str(i:i) = chars(i)
    end do
  end function gpumem_c_string

  !> A fixed C char array (such as gpumem_device_info_t%name) up to its NUL.
  function gpumem_c_chars(chars) result(str)
    character(kind=c_char), intent(in) :: chars(:)
    character(:), allocatable :: str
    integer :: i, n
    n = size(chars)
    do i = 1, size(chars)
      if (chars(i) == c_null_char) then
        n = i - 1
        exit
      end if
    end do
    allocate(character(n) :: str)
    do i = 1, n
      str(i:i) = chars(i)
    end do
  end function gpumem_c_chars

  !> "GPUMEM_ERROR_X: <the thread's last error message>" for a failure, the
  !> status name alone for success (or when there is no message).  Call it right
  !> after the failing call: the message is the calling thread's last one.
  function gpumem_message(status) result(msg)
    integer(c_int32_t), intent(in) :: status
    character(:), allocatable :: msg
    character(:), allocatable :: detail
    msg = gpumem_c_string(gpumem_status_string(status))
    if (status /= GPUMEM_SUCCESS) then
      detail = gpumem_c_string(gpumem_last_error_message())
      if (len(detail) > 0) msg = msg // ': ' // detail
    end if
  end function gpumem_message

  ! ---------------------------------------------------------------- arrays
  pure function array_bytes(shape, elem) result(bytes)
    integer, intent(in) :: shape(:)
    integer(c_size_t), intent(in) :: elem
    integer(c_size_t) :: bytes
    integer :: i
    bytes = elem
    do i = 1, size(shape)
      bytes = bytes * int(shape(i), c_size_t)
    end do
  end function array_bytes

  subroutine gpumem_view_r4_1d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_float), pointer, intent(out) :: array(:)
    if (c_associated(ptr) .and. size(shape) == 1) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r4_1d

  subroutine gpumem_alloc_managed_r4_1d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r4_1d

  subroutine gpumem_alloc_pinned_r4_1d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r4_1d

  subroutine gpumem_view_r4_2d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_float), pointer, intent(out) :: array(:,:)
    if (c_associated(ptr) .and. size(shape) == 2) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r4_2d

  subroutine gpumem_alloc_managed_r4_2d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r4_2d

  subroutine gpumem_alloc_pinned_r4_2d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r4_2d

  subroutine gpumem_view_r4_3d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_float), pointer, intent(out) :: array(:,:,:)
    if (c_associated(ptr) .and. size(shape) == 3) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r4_3d

  subroutine gpumem_alloc_managed_r4_3d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r4_3d

  subroutine gpumem_alloc_pinned_r4_3d(array, shape, status, flags, ptr)
    real(c_float), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_float) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r4_3d

  subroutine gpumem_view_r8_1d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_double), pointer, intent(out) :: array(:)
    if (c_associated(ptr) .and. size(shape) == 1) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r8_1d

  subroutine gpumem_alloc_managed_r8_1d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r8_1d

  subroutine gpumem_alloc_pinned_r8_1d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r8_1d

  subroutine gpumem_view_r8_2d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_double), pointer, intent(out) :: array(:,:)
    if (c_associated(ptr) .and. size(shape) == 2) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r8_2d

  subroutine gpumem_alloc_managed_r8_2d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r8_2d

  subroutine gpumem_alloc_pinned_r8_2d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r8_2d

  subroutine gpumem_view_r8_3d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    real(c_double), pointer, intent(out) :: array(:,:,:)
    if (c_associated(ptr) .and. size(shape) == 3) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_r8_3d

  subroutine gpumem_alloc_managed_r8_3d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_r8_3d

  subroutine gpumem_alloc_pinned_r8_3d(array, shape, status, flags, ptr)
    real(c_double), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    real(c_double) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_r8_3d

  subroutine gpumem_view_i4_1d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int32_t), pointer, intent(out) :: array(:)
    if (c_associated(ptr) .and. size(shape) == 1) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i4_1d

  subroutine gpumem_alloc_managed_i4_1d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i4_1d

  subroutine gpumem_alloc_pinned_i4_1d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i4_1d

  subroutine gpumem_view_i4_2d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int32_t), pointer, intent(out) :: array(:,:)
    if (c_associated(ptr) .and. size(shape) == 2) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i4_2d

  subroutine gpumem_alloc_managed_i4_2d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i4_2d

  subroutine gpumem_alloc_pinned_i4_2d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i4_2d

  subroutine gpumem_view_i4_3d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int32_t), pointer, intent(out) :: array(:,:,:)
    if (c_associated(ptr) .and. size(shape) == 3) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i4_3d

  subroutine gpumem_alloc_managed_i4_3d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i4_3d

  subroutine gpumem_alloc_pinned_i4_3d(array, shape, status, flags, ptr)
    integer(c_int32_t), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int32_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i4_3d

  subroutine gpumem_view_i8_1d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int64_t), pointer, intent(out) :: array(:)
    if (c_associated(ptr) .and. size(shape) == 1) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i8_1d

  subroutine gpumem_alloc_managed_i8_1d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i8_1d

  subroutine gpumem_alloc_pinned_i8_1d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 1 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i8_1d

  subroutine gpumem_view_i8_2d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int64_t), pointer, intent(out) :: array(:,:)
    if (c_associated(ptr) .and. size(shape) == 2) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i8_2d

  subroutine gpumem_alloc_managed_i8_2d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i8_2d

  subroutine gpumem_alloc_pinned_i8_2d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 2 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i8_2d

  subroutine gpumem_view_i8_3d(ptr, shape, array)
    type(c_ptr), intent(in) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int64_t), pointer, intent(out) :: array(:,:,:)
    if (c_associated(ptr) .and. size(shape) == 3) then
      call c_f_pointer(ptr, array, shape)
    else
      nullify(array)
    end if
  end subroutine gpumem_view_i8_3d

  subroutine gpumem_alloc_managed_i8_3d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_managed_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_managed_i8_3d

  subroutine gpumem_alloc_pinned_i8_3d(array, shape, status, flags, ptr)
    integer(c_int64_t), pointer, intent(out) :: array(:,:,:)
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(out) :: status
    integer(c_int32_t), intent(in), optional :: flags
    type(c_ptr), intent(out), optional :: ptr
    integer(c_int64_t) :: mold
    type(c_ptr) :: p
    integer(c_int32_t) :: f
    f = 0
    if (present(flags)) f = flags
    p = c_null_ptr
    nullify(array)
    if (size(shape) /= 3 .or. any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_host_alloc(p, array_bytes(shape, c_sizeof(mold)), f)
      if (status == GPUMEM_SUCCESS) call gpumem_view(p, shape, array)
    end if
    if (present(ptr)) ptr = p
  end subroutine gpumem_alloc_pinned_i8_3d

  subroutine gpumem_alloc_device_r4(ptr, shape, mold, status)
    type(c_ptr), intent(out) :: ptr
    integer, intent(in) :: shape(:)
    real(c_float), intent(in) :: mold
    integer(c_int32_t), intent(out) :: status
    ptr = c_null_ptr
    if (any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_malloc(ptr, array_bytes(shape, c_sizeof(mold)))
    end if
  end subroutine gpumem_alloc_device_r4

  subroutine gpumem_alloc_device_r8(ptr, shape, mold, status)
    type(c_ptr), intent(out) :: ptr
    integer, intent(in) :: shape(:)
    real(c_double), intent(in) :: mold
    integer(c_int32_t), intent(out) :: status
    ptr = c_null_ptr
    if (any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_malloc(ptr, array_bytes(shape, c_sizeof(mold)))
    end if
  end subroutine gpumem_alloc_device_r8

  subroutine gpumem_alloc_device_i4(ptr, shape, mold, status)
    type(c_ptr), intent(out) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int32_t), intent(in) :: mold
    integer(c_int32_t), intent(out) :: status
    ptr = c_null_ptr
    if (any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_malloc(ptr, array_bytes(shape, c_sizeof(mold)))
    end if
  end subroutine gpumem_alloc_device_i4

  subroutine gpumem_alloc_device_i8(ptr, shape, mold, status)
    type(c_ptr), intent(out) :: ptr
    integer, intent(in) :: shape(:)
    integer(c_int64_t), intent(in) :: mold
    integer(c_int32_t), intent(out) :: status
    ptr = c_null_ptr
    if (any(shape < 0)) then
      status = GPUMEM_ERROR_INVALID_VALUE
    else
      status = gpumem_malloc(ptr, array_bytes(shape, c_sizeof(mold)))
    end if
  end subroutine gpumem_alloc_device_i8
end module gpumem
