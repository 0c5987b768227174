! A growable buffer keeps its data across resizes (seed: vmm_grow).
! SPDX-License-Identifier: MIT
program test_buffer
  use gpumem
  use test_support
  implicit none
  integer(c_size_t), parameter :: mib = 1048576
  integer, parameter :: n = int(mib / 4)  ! int32 elements in one MiB
  integer(c_int32_t), target :: a(n), b(n)
  type(c_ptr) :: buf, p
  type(gpumem_pointer_info_t) :: info
  integer(c_size_t) :: sz
  integer(c_int32_t) :: st
  integer :: i

  a = [(i * 7, i = 1, n)]
  call check(gpumem_buffer_create(buf, mib, 64 * mib, 0), 'gpumem_buffer_create')
  call check(gpumem_buffer_data(buf, p), 'buffer data')
  call check(gpumem_memcpy(p, c_loc(a), mib), 'fill')

  call check(gpumem_buffer_resize(buf, 4 * mib), 'grow to 4 MiB')
  call check(gpumem_buffer_size(buf, sz), 'buffer size')
  if (sz /= 4 * mib) call fail('size after growing')
  call check(gpumem_buffer_data(buf, p), 'buffer data')  ! may move without native VMM
  b = 0
  call check(gpumem_memcpy(c_loc(b), p, mib), 'read back')
  if (any(b /= a)) call fail('data lost when growing')
  ! the new tail is usable
  call check(gpumem_memcpy(offset(p, 3 * mib), c_loc(a), mib), 'write the tail')

  call check(gpumem_buffer_resize(buf, mib / 2), 'shrink')
  call check(gpumem_buffer_data(buf, p), 'buffer data')
  b = 0
  call check(gpumem_memcpy(c_loc(b), p, mib / 2), 'read back')
  if (any(b(1:n / 2) /= a(1:n / 2))) call fail('data lost when shrinking')

  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(p, info), 'pointer info')
  if (info%kind /= GPUMEM_KIND_BUFFER) call fail('kind is not BUFFER')
  st = gpumem_free(p)
  if (st /= GPUMEM_ERROR_INVALID_POINTER) call fail('gpumem_free accepted buffer data')

  call check(gpumem_buffer_destroy(buf), 'destroy')
  st = gpumem_buffer_destroy(buf)
  if (st /= GPUMEM_ERROR_INVALID_HANDLE) call fail('destroyed buffer still accepted')
  print '(a)', 'fortran buffer: OK'
end program test_buffer
