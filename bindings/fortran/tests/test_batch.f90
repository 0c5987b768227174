! Batched copies and prefetches from Fortran: four slices of an array to the device and back
! in two batches, a bad entry refused with its index, a batched prefetch of managed memory.
! SPDX-License-Identifier: MIT
program test_batch
  use gpumem
  use test_support
  implicit none
  integer, parameter :: n = 1024, k = 4
  real(c_double), target :: a(n), b(n)
  integer(c_int32_t), target :: loc
  type(c_ptr) :: dev, stream, managed
  type(c_ptr) :: dsts(k), srcs(k), ptrs(2)
  integer(c_size_t) :: sizes(k), slice, msizes(2)
  integer(c_int32_t) :: devices(2), st
  integer :: i

  a = [(0.25_c_double * i, i = 1, n)]
  b = -1
  slice = (n / k) * c_sizeof(a(1))
  call check(gpumem_init(GPUMEM_BACKEND_AUTO), 'gpumem_init')
  call check(gpumem_malloc(dev, n * c_sizeof(a(1))), 'gpumem_malloc')
  call check(gpumem_stream_create(stream), 'gpumem_stream_create')

  ! host -> device, then device -> host, each one call for the k slices
  do i = 1, k
    srcs(i) = c_loc(a((i - 1) * (n / k) + 1))
    dsts(i) = offset(dev, (i - 1) * slice)
    sizes(i) = slice
  end do
  call check(gpumem_memcpy_batch_async(dsts, srcs, sizes, int(k, c_size_t), stream), 'batch h2d')
  do i = 1, k
    srcs(i) = dsts(i)
    dsts(i) = c_loc(b((i - 1) * (n / k) + 1))
  end do
  call check(gpumem_memcpy_batch_async(dsts, srcs, sizes, int(k, c_size_t), stream), 'batch d2h')
  call check(gpumem_stream_synchronize(stream), 'synchronize')
  if (any(b /= a)) call fail('values copied in batches differ')

  ! entry 2 (index 2 from 0) runs past the end of the device allocation: refused, nothing copied
  b = -1
  srcs(3) = offset(dev, n * c_sizeof(a(1)) - 8)
  st = gpumem_memcpy_batch_async(dsts, srcs, sizes, int(k, c_size_t), stream)
  if (st /= GPUMEM_ERROR_INVALID_VALUE) call fail('a bad entry was not refused')
  if (index(gpumem_message(st), 'entry 2') == 0) call fail('the message does not name entry 2')
  call check(gpumem_stream_synchronize(stream), 'synchronize')
  if (any(b /= -1)) call fail('a refused batch copied')

  ! a batched prefetch of managed memory (emulated where the device has none)
  call check(gpumem_managed_alloc(managed, 2 * slice, 0), 'gpumem_managed_alloc')
  ptrs = [managed, offset(managed, slice)]
  msizes = [slice, slice]
  devices = [0_c_int32_t, GPUMEM_DEVICE_HOST]
  call check(gpumem_prefetch_batch_async(ptrs, msizes, 2_c_size_t, devices, stream), 'batch prefetch')
  call check(gpumem_stream_synchronize(stream), 'synchronize')
  call check(gpumem_range_get_attribute(c_loc(loc), c_sizeof(loc), GPUMEM_RANGE_LAST_PREFETCH_LOCATION, &
                                        ptrs(2), slice), 'range attribute')
  if (loc /= GPUMEM_DEVICE_HOST) call fail('the second range was not prefetched to the host')
  call check(gpumem_discard_batch_async(ptrs, msizes, 2_c_size_t, stream), 'batch discard')
  call check(gpumem_stream_synchronize(stream), 'synchronize')

  call check(gpumem_free(managed), 'gpumem_free managed')
  call check(gpumem_stream_destroy(stream), 'gpumem_stream_destroy')
  call check(gpumem_free(dev), 'gpumem_free')
  print '(a)', 'batched copies ok'
end program test_batch
