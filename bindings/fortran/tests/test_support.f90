! What every Fortran test program uses: stop with a message on a failed status
! or check, and pointer arithmetic on a c_ptr.
! SPDX-License-Identifier: MIT
module test_support
  use gpumem
  implicit none
  private
  public :: check, fail, offset

contains

  ! Stops the program (exit 1) with `what` and gpumem's message when `status` is not success.
  subroutine check(status, what)
    integer(c_int32_t), intent(in) :: status
    character(*), intent(in) :: what
    if (status /= GPUMEM_SUCCESS) call fail(what // ': ' // gpumem_message(status))
  end subroutine check

  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a)', 'FAIL: ' // what
    error stop 1
  end subroutine fail

  ! The address `bytes` past `p`.
  function offset(p, bytes) result(q)
    type(c_ptr), intent(in) :: p
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr) :: q
    q = transfer(transfer(p, 0_c_intptr_t) + int(bytes, c_intptr_t), q)
  end function offset
end module test_support
