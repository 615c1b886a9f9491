! ft_calls: every routine of the Fortran module `armci`, called from Fortran
! under mpirun, with the data it moved checked against what memory must hold.
! Prints "PASS ft_calls rank R" after ARMCI_Finalize.
program ft_calls
  use, intrinsic :: iso_c_binding
  use armci
  implicit none
  interface
    integer(c_int) function ft_c_hdl_size() bind(C, name='ft_c_hdl_size')
      import :: c_int
    end function
    integer(c_int) function ft_c_hdl_tag_offset() bind(C, name='ft_c_hdl_tag_offset')
      import :: c_int
    end function
  end interface

  integer, parameter :: n = 1000
  integer(c_int) :: me, np, right, left, rc, i, j, old
  integer(c_long) :: oldl
  type(c_ptr), allocatable :: bases(:), ibases(:), lbases(:)
  real(c_double), pointer :: win(:)
  integer(c_int), pointer :: iwin(:)
  integer(c_long), pointer :: lcnt(:)
  real(c_double), target :: src(n), dst(n), scale, tile(4, 3), got(4, 3)
  integer(c_int), target :: ival, flagval
  integer(c_long), target :: lval
  type(armci_hdl_t), target :: h, hs(2)
  integer(c_int) :: sstride(1), dstride(1), cnt(2)
  integer(c_int), parameter :: sizeof_double = 8

  rc = ARMCI_Init()
  call check(rc == 0 .and. ARMCI_Initialized() == 1, 'ARMCI_Init')
  me = armci_msg_me()
  np = armci_msg_nproc()
  ! `ft_calls error` / `ft_calls badput`: the job must end with the C
  ! library's message (run-fortran-tests.sh checks it).
  if (command_argument_count() > 0) call error_case()
  right = mod(me + 1, np)
  left = mod(me + np - 1, np)

  ! The handle type has the C layout: same size, tag after request.
  call check(int(c_sizeof(h)) == ft_c_hdl_size() .and. ft_c_hdl_size() == 8, 'armci_hdl_t size')
  call check(int(loc_diff(c_loc(hs(1)), c_loc(hs(2)))) == ft_c_hdl_size(), 'armci_hdl_t array stride')
  call check(ft_c_hdl_tag_offset() == 4, 'armci_hdl_t tag offset')

  ! ------------------------------------------------------------ Malloc
  allocate(bases(np), ibases(np), lbases(np))
  call check(ARMCI_Malloc(bases, int(2 * n * sizeof_double, c_long)) == 0, 'ARMCI_Malloc')
  call c_f_pointer(bases(me + 1), win, [2 * n])
  call check(ARMCI_Malloc(ibases, int(4 * np, c_long)) == 0, 'ARMCI_Malloc ints')
  call c_f_pointer(ibases(me + 1), iwin, [np])
  call check(ARMCI_Malloc(lbases, int(8 * 2, c_long)) == 0, 'ARMCI_Malloc longs')
  call c_f_pointer(lbases(me + 1), lcnt, [2])
  win = -1.0d0
  iwin = 0
  lcnt = 0
  call ARMCI_Barrier()

  ! ------------------------------------------------- Put / Get / Acc
  src = [(1000.0d0 * me + i, i = 1, n)]
  call check(ARMCI_Put(c_loc(src), bases(right + 1), n * sizeof_double, right) == 0, 'ARMCI_Put')
  call ARMCI_Fence(right)
  call ARMCI_Barrier()
  do i = 1, n
    call check(win(i) == 1000.0d0 * left + i, 'ARMCI_Put data')
  end do
  call check(all(win(n + 1:) == -1.0d0), 'ARMCI_Put guard')
  dst = 0
  call check(ARMCI_Get(bases(right + 1), c_loc(dst), n * sizeof_double, right) == 0, 'ARMCI_Get')
  do i = 1, n
    call check(dst(i) == 1000.0d0 * me + i, 'ARMCI_Get data')
  end do
  call ARMCI_Barrier()
  ! Every rank adds 2*src into rank 0's second half.
  scale = 2.0d0
  src = 1.0d0
  if (me == 0) win(n + 1:) = 0
  call ARMCI_Barrier()
  call check(ARMCI_Acc(ARMCI_ACC_DBL, c_loc(scale), c_loc(src), armci_ptr_add(bases(1), int(n * 8, c_intptr_t)), &
                       n * sizeof_double, 0) == 0, 'ARMCI_Acc')
  call ARMCI_AllFence()
  call ARMCI_Barrier()
  if (me == 0) call check(all(win(n + 1:) == 2.0d0 * np), 'ARMCI_Acc sum')
  call ARMCI_Barrier()

  ! ------------------------------------------------------- nonblocking
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait on an unused handle')
  src = [(-1.0d0 * i - me, i = 1, n)]
  call check(ARMCI_NbPut(c_loc(src), bases(right + 1), n * sizeof_double, right, h) == 0, 'ARMCI_NbPut')
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait')
  call ARMCI_Fence(right)
  call ARMCI_Barrier()
  do i = 1, n
    call check(win(i) == -1.0d0 * i - left, 'ARMCI_NbPut data')
  end do
  dst = 0
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_NbGet(bases(right + 1), c_loc(dst), n * sizeof_double, right, h) == 0, 'ARMCI_NbGet')
  do while (ARMCI_Test(h) /= 0)
  end do
  call check(ARMCI_Test(h) == 0, 'ARMCI_Test after completion')
  do i = 1, n
    call check(dst(i) == -1.0d0 * i - me, 'ARMCI_NbGet data')
  end do
  ! Implicit handles (argument absent): completed by WaitProc and WaitAll.
  dst = 0
  call check(ARMCI_NbGet(bases(right + 1), c_loc(dst), n / 2 * sizeof_double, right) == 0, 'ARMCI_NbGet implicit')
  call check(ARMCI_WaitProc(right) == 0, 'ARMCI_WaitProc')
  call check(dst(1) == -1.0d0 - me .and. dst(n / 2) == -1.0d0 * (n / 2) - me .and. dst(n / 2 + 1) == 0, &
             'ARMCI_NbGet implicit data')
  call check(ARMCI_NbGet(armci_ptr_add(bases(right + 1), int(n / 2 * 8, c_intptr_t)), c_loc(dst(n / 2 + 1)), &
                         n / 2 * sizeof_double, right) == 0, 'ARMCI_NbGet implicit 2')
  call check(ARMCI_WaitAll() == 0, 'ARMCI_WaitAll')
  call check(dst(n) == -1.0d0 * n - me, 'ARMCI_WaitAll data')
  call ARMCI_Barrier()
  if (me == 0) win(n + 1:) = 0
  call ARMCI_Barrier()
  scale = 3.0d0
  src = 1.0d0
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_NbAcc(ARMCI_ACC_DBL, c_loc(scale), c_loc(src), armci_ptr_add(bases(1), int(n * 8, c_intptr_t)), &
                         n * sizeof_double, 0, h) == 0, 'ARMCI_NbAcc')
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait NbAcc')
  call ARMCI_Fence(0)
  call ARMCI_Barrier()
  if (me == 0) call check(all(win(n + 1:) == 3.0d0 * np), 'ARMCI_NbAcc sum')
  ! Aggregate handle: several puts, one wait.
  call ARMCI_INIT_HANDLE(h)
  call ARMCI_SET_AGGREGATE_HANDLE(h)
  src = [(7.0d0 * i + me, i = 1, n)]
  do i = 1, 10
    call check(ARMCI_NbPut(c_loc(src((i - 1) * 100 + 1)), armci_ptr_add(bases(right + 1), int((i - 1) * 800, c_intptr_t)), &
                           100 * sizeof_double, right, h) == 0, 'ARMCI_NbPut aggregate')
  end do
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait aggregate')
  call ARMCI_UNSET_AGGREGATE_HANDLE(h)
  call ARMCI_Fence(right)
  call ARMCI_Barrier()
  do i = 1, n
    call check(win(i) == 7.0d0 * i + left, 'aggregate NbPut data')
  end do
  call ARMCI_Barrier()

  ! ---------------------------------------------------------- strided
  ! A 4x3 tile (Fortran column-major) into rows 2..5, columns 1..3 of a
  ! 10-row column-major matrix in the right neighbour's window.
  win(1:30) = 0
  call ARMCI_Barrier()
  tile = reshape([(100.0d0 * me + i, i = 1, 12)], [4, 3])
  sstride(1) = 4 * sizeof_double
  dstride(1) = 10 * sizeof_double
  cnt = [4 * sizeof_double, 3]
  call check(ARMCI_PutS(c_loc(tile), sstride, armci_ptr_add(bases(right + 1), int(8, c_intptr_t)), dstride, &
                        cnt, 1, right) == 0, 'ARMCI_PutS')
  call ARMCI_Fence(right)
  call ARMCI_Barrier()
  do j = 1, 3
    do i = 1, 10
      if (i >= 2 .and. i <= 5) then
        call check(win((j - 1) * 10 + i) == 100.0d0 * left + (j - 1) * 4 + i - 1, 'ARMCI_PutS data')
      else
        call check(win((j - 1) * 10 + i) == 0, 'ARMCI_PutS gap')
      end if
    end do
  end do
  got = 0
  call check(ARMCI_GetS(armci_ptr_add(bases(right + 1), int(8, c_intptr_t)), dstride, c_loc(got), sstride, &
                        cnt, 1, right) == 0, 'ARMCI_GetS')
  call check(all(got == tile), 'ARMCI_GetS data')
  got = 0
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_NbGetS(armci_ptr_add(bases(right + 1), int(8, c_intptr_t)), dstride, c_loc(got), sstride, &
                          cnt, 1, right, h) == 0, 'ARMCI_NbGetS')
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait NbGetS')
  call check(all(got == tile), 'ARMCI_NbGetS data')
  call ARMCI_Barrier()
  ! Every rank accumulates 1.5 * tile-of-ones into rank 0, blocking and
  ! nonblocking, and puts a 1x3 row nonblocking into its right neighbour.
  win(1:30) = 0
  call ARMCI_Barrier()
  got = 1
  scale = 1.5d0
  call check(ARMCI_AccS(ARMCI_ACC_DBL, c_loc(scale), c_loc(got), sstride, bases(1), dstride, cnt, 1, 0) == 0, &
             'ARMCI_AccS')
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_NbAccS(ARMCI_ACC_DBL, c_loc(scale), c_loc(got), sstride, bases(1), dstride, cnt, 1, 0, h) == 0, &
             'ARMCI_NbAccS')
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait NbAccS')
  call ARMCI_AllFence()
  call ARMCI_Barrier()
  if (me == 0) then
    do j = 1, 3
      call check(all(win((j - 1) * 10 + 1:(j - 1) * 10 + 4) == 3.0d0 * np), 'ARMCI_AccS sum')
      call check(all(win((j - 1) * 10 + 5:j * 10) == 0), 'ARMCI_AccS gap')
    end do
  end if
  call ARMCI_Barrier()
  cnt = [sizeof_double, 3]
  call ARMCI_INIT_HANDLE(h)
  call check(ARMCI_NbPutS(c_loc(tile(2, 1)), sstride, armci_ptr_add(bases(right + 1), int(8 * 20, c_intptr_t)), &
                          dstride, cnt, 1, right, h) == 0, 'ARMCI_NbPutS')
  call check(ARMCI_Wait(h) == 0, 'ARMCI_Wait NbPutS')
  call ARMCI_Fence(right)
  call ARMCI_Barrier()
  call check(win(21) == 100.0d0 * left + 2 .and. win(31) == 100.0d0 * left + 6 .and. win(41) == 100.0d0 * left + 10, &
             'ARMCI_NbPutS data')
  call ARMCI_Barrier()

  ! ------------------------------------------------------ single values
  call check(ARMCI_PutValueInt(int(me + 40, c_int), c_loc_int(ibases(right + 1), me), right) == 0, 'ARMCI_PutValueInt')
  call check(ARMCI_PutValueLong(int(me, c_long) + 5000000000_c_long, lbases(right + 1), right) == 0, &
             'ARMCI_PutValueLong')
  call check(ARMCI_PutValueDouble(0.25d0 + me, armci_ptr_add(bases(right + 1), int(8 * (2 * n - 1), c_intptr_t)), &
                                  right) == 0, 'ARMCI_PutValueDouble')
  call ARMCI_AllFence()
  call ARMCI_Barrier()
  call check(iwin(left + 1) == left + 40, 'ARMCI_PutValueInt data')
  call check(lcnt(1) == left + 5000000000_c_long, 'ARMCI_PutValueLong data')
  call check(win(2 * n) == 0.25d0 + left, 'ARMCI_PutValueDouble data')
  call check(ARMCI_GetValueInt(c_loc_int(ibases(right + 1), me), right) == me + 40, 'ARMCI_GetValueInt')
  call check(ARMCI_GetValueLong(lbases(right + 1), right) == me + 5000000000_c_long, 'ARMCI_GetValueLong')
  call check(ARMCI_GetValueDouble(armci_ptr_add(bases(right + 1), int(8 * (2 * n - 1), c_intptr_t)), right) &
             == 0.25d0 + me, 'ARMCI_GetValueDouble')
  call ARMCI_Barrier()

  ! ------------------------------------------------------------- Rmw
  iwin = 0
  lcnt = 0
  call ARMCI_Barrier()
  do i = 1, 50
    call check(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, c_loc(ival), ibases(1), 2, 0) == 0, 'ARMCI_Rmw fetch-and-add')
    call check(mod(ival, 2) == 0 .and. ival >= 0 .and. ival < 100 * np, 'ARMCI_Rmw old value')
    call check(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, c_loc(lval), armci_ptr_add(lbases(1), int(8, c_intptr_t)), 3, 0) &
               == 0, 'ARMCI_Rmw fetch-and-add long')
  end do
  call ARMCI_Barrier()
  if (me == 0) call check(iwin(1) == 100 * np .and. lcnt(2) == 150 * np, 'ARMCI_Rmw totals')
  call ARMCI_Barrier()
  ! Swap my token into rank 0's slot: the tokens seen plus the one left there
  ! are every rank's exactly once.
  if (me == 0) iwin(2) = -1
  call ARMCI_Barrier()
  ival = me
  call check(ARMCI_Rmw(ARMCI_SWAP, c_loc(ival), c_loc_int(ibases(1), 1), 0, 0) == 0, 'ARMCI_Rmw swap')
  lval = int(me, c_long) + 2_c_long**40
  call check(ARMCI_Rmw(ARMCI_SWAP_LONG, c_loc(lval), lbases(1), 0, 0) == 0, 'ARMCI_Rmw swap long')
  oldl = lval
  old = ival
  call ARMCI_Barrier()
  call check(old >= -1 .and. old < np .and. old /= me, 'ARMCI_Rmw swap old value')
  call check(oldl == 0 .or. (oldl >= 2_c_long**40 .and. oldl < 2_c_long**40 + np), 'ARMCI_Rmw swap long old value')

  ! ----------------------------------------------------------- mutexes
  call check(ARMCI_Create_mutexes(1) == 0, 'ARMCI_Create_mutexes')
  if (me == 0) win(1) = 0
  call ARMCI_Barrier()
  do i = 1, 20
    call ARMCI_Lock(0, 0)
    call check(ARMCI_Get(bases(1), c_loc(scale), sizeof_double, 0) == 0, 'get under lock')
    scale = scale + 1
    call check(ARMCI_Put(c_loc(scale), bases(1), sizeof_double, 0) == 0, 'put under lock')
    call ARMCI_Unlock(0, 0)
  end do
  call ARMCI_Barrier()
  if (me == 0) call check(win(1) == 20.0d0 * np, 'ARMCI_Lock/Unlock total')
  call check(ARMCI_Destroy_mutexes() == 0, 'ARMCI_Destroy_mutexes')

  ! ----------------------------------------------- notify and Put_flag
  src = [(0.5d0 * i + me, i = 1, n)]
  call check(ARMCI_Put(c_loc(src), bases(right + 1), n * sizeof_double, right) == 0, 'put before notify')
  rc = armci_notify(right)
  call check(rc >= 1, 'armci_notify')
  rc = armci_notify_wait(left, c_loc(ival))
  call check(rc >= ival .and. ival >= 1, 'armci_notify_wait')
  do i = 1, n
    call check(win(i) == 0.5d0 * i + left, 'data before notify')
  end do
  call ARMCI_Barrier()
  iwin = 0
  call ARMCI_Barrier()
  src = [(0.25d0 * i - me, i = 1, n)]
  flagval = 0
  call check(ARMCI_Put_flag(c_loc(src), armci_ptr_add(bases(right + 1), int(8 * n, c_intptr_t)), n * sizeof_double, &
                            c_f_int(ibases(right + 1)), 77, right) == 0, 'ARMCI_Put_flag')
  ! GetValue on self: a read the compiler cannot hoist out of the loop.
  do while (ARMCI_GetValueInt(ibases(me + 1), me) /= 77)
  end do
  do i = 1, n
    call check(win(n + i) == 0.25d0 * i - left, 'ARMCI_Put_flag data')
  end do
  call ARMCI_Barrier()

  ! ----------------------------------------------------- local memory
  call check(ARMCI_Same_node(me) == 1, 'ARMCI_Same_node(me)')
  block
    type(c_ptr) :: lp
    real(c_double), pointer :: lbuf(:)
    lp = ARMCI_Malloc_local(int(n * 8, c_long))
    call check(c_associated(lp), 'ARMCI_Malloc_local')
    call c_f_pointer(lp, lbuf, [n])
    call check(ARMCI_Get(bases(right + 1), lp, n * sizeof_double, right) == 0, 'get into Malloc_local')
    do i = 1, n
      call check(lbuf(i) == 0.5d0 * i + me, 'Malloc_local data')
    end do
    call check(ARMCI_Free_local(lp) == 0, 'ARMCI_Free_local')
  end block

  ! ----------------------------------------------------- armci_msg
  block
    integer(c_int) :: iv(3)
    integer(c_long) :: lv(2)
    real(c_float) :: fv(2)
    real(c_double) :: dv(2)
    real(c_double), target :: bv(4)
    integer :: r
    iv = [me + 1, -me, 7]
    call armci_msg_igop(iv, 3_c_int, '+' // c_null_char)
    call check(iv(1) == np * (np + 1) / 2 .and. iv(2) == -(np * (np - 1)) / 2 .and. iv(3) == 7 * np, &
               'armci_msg_igop +')
    lv = [int(me, c_long) * 3_c_long, -int(me, c_long)]
    call armci_msg_lgop(lv, 2_c_int, 'max' // c_null_char)
    call check(lv(1) == 3 * (np - 1) .and. lv(2) == 0, 'armci_msg_lgop max')
    fv = [real(me + 1, c_float), 2.0_c_float]
    call armci_msg_fgop(fv, 2_c_int, '*' // c_null_char)
    call check(fv(2) == 2.0_c_float ** np, 'armci_msg_fgop *')
    dv = [-(me + 1) * 1.5d0, (me + 1) * 0.25d0]
    call armci_msg_dgop(dv, 2_c_int, 'absmin' // c_null_char)
    call check(dv(1) == 1.5d0 .and. dv(2) == 0.25d0, 'armci_msg_dgop absmin')
    dv = [real(me, c_double), 0d0]
    call armci_msg_dgop(dv, 2_c_int, 'min' // c_null_char)
    call check(dv(1) == 0d0, 'armci_msg_dgop min')
    do r = 0, np - 1
      bv = -1d0
      if (me == r) bv = [(r * 10d0 + i, i = 1, 4)]
      call armci_msg_bcast(c_loc(bv), int(4 * sizeof_double, c_int), int(r, c_int))
      do i = 1, 4
        call check(bv(i) == r * 10d0 + i, 'armci_msg_bcast data')
      end do
    end do
  end block

  call armci_msg_barrier()
  call check(ARMCI_Free(lbases(me + 1)) == 0, 'ARMCI_Free longs')
  call check(ARMCI_Free(ibases(me + 1)) == 0, 'ARMCI_Free ints')
  call check(ARMCI_Free(bases(me + 1)) == 0, 'ARMCI_Free')
  call check(ARMCI_Finalize() == 0, 'ARMCI_Finalize')
  call ARMCI_Cleanup()
  print '(a,i0)', 'PASS ft_calls rank ', me

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      write (0, '(a,i0,2a)') 'FAIL rank ', me, ' ft_calls: ', what
      flush (0)
      call ARMCI_Error('Fortran test check failed' // c_null_char, 1)
    end if
  end subroutine

  subroutine error_case()
    character(len=16) :: which
    real(c_double), target :: one(1)
    type(c_ptr), allocatable :: eb(:)
    call get_command_argument(1, which)
    allocate(eb(np))
    rc = ARMCI_Malloc(eb, 8_c_long)
    if (me == 0) then
      select case (which)
      case ('error')
        call ARMCI_Error('ft_calls: deliberate error from Fortran' // c_null_char, 7)
      case ('badput')
        rc = ARMCI_Put(c_loc(one), eb(2), -8, 1)
      end select
      write (0, '(a)') 'FAIL ft_calls: the error case returned'
      stop 1
    end if
    ! The other ranks wait here; the job ends from rank 0.
    call ARMCI_Barrier()
    stop 1
  end subroutine

  integer(c_intptr_t) function loc_diff(a, b)
    type(c_ptr), intent(in) :: a, b
    loc_diff = transfer(b, 0_c_intptr_t) - transfer(a, 0_c_intptr_t)
  end function

  ! The address of int slot k (0-based) of an int window.
  type(c_ptr) function c_loc_int(base, k)
    type(c_ptr), intent(in) :: base
    integer(c_int), intent(in) :: k
    c_loc_int = armci_ptr_add(base, int(4 * k, c_intptr_t))
  end function

  type(c_ptr) function c_f_int(base)
    type(c_ptr), intent(in) :: base
    c_f_int = base
  end function


end program ft_calls
