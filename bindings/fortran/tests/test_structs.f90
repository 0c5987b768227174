! The Fortran structs match the C ABI (tests/abi/layout.c, x86-64) and the
! library fills them; the trace callback and the string helpers work.
! SPDX-License-Identifier: MIT
module trace_counter
  use gpumem
  implicit none
  integer :: allocs = 0, frees = 0
  type(gpumem_trace_event_t) :: last
contains
  subroutine on_trace(event, user) bind(C)
    type(gpumem_trace_event_t), intent(in) :: event
    type(c_ptr), value :: user
    if (event%op == GPUMEM_TRACE_ALLOC) allocs = allocs + 1
    if (event%op == GPUMEM_TRACE_FREE) frees = frees + 1
    last = event
    if (c_associated(user)) continue
  end subroutine on_trace
end module trace_counter

program test_structs
  use gpumem
  use test_support
  use trace_counter
  implicit none
  type(gpumem_device_info_t), target :: di
  type(gpumem_pointer_info_t), target :: pi
  type(gpumem_stats_t), target :: stats
  type(gpumem_trace_event_t), target :: te
  type(gpumem_pool_props_t), target :: pp
  type(gpumem_alloc_props_t), target :: ap
  type(gpumem_access_desc_t), target :: ad
  type(gpumem_pool_ptr_export_data_t), target :: ed
  type(gpumem_memcpy3d_t), target :: box
  type(gpumem_ipc_event_handle_t), target :: eh
  type(c_ptr) :: p
  integer(c_int32_t) :: st, backend, count
  integer(c_int32_t), target :: local
  integer(c_size_t) :: free_bytes, total_bytes, gran
  integer :: failures

  failures = 0
  ! sizes and offsets: the numbers of tests/abi/layout.c
  call expect('sizeof(gpumem_device_info_t)', c_sizeof(di), 480)
  call expect('offsetof(device_info, name)', off(c_loc(di), c_loc(di%name)), 8)
  call expect('offsetof(device_info, backend)', off(c_loc(di), c_loc(di%backend)), 264)
  call expect('offsetof(device_info, total_memory)', off(c_loc(di), c_loc(di%total_memory)), 272)
  call expect('offsetof(device_info, ipc_handle_types)', off(c_loc(di), c_loc(di%ipc_handle_types)), 308)
  call expect('offsetof(device_info, vmm_granularity)', off(c_loc(di), c_loc(di%vmm_granularity)), 312)
  call expect('offsetof(device_info, arch_name)', off(c_loc(di), c_loc(di%arch_name)), 336)
  call expect('offsetof(device_info, pool_ipc_handle_types)', off(c_loc(di), c_loc(di%pool_ipc_handle_types)), 400)
  call expect('offsetof(device_info, batch_memops)', off(c_loc(di), c_loc(di%batch_memops)), 404)
  call expect('offsetof(device_info, managed_pools)', off(c_loc(di), c_loc(di%managed_pools)), 412)
  call expect('offsetof(device_info, rdma_memory)', off(c_loc(di), c_loc(di%rdma_memory)), 416)
  call expect('offsetof(device_info, dmabuf)', off(c_loc(di), c_loc(di%dmabuf)), 420)
  call expect('offsetof(device_info, fabric_handles)', off(c_loc(di), c_loc(di%fabric_handles)), 424)
  call expect('offsetof(device_info, rows)', off(c_loc(di), c_loc(di%rows)), 428)
  call expect('offsetof(device_info, ipc_events)', off(c_loc(di), c_loc(di%ipc_events)), 440)
  call expect('offsetof(device_info, pci_bus_id)', off(c_loc(di), c_loc(di%pci_bus_id)), 444)
  call expect('offsetof(device_info, uuid)', off(c_loc(di), c_loc(di%uuid)), 460)
  call expect('offsetof(device_info, numa_node)', off(c_loc(di), c_loc(di%numa_node)), 476)
  call expect('sizeof(gpumem_pointer_info_t)', c_sizeof(pi), 64)
  call expect('offsetof(pointer_info, alloc_size)', off(c_loc(pi), c_loc(pi%alloc_size)), 24)
  call expect('offsetof(pointer_info, pool)', off(c_loc(pi), c_loc(pi%pool)), 40)
  call expect('offsetof(pointer_info, device_pointer)', off(c_loc(pi), c_loc(pi%device_pointer)), 48)
  call expect('offsetof(pointer_info, memory)', off(c_loc(pi), c_loc(pi%memory)), 56)
  call expect('offsetof(pointer_info, vendor_known)', off(c_loc(pi), c_loc(pi%vendor_known)), 60)
  call expect('sizeof(gpumem_stats_t)', c_sizeof(stats), 272)
  call expect('offsetof(stats, peak_bytes)', off(c_loc(stats), c_loc(stats%peak_bytes)), 72)
  call expect('offsetof(stats, free_count)', off(c_loc(stats), c_loc(stats%free_count)), 200)
  call expect('offsetof(stats, fallback_count)', off(c_loc(stats), c_loc(stats%fallback_count)), 264)
  call expect('sizeof(gpumem_trace_event_t)', c_sizeof(te), 56)
  call expect('offsetof(trace_event, bytes)', off(c_loc(te), c_loc(te%bytes)), 24)
  call expect('offsetof(trace_event, pool)', off(c_loc(te), c_loc(te%pool)), 48)
  call expect('sizeof(gpumem_pool_props_t)', c_sizeof(pp), 48)
  call expect('offsetof(pool_props, numa_node)', off(c_loc(pp), c_loc(pp%numa_node)), 32)
  call expect('offsetof(pool_props, max_size)', off(c_loc(pp), c_loc(pp%max_size)), 16)
  call expect('offsetof(pool_props, implementation)', off(c_loc(pp), c_loc(pp%implementation)), 24)
  call expect('sizeof(gpumem_access_desc_t)', c_sizeof(ad), 8)
  call expect('offsetof(access_desc, flags)', off(c_loc(ad), c_loc(ad%flags)), 4)
  call expect('sizeof(gpumem_pool_ptr_export_data_t)', c_sizeof(ed), 64)
  call expect('sizeof(gpumem_alloc_props_t)', c_sizeof(ap), 24)
  call expect('sizeof(gpumem_memcpy3d_t)', c_sizeof(box), 128)
  call expect('offsetof(memcpy3d, dst)', off(c_loc(box), c_loc(box%dst)), 56)
  call expect('offsetof(memcpy3d, depth)', off(c_loc(box), c_loc(box%depth)), 120)
  call expect('sizeof(gpumem_ipc_event_handle_t)', c_sizeof(eh), 64)
  call expect('offsetof(alloc_props, handle_types)', off(c_loc(ap), c_loc(ap%handle_types)), 12)
  ! the *_init() functions set size as the GPUMEM_*_INIT initialisers do
  di = gpumem_device_info_init()
  call expect('gpumem_device_info_init()%size', di%size, 480)
  pi = gpumem_pointer_info_init()
  call expect('gpumem_pointer_info_init()%size', pi%size, 64)
  stats = gpumem_stats_init()
  call expect('gpumem_stats_init()%size', stats%size, 272)
  pp = gpumem_pool_props_init()
  call expect('gpumem_pool_props_init()%size', pp%size, 48)
  call expect('gpumem_pool_props_init()%numa_node', int(pp%numa_node, c_intptr_t), -1)
  ap = gpumem_alloc_props_init()
  call expect('gpumem_alloc_props_init()%size', ap%size, 24)
  if (failures > 0) call fail('the Fortran structs differ from the C ABI')

  ! version, backend, devices
  if (gpumem_version() /= GPUMEM_VERSION_NUMBER) call fail('gpumem_version() /= GPUMEM_VERSION_NUMBER')
  call check(gpumem_get_backend(backend), 'gpumem_get_backend')
  if (backend /= GPUMEM_BACKEND_HOST) call fail('backend is not host (GPUMEM_BACKEND=host)')
  if (gpumem_c_string(gpumem_backend_name(backend)) /= 'host') call fail('backend name')
  call check(gpumem_device_count(count), 'gpumem_device_count')
  if (count < 1) call fail('no device')
  call check(gpumem_device_get_info(0, di), 'gpumem_device_get_info')
  print '(5a,i0,a,i0)', 'device 0: "', gpumem_c_chars(di%name), '" arch "', gpumem_c_chars(di%arch_name), &
    '" total ', di%total_memory, ' pools ', di%memory_pools
  if (di%size /= 480) call fail('size changed')
  if (di%backend /= GPUMEM_BACKEND_HOST .or. di%device /= 0) call fail('backend/device fields')
  if (len(gpumem_c_chars(di%name)) == 0) call fail('empty name')
  if (len(gpumem_c_chars(di%arch_name)) == 0) call fail('empty arch_name')
  if (di%total_memory <= 0 .or. di%free_memory > di%total_memory) call fail('memory fields')
  if (di%memory_pools < GPUMEM_SUPPORT_NONE .or. di%memory_pools > GPUMEM_SUPPORT_BROKEN) call fail('memory_pools')
  call check(gpumem_mem_get_info(free_bytes, total_bytes), 'gpumem_mem_get_info')
  if (total_bytes <= 0) call fail('mem_get_info total')
  st = gpumem_mem_get_granularity(gran, ap, GPUMEM_GRANULARITY_MINIMUM)
  if (st == GPUMEM_SUCCESS) then
    if (int(gran, c_int64_t) /= di%vmm_granularity) call fail('granularity differs from device info')
  else if (st /= GPUMEM_ERROR_NOT_SUPPORTED) then
    call fail('gpumem_mem_get_granularity: ' // gpumem_message(st))
  end if

  ! trace callback and pointer info
  call check(gpumem_set_trace_callback(c_funloc(on_trace), c_null_ptr), 'set trace callback')
  call check(gpumem_malloc(p, 4096_c_size_t), 'gpumem_malloc')
  if (allocs /= 1 .or. last%op /= GPUMEM_TRACE_ALLOC .or. last%kind /= GPUMEM_KIND_DEVICE &
      .or. last%bytes /= 4096 .or. .not. c_associated(last%ptr, p)) call fail('trace event of the allocation')
  call check(gpumem_pointer_get_info(p, pi), 'pointer info')
  if (pi%kind /= GPUMEM_KIND_DEVICE .or. pi%alloc_size /= 4096 .or. .not. c_associated(pi%base, p)) &
    call fail('pointer info fields')
  call check(gpumem_get_stats(stats), 'stats')
  if (stats%current_bytes(GPUMEM_KIND_DEVICE) < 4096) call fail('stats current_bytes(DEVICE)')
  call check(gpumem_free(p), 'gpumem_free')
  if (frees /= 1 .or. last%op /= GPUMEM_TRACE_FREE) call fail('trace event of the free')
  call check(gpumem_set_trace_callback(c_null_funptr, c_null_ptr), 'remove trace callback')

  ! messages
  if (gpumem_message(GPUMEM_SUCCESS) /= 'GPUMEM_SUCCESS') call fail('message of SUCCESS')
  st = gpumem_free(c_loc(local))
  if (st /= GPUMEM_ERROR_INVALID_POINTER) call fail('freeing a stack variable')
  if (index(gpumem_message(st), 'GPUMEM_ERROR_INVALID_POINTER: ') /= 1) call fail('message prefix')
  if (len(gpumem_message(st)) <= len('GPUMEM_ERROR_INVALID_POINTER: ')) call fail('message has no detail')
  print '(a)', gpumem_message(st)
  print '(a)', 'fortran structs: OK'

contains

  function off(base, field) result(d)
    type(c_ptr), intent(in) :: base, field
    integer(c_intptr_t) :: d
    d = transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t)
  end function off

  subroutine expect(what, actual, expected)
    character(*), intent(in) :: what
    integer(c_intptr_t), intent(in) :: actual
    integer, intent(in) :: expected
    if (actual /= expected) then
      print '(a,i0,a,i0)', 'FAIL: ' // what // ' is ', actual, ', the C ABI says ', expected
      failures = failures + 1
    end if
  end subroutine expect
end program test_structs
