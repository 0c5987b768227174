! Seeing memory from Fortran: kind names, and a snapshot read through its
! bind(C) types and written as JSON.
! SPDX-License-Identifier: MIT
program test_debug
  use gpumem
  use test_support
  implicit none
  type(c_ptr) :: p, snap_ptr
  type(gpumem_snapshot_t), pointer :: snap
  type(gpumem_snapshot_allocation_t), pointer :: alloc
  type(gpumem_snapshot_t), target :: layout
  integer(c_int32_t) :: st
  character(len=*), parameter :: path = 'fortran-snapshot.json'
  logical :: exists
  type(gpumem_oom_report_t) :: report
  type(c_ptr) :: q

  if (gpumem_c_string(gpumem_kind_name(GPUMEM_KIND_DEVICE)) /= 'device') call fail('kind name of DEVICE')
  if (gpumem_c_string(gpumem_kind_name(GPUMEM_KIND_STREAM_ORDERED)) /= 'stream_ordered') &
    call fail('kind name of STREAM_ORDERED')
  if (gpumem_c_string(gpumem_kind_name(99_c_int32_t)) /= 'unknown') call fail('kind name of 99')

  call check(gpumem_malloc(p, 4096_c_size_t), 'gpumem_malloc')
  call check(gpumem_snapshot_take(snap_ptr), 'gpumem_snapshot_take')
  call c_f_pointer(snap_ptr, snap)
  if (snap%size /= c_sizeof(layout)) call fail('snapshot size differs from the C struct')
  if (snap%backend /= GPUMEM_BACKEND_HOST .or. snap%device_count < 1) call fail('snapshot backend/devices')
  if (snap%allocation_count /= 1) call fail('one allocation expected')
  call c_f_pointer(snap%allocations, alloc)
  if (.not. c_associated(alloc%ptr, p) .or. alloc%bytes /= 4096 .or. alloc%kind /= GPUMEM_KIND_DEVICE) &
    call fail('the allocation in the snapshot')
  if (alloc%thread == 0) call fail('allocating thread')
  call check(gpumem_snapshot_write_json(snap_ptr, path // c_null_char), 'gpumem_snapshot_write_json')
  inquire(file=path, exist=exists)
  if (.not. exists) call fail('no JSON written')
  open(unit=10, file=path)
  close(10, status='delete')
  call check(gpumem_snapshot_release(snap_ptr), 'gpumem_snapshot_release')
  st = gpumem_snapshot_release(snap_ptr)
  if (st /= GPUMEM_ERROR_INVALID_VALUE) call fail('releasing twice must be INVALID_VALUE')
  call check(gpumem_free(p), 'gpumem_free')

  ! What would have fit: the thread's last OUT_OF_MEMORY.
  st = gpumem_malloc(q, 2_c_size_t**62)
  if (st /= GPUMEM_ERROR_OUT_OF_MEMORY) call fail('2**62 bytes must be OUT_OF_MEMORY')
  report = gpumem_oom_report_init()
  call check(gpumem_last_oom_report(report), 'gpumem_last_oom_report')
  if (report%has_report /= 1 .or. report%bytes /= 2_c_int64_t**62) call fail('the report of the failed gpumem_malloc')
  if (report%kind /= GPUMEM_KIND_DEVICE .or. report%verdict(1) == c_null_char) call fail('the report''s kind and verdict')
  print '(a)', 'fortran debug: OK'
end program test_debug
