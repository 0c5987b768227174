! Managed memory as a Fortran array through the installed module; prints OK.
! SPDX-License-Identifier: MIT
program consumer
  use gpumem
  implicit none
  real(c_double), pointer :: x(:)
  integer(c_int32_t) :: st
  call gpumem_alloc_managed(x, [1024], st)
  if (st /= GPUMEM_SUCCESS) then
    print '(a)', gpumem_message(st)
    error stop 1
  end if
  x = 2.0_c_double
  if (sum(x) /= 2048.0_c_double) error stop 2
  st = gpumem_free(c_loc(x))
  if (st /= GPUMEM_SUCCESS) error stop 3
  print '(a)', 'OK fortran'
end program consumer
