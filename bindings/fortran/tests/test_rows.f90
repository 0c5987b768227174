! Rows and boxes and streams with flags from Fortran (0.5): a pitched array of columns, 2-D copies
! in and out, a 32-bit fill, a box, a non-blocking stream with a priority, a host function.
! SPDX-License-Identifier: MIT
module rows_callback
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int32_t), save :: calls = 0
contains
  subroutine count_call(user) bind(C)
    type(c_ptr), value :: user
    if (c_associated(user)) calls = calls + 1
  end subroutine count_call
end module rows_callback

program test_rows
  use gpumem
  use test_support
  use rows_callback
  implicit none
  integer, parameter :: nx = 37, ny = 11
  real(c_float), target :: a(nx, ny), b(nx, ny)
  integer(c_int32_t), target :: words(8), marker
  type(c_ptr) :: d, stream
  type(gpumem_memcpy3d_t) :: box
  type(gpumem_device_info_t) :: dev
  integer(c_size_t) :: pitch, row
  integer(c_int32_t) :: flags, prio, least, greatest
  integer :: i, j

  row = nx * c_sizeof(a(1, 1))
  a = reshape([((real(i + 100 * j, c_float), i = 1, nx), j = 1, ny)], [nx, ny])
  b = 0
  call check(gpumem_init(GPUMEM_BACKEND_AUTO), 'gpumem_init')
  dev = gpumem_device_info_init()
  call check(gpumem_device_get_info(0, dev), 'gpumem_device_get_info')
  if (dev%rows == GPUMEM_SUPPORT_NONE) call fail('rows and boxes are NONE')

  ! Each Fortran column is a row of the pitched allocation.
  call check(gpumem_malloc_pitch(d, pitch, row, int(ny, c_size_t)), 'gpumem_malloc_pitch')
  if (pitch < row) call fail('the pitch is below the row')
  call check(gpumem_memcpy_2d(d, pitch, c_loc(a), row, row, int(ny, c_size_t)), 'gpumem_memcpy_2d in')
  call check(gpumem_stream_create_with_flags(stream, GPUMEM_STREAM_NON_BLOCKING, -1), 'stream with flags')
  call check(gpumem_stream_get_flags(flags, stream), 'gpumem_stream_get_flags')
  if (flags /= GPUMEM_STREAM_NON_BLOCKING) call fail('the stream is not non-blocking')
  call check(gpumem_device_get_stream_priority_range(least, greatest, 0), 'priority range')
  call check(gpumem_stream_get_priority(prio, stream), 'gpumem_stream_get_priority')
  if (prio < greatest .or. prio > least) call fail('the priority is outside the range')
  call check(gpumem_memcpy_2d_async(c_loc(b), row, d, pitch, row, int(ny, c_size_t), stream), 'memcpy_2d out')
  calls = 0
  call check(gpumem_launch_host_func(stream, c_funloc(count_call), c_loc(marker)), 'gpumem_launch_host_func')
  call check(gpumem_stream_synchronize(stream), 'gpumem_stream_synchronize')
  if (any(b /= a)) call fail('columns copied through pitched memory differ')
  if (calls /= 1) call fail('the host function did not run once')

  ! A 32-bit fill and a box of 2 columns of 3 values, from column 4 / value 5 to column 1 / value 2.
  call check(gpumem_memset_d32(c_loc(words), int(z'12345678', c_int32_t), 8_c_size_t), 'gpumem_memset_d32')
  if (any(words /= int(z'12345678', c_int32_t))) call fail('memset_d32 values differ')
  b = 0
  box = gpumem_memcpy3d_init()
  box%src = c_loc(a)
  box%src_pitch = row
  box%src_height = ny
  box%src_x = 4 * c_sizeof(a(1, 1))
  box%src_y = 3
  box%dst = c_loc(b)
  box%dst_pitch = row
  box%dst_height = ny
  box%dst_x = 1 * c_sizeof(a(1, 1))
  box%dst_y = 0
  box%width = 3 * c_sizeof(a(1, 1))
  box%height = 2
  box%depth = 1
  call check(gpumem_memcpy_3d(box), 'gpumem_memcpy_3d')
  if (any(b(2:4, 1:2) /= a(5:7, 4:5))) call fail('the box differs')
  if (count(b /= 0) /= 6) call fail('the box wrote outside itself')

  call check(gpumem_stream_destroy(stream), 'gpumem_stream_destroy')
  call check(gpumem_free(d), 'gpumem_free')
  call check(gpumem_finalize(), 'gpumem_finalize')
  print '(a)', 'fortran rows: OK'
end program test_rows
