! nbget_overlap: the Fortran example of overlapping communication with
! computation. Each rank fetches its right neighbour's block with
! ARMCI_NbGet, computes on its own block while the data travels, and only
! then waits (ARMCI_Wait) and uses what arrived. The results are checked, and
! the time of the overlapped step is printed beside get-then-compute.
program nbget_overlap
  use, intrinsic :: iso_c_binding
  use armci
  implicit none
  integer, parameter :: n = 2**20
  integer(c_int) :: me, np, right, rc
  type(c_ptr), allocatable :: bases(:)
  real(c_double), pointer :: mine(:)
  real(c_double), allocatable, target :: fetched(:)
  real(c_double) :: local_sum, remote_sum, expect
  type(armci_hdl_t) :: h
  integer(8) :: t0, t1, t2, rate
  integer :: i

  rc = ARMCI_Init()
  me = armci_msg_me()
  np = armci_msg_nproc()
  right = mod(me + 1, np)
  allocate(bases(np), fetched(n))
  rc = ARMCI_Malloc(bases, int(n, c_long) * 8)
  call c_f_pointer(bases(me + 1), mine, [n])
  mine = [(real(me, c_double) + 1.0d0 / i, i = 1, n)]
  call ARMCI_Barrier()

  call system_clock(t0, rate)
  ! Blocking reference: get, then compute.
  rc = ARMCI_Get(bases(right + 1), c_loc(fetched), 8 * n, right)
  local_sum = smooth_sum(mine)
  remote_sum = sum(fetched)
  call system_clock(t1)
  ! Overlapped: the get is in flight while smooth_sum runs.
  fetched = 0
  call ARMCI_INIT_HANDLE(h)
  rc = ARMCI_NbGet(bases(right + 1), c_loc(fetched), 8 * n, right, h)
  local_sum = smooth_sum(mine)
  rc = ARMCI_Wait(h)
  remote_sum = sum(fetched)
  call system_clock(t2)

  expect = real(right, c_double) * n + sum([(1.0d0 / i, i = 1, n)])
  if (abs(remote_sum - expect) > 1.0d-9 * abs(expect)) then
    write (0, '(a,i0,a,2es24.16)') 'FAIL rank ', me, ' nbget_overlap: fetched sum ', remote_sum, expect
    call ARMCI_Error('nbget_overlap: wrong data' // c_null_char, 1)
  end if
  print '(a,i0,a,f8.3,a,f8.3,a)', 'rank ', me, ': get then compute ', 1.0d3 * (t1 - t0) / rate, &
    ' ms, NbGet overlapped ', 1.0d3 * (t2 - t1) / rate, ' ms'
  call ARMCI_Barrier()
  rc = ARMCI_Free(bases(me + 1))
  rc = ARMCI_Finalize()
  print '(a,i0)', 'PASS nbget_overlap rank ', me

contains

  ! Enough arithmetic per element to take about as long as the transfer.
  real(c_double) function smooth_sum(x)
    real(c_double), intent(in) :: x(:)
    integer :: k, j
    smooth_sum = 0
    do j = 1, 8
      do k = 2, size(x) - 1
        smooth_sum = smooth_sum + 0.25d0 * x(k - 1) + 0.5d0 * x(k) + 0.25d0 * x(k + 1)
      end do
    end do
  end function

end program nbget_overlap
