! Explicit device memory and copies from Fortran (seed: explicit_copies).
! SPDX-License-Identifier: MIT
program test_copies
  use gpumem
  use test_support
  implicit none
  integer, parameter :: n = 1024
  real(c_double), target :: a(n), b(n)
  type(c_ptr) :: d1, d2, stream
  type(gpumem_pointer_info_t) :: info
  type(gpumem_device_info_t) :: dev
  integer(c_int32_t) :: st, fd
  integer(c_size_t) :: bytes
  integer :: i

  bytes = n * c_sizeof(a(1))
  a = [(0.5_c_double * i, i = 1, n)]
  b = -1

  call check(gpumem_init(GPUMEM_BACKEND_AUTO), 'gpumem_init')
  call gpumem_alloc_device(d1, [n], 0.0_c_double, st)
  call check(st, 'gpumem_alloc_device')
  call check(gpumem_malloc(d2, bytes), 'gpumem_malloc')

  ! host -> device -> device -> host
  call check(gpumem_memcpy(d1, c_loc(a), bytes), 'memcpy h2d')
  call check(gpumem_memcpy(d2, d1, bytes), 'memcpy d2d')
  call check(gpumem_memcpy(c_loc(b), d2, bytes), 'memcpy d2h')
  if (any(b /= a)) call fail('values copied through device memory differ')

  ! stream-ordered fill and copy back
  call check(gpumem_stream_create(stream), 'gpumem_stream_create')
  call check(gpumem_memset_async(d1, 0, bytes, stream), 'gpumem_memset_async')
  call check(gpumem_memcpy_async(c_loc(b), d1, bytes, stream), 'gpumem_memcpy_async')
  call check(gpumem_stream_synchronize(stream), 'gpumem_stream_synchronize')
  if (any(b /= 0)) call fail('memset_async + memcpy_async did not give zeros')
  call check(gpumem_stream_destroy(stream), 'gpumem_stream_destroy')

  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(d1, info), 'gpumem_pointer_get_info')
  if (info%kind /= GPUMEM_KIND_DEVICE) call fail('pointer kind is not DEVICE')
  if (info%alloc_size /= bytes) call fail('alloc_size differs')

  ! dma-buf export (0.4): the host backend has none, and an empty range is refused anywhere
  dev = gpumem_device_info_init()
  call check(gpumem_device_get_info(0, dev), 'gpumem_device_get_info')
  if (dev%dmabuf /= GPUMEM_SUPPORT_NONE) call fail('the host backend claims dma-buf export')
  if (dev%fabric_handles /= GPUMEM_SUPPORT_NONE) call fail('the host backend claims fabric handles')
  st = gpumem_mem_export_dmabuf(fd, d2, 0_c_size_t, 0)
  if (st /= GPUMEM_ERROR_INVALID_VALUE) call fail('a dma-buf of 0 bytes not INVALID_VALUE')
  if (index(gpumem_message(st), 'size is 0') == 0) call fail('the refusal does not say the size is 0')

  call check(gpumem_free(d1), 'gpumem_free d1')
  call check(gpumem_free(d2), 'gpumem_free d2')
  st = gpumem_free(d2)
  if (st /= GPUMEM_ERROR_INVALID_POINTER) call fail('double free not INVALID_POINTER')
  print '(a)', 'double free reports: ' // gpumem_message(st)
  call check(gpumem_finalize(), 'gpumem_finalize')
  print '(a)', 'fortran copies: OK'
end program test_copies
