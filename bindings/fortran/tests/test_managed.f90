! Managed memory with prefetch, seen from Fortran as an array (seed: managed_prefetch).
! SPDX-License-Identifier: MIT
program test_managed
  use gpumem
  use test_support
  implicit none
  integer, parameter :: n = 64, m = 32
  real(c_float), pointer :: x(:, :), flat(:)
  integer(c_int64_t), pointer :: y(:)
  type(c_ptr) :: p
  type(gpumem_pointer_info_t) :: info
  integer(c_int32_t), target :: loc
  integer(c_int32_t) :: st
  integer(c_size_t) :: bytes
  integer :: i, j

  call gpumem_alloc_managed(x, [n, m], st, ptr=p)
  call check(st, 'gpumem_alloc_managed')
  if (.not. associated(x)) call fail('no array pointer')
  if (any(shape(x) /= [n, m])) call fail('wrong shape')
  bytes = int(n, c_size_t) * m * c_sizeof(x(1, 1))
  do j = 1, m
    do i = 1, n
      x(i, j) = real(i + 1000 * j, c_float)
    end do
  end do

  ! to the device and back, in stream order
  call check(gpumem_prefetch_async(p, bytes, 0, c_null_ptr), 'prefetch to device 0')
  call check(gpumem_stream_synchronize(c_null_ptr), 'synchronize')
  call check(gpumem_range_get_attribute(c_loc(loc), c_sizeof(loc), GPUMEM_RANGE_LAST_PREFETCH_LOCATION, &
                                        p, bytes), 'range attribute')
  if (loc /= 0) call fail('last prefetch location is not device 0')
  call check(gpumem_prefetch_async(p, bytes, GPUMEM_DEVICE_HOST, c_null_ptr), 'prefetch to host')
  call check(gpumem_device_synchronize(), 'device synchronize')
  call check(gpumem_range_get_attribute(c_loc(loc), c_sizeof(loc), GPUMEM_RANGE_LAST_PREFETCH_LOCATION, &
                                        p, bytes), 'range attribute')
  if (loc /= GPUMEM_DEVICE_HOST) call fail('last prefetch location is not the host')
  do j = 1, m
    do i = 1, n
      if (x(i, j) /= real(i + 1000 * j, c_float)) call fail('managed values changed')
    end do
  end do

  call check(gpumem_advise(p, bytes, GPUMEM_ADVISE_SET_READ_MOSTLY, 0), 'advise')
  call check(gpumem_range_get_attribute(c_loc(loc), c_sizeof(loc), GPUMEM_RANGE_READ_MOSTLY, p, bytes), &
             'range attribute read mostly')
  if (loc /= 1) call fail('read-mostly advice not recorded')

  ! another view of the same memory, rank 1
  call gpumem_view(p, [n * m], flat)
  if (flat(n + 1) /= x(1, 2)) call fail('rank-1 view differs')
  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(c_loc(x(5, 5)), info), 'pointer info')
  if (info%kind /= GPUMEM_KIND_MANAGED) call fail('kind is not MANAGED')
  if (.not. c_associated(info%base, p)) call fail('base is not the allocation')
  print '(a,i0)', 'managed memory emulated = ', info%emulated
  call check(gpumem_free(c_loc(x)), 'gpumem_free managed')

  ! pinned host memory as an array
  call gpumem_alloc_pinned(y, [100], st, flags=GPUMEM_HOST_MAPPED)
  call check(st, 'gpumem_alloc_pinned')
  y = [(int(i, c_int64_t) * 3, i = 1, 100)]
  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(c_loc(y), info), 'pointer info pinned')
  if (info%kind /= GPUMEM_KIND_HOST_PINNED) call fail('kind is not HOST_PINNED')
  if (y(100) /= 300) call fail('pinned value')
  call check(gpumem_host_free(c_loc(y)), 'gpumem_host_free')

  ! a wrong shape gives INVALID_VALUE and no memory
  call gpumem_alloc_managed(x, [n], st)
  if (st /= GPUMEM_ERROR_INVALID_VALUE .or. associated(x)) call fail('rank mismatch accepted')
  print '(a)', 'fortran managed: OK'
end program test_managed
