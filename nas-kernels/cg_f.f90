! cg_f.f90: NAS Parallel Benchmark CG in Fortran through `use armci`, the
! armci-nb variant of cg.c: the same NPB 3.x matrix (makea), iteration and
! zeta verification, rows cut in blocks, p gathered by nonblocking puts
! (ARMCI_NbPut) that travel while the own-column block is multiplied, and
! dot products reduced through ARMCI puts and armci_notify.
program cg_f
  use, intrinsic :: iso_c_binding
  use armci
  implicit none

  integer, parameter :: dp = c_double, reduce_max = 4
  real(dp), parameter :: rcond = 0.1d0, amult = 1220703125.0d0
  integer :: na, nonzer, niter, me, np, first, nrows, rc, it, timed, r, iters
  real(dp) :: shift, zeta_verify, zeta, rnorm, norms(2), inv, t, err, nzf, mops
  real(dp) :: tran
  character(len=1) :: cls
  integer, allocatable :: offs(:), lens(:)
  ! Own-column and other-column parts of this rank's rows (CSR, 1-based).
  integer, allocatable :: own_row(:), own_col(:), oth_row(:), oth_col(:)
  real(dp), allocatable :: own_a(:), oth_a(:)
  real(dp), allocatable :: x(:), z(:), q(:), rr(:)
  type(c_ptr), allocatable :: pbases(:), sbases(:)
  real(dp), pointer :: pfull(:), slots(:)
  type(armci_hdl_t), allocatable :: handles(:)
  logical, allocatable :: told(:)
  integer :: reduce_round = 0
  integer(8) :: t0, t1, rate
  logical :: ok

  call parse_args()
  rc = ARMCI_Init()
  me = armci_msg_me()
  np = armci_msg_nproc()
  if (np > 8 .or. iand(np, np - 1) /= 0) then
    if (me == 0) write (0, '(a,i0,a)') 'cg_f: the process count must be a power of two up to 8 (got ', np, ')'
    rc = ARMCI_Finalize()
    stop 2
  end if
  select case (cls)
  case ('S'); na = 1400; nonzer = 7; niter = 15; shift = 10.0d0; zeta_verify = 8.5971775078648d0
  case ('W'); na = 7000; nonzer = 8; niter = 15; shift = 12.0d0; zeta_verify = 10.362595087124d0
  case ('A'); na = 14000; nonzer = 11; niter = 15; shift = 20.0d0; zeta_verify = 17.130235054029d0
  case default; na = 75000; nonzer = 13; niter = 75; shift = 60.0d0; zeta_verify = 22.712745482631d0
  end select

  allocate(offs(0:np - 1), lens(0:np - 1), handles(0:np - 1), told(0:np - 1), pbases(np), sbases(np))
  do r = 0, np - 1
    offs(r) = int(int(na, 8) * r / np)
    lens(r) = int(int(na, 8) * (r + 1) / np) - offs(r)
  end do
  first = offs(me) + 1
  nrows = lens(me)
  if (me == 0) then
    write (*, '(/,/,a,/)') ' NAS Parallel Benchmarks (libarmci kernels) - CG Benchmark, Fortran'
    write (*, '(a,i11,/,a,i5,/,a,i5,/,a,/)') ' Size: ', na, ' Iterations: ', niter, &
      ' Number of active processes: ', np, ' Variant: armci-nb'
  end if

  tran = 314159265.0d0
  zeta = randlc(tran, amult)
  call makea()

  rc = ARMCI_Malloc(pbases, int(na, c_long) * 8)
  call c_f_pointer(pbases(me + 1), pfull, [na])
  rc = ARMCI_Malloc(sbases, int(2 * np * reduce_max, c_long) * 8)
  call c_f_pointer(sbases(me + 1), slots, [2 * np * reduce_max])
  pfull = 0
  slots = 0
  call ARMCI_Barrier()

  allocate(x(nrows), z(nrows), q(nrows), rr(nrows))
  ! One untimed iteration, then the timed ones (as NPB).
  do timed = 0, 1
    x = 1.0d0
    call ARMCI_Barrier()
    call system_clock(t0, rate)
    iters = merge(niter, 1, timed == 1)
    do it = 1, iters
      call conj_grad(rnorm)
      norms = [dot_product(x, z), dot_product(z, z)]
      call allreduce(norms, 2, .false.)
      inv = 1.0d0 / sqrt(norms(2))
      if (timed == 1) then
        zeta = shift + 1.0d0 / norms(1)
        if (me == 0) then
          if (it == 1) write (*, '(a)') '   iteration           ||r||                 zeta'
          write (*, '(4x,i5,7x,es20.14,es20.13)') it, rnorm, zeta
        end if
      end if
      x = inv * z
    end do
    call system_clock(t1)
  end do
  t = real(t1 - t0, dp) / real(rate, dp)
  norms(1) = t
  call allreduce(norms, 1, .true.)
  t = norms(1)

  err = abs(zeta - zeta_verify) / zeta_verify
  ok = err <= 1.0d-10
  if (me == 0) then
    write (*, '(a)') ' Benchmark completed'
    if (ok) then
      write (*, '(a,/,a,es20.13,/,a,es20.13)') ' VERIFICATION SUCCESSFUL', ' Zeta is    ', zeta, ' Error is   ', err
    else
      write (*, '(a,/,a,es20.13,/,a,es20.13)') ' VERIFICATION FAILED', ' Zeta                ', zeta, &
        ' The correct zeta is ', zeta_verify
    end if
    nzf = real(nonzer, dp) * (nonzer + 1)
    mops = 0
    if (t > 0) mops = 2.0d0 * niter * na * (3.0d0 + nzf + 25.0d0 * (5.0d0 + nzf) + 3.0d0) / t / 1.0d6
    write (*, '(/,/,a)') ' CG Benchmark Completed.'
    write (*, '(a,a)') ' Class           =  ', cls
    write (*, '(a,i0)') ' Size            =  ', na
    write (*, '(a,i0)') ' Iterations      =  ', niter
    write (*, '(2a)') ' Time in seconds =  ', fixed2(t)
    write (*, '(a,i0)') ' Total processes =  ', np
    write (*, '(2a)') ' Mop/s total     =  ', fixed2(mops)
    write (*, '(2a)') ' Mop/s/process   =  ', fixed2(mops / np)
    write (*, '(a)') ' Operation type  =  floating point'
    write (*, '(a)') ' Variant         =  armci-nb (Fortran)'
    write (*, '(a,a)') ' Verification    =  ', trim(merge('SUCCESSFUL  ', 'UNSUCCESSFUL', ok))
    flush (6)
  end if
  call ARMCI_Barrier()
  rc = ARMCI_Free(sbases(me + 1))
  rc = ARMCI_Free(pbases(me + 1))
  rc = ARMCI_Finalize()
  if (.not. ok) stop 1

contains

  ! x with two decimals and no padding, as C's "%.2f" (f0.2 drops the 0 of 0.xx).
  function fixed2(xv) result(s)
    real(dp), intent(in) :: xv
    character(len=:), allocatable :: s
    character(len=32) :: buf
    write (buf, '(f32.2)') xv
    s = trim(adjustl(buf))
  end function

  subroutine parse_args()
    character(len=32) :: arg, val
    integer :: i
    cls = 'S'
    i = 1
    do while (i <= command_argument_count())
      call get_command_argument(i, arg)
      if (i + 1 > command_argument_count()) call usage('missing value after ' // trim(arg))
      call get_command_argument(i + 1, val)
      select case (arg)
      case ('--class')
        if (len_trim(val) /= 1 .or. index('SWAB', val(1:1)) == 0) call usage('--class must be S, W, A or B')
        cls = val(1:1)
      case ('--variant')
        if (val /= 'armci-nb') call usage('the Fortran CG has the armci-nb variant only')
      case default
        call usage('unknown argument ' // trim(arg))
      end select
      i = i + 2
    end do
  end subroutine

  subroutine usage(why)
    character(*), intent(in) :: why
    write (0, '(a)') 'cg_f: ' // why
    write (0, '(a)') 'usage: mpirun -np N cg_f --class S|W|A|B [--variant armci-nb]'
    stop 2
  end subroutine

  ! NPB's generator: x = a x mod 2^46, returns x / 2^46.
  real(dp) function randlc(xs, a)
    real(dp), intent(inout) :: xs
    real(dp), intent(in) :: a
    real(dp), parameter :: r23 = 0.5d0**23, r46 = r23 * r23, t23 = 2.0d0**23, t46 = t23 * t23
    real(dp) :: t1, t2, t3, t4, a1, a2, x1, x2, zz
    t1 = r23 * a
    a1 = aint(t1)
    a2 = a - t23 * a1
    t1 = r23 * xs
    x1 = aint(t1)
    x2 = xs - t23 * x1
    t1 = a1 * x2 + a2 * x1
    t2 = aint(r23 * t1)
    zz = t1 - t23 * t2
    t3 = t23 * zz + a2 * x2
    t4 = aint(r46 * t3)
    xs = t3 - t46 * t4
    randlc = r46 * xs
  end function

  ! NPB's makea + sparse for rows first..first+nrows-1, split into the
  ! own-column block and the rest.
  subroutine makea()
    integer :: per, nn1, i, k, kk, jj, jcol, nzv, row, qq, s, at, nza, last, vecpos, nout_own, nout_oth
    integer, allocatable :: arow(:), acol(:, :), rowstr(:), colidx(:), dups(:)
    real(dp), allocatable :: aelt(:, :), a(:)
    real(dp) :: size, ratio, scale, va, vecelt, vecloc
    logical :: seen
    per = nonzer + 1
    allocate(arow(na), acol(per, na), aelt(per, na))
    nn1 = 1
    do while (nn1 < na)
      nn1 = 2 * nn1
    end do
    do i = 1, na
      nzv = 0
      do while (nzv < nonzer)
        vecelt = randlc(tran, amult)
        vecloc = randlc(tran, amult)
        vecpos = int(nn1 * vecloc) + 1
        if (vecpos > na) cycle
        seen = .false.
        do k = 1, nzv
          if (acol(k, i) == vecpos) seen = .true.
        end do
        if (seen) cycle
        nzv = nzv + 1
        aelt(nzv, i) = vecelt
        acol(nzv, i) = vecpos
      end do
      seen = .false.
      do k = 1, nzv
        if (acol(k, i) == i) then
          aelt(k, i) = 0.5d0
          seen = .true.
        end if
      end do
      if (.not. seen) then
        nzv = nzv + 1
        aelt(nzv, i) = 0.5d0
        acol(nzv, i) = i
      end if
      arow(i) = nzv
    end do

    last = first + nrows - 1
    allocate(rowstr(nrows + 1), dups(nrows))
    rowstr = 0
    dups = 0
    do i = 1, na
      do k = 1, arow(i)
        jj = acol(k, i)
        if (jj >= first .and. jj <= last) rowstr(jj - first + 2) = rowstr(jj - first + 2) + arow(i)
      end do
    end do
    rowstr(1) = 1
    do row = 2, nrows + 1
      rowstr(row) = rowstr(row) + rowstr(row - 1)
    end do
    nza = rowstr(nrows + 1) - 1
    allocate(a(nza), colidx(nza))
    a = 0
    colidx = 0
    size = 1.0d0
    ratio = rcond**(1.0d0 / real(na, dp))
    do i = 1, na
      do k = 1, arow(i)
        jj = acol(k, i)
        if (jj < first .or. jj > last) cycle
        row = jj - first + 1
        scale = size * aelt(k, i)
        do kk = 1, arow(i)
          jcol = acol(kk, i)
          va = aelt(kk, i) * scale
          if (jcol == jj .and. jj == i) va = va + rcond - shift
          at = 0
          do qq = rowstr(row), rowstr(row + 1) - 1
            if (colidx(qq) > jcol) then
              do s = rowstr(row + 1) - 2, qq, -1
                if (colidx(s) > 0) then
                  a(s + 1) = a(s)
                  colidx(s + 1) = colidx(s)
                end if
              end do
              colidx(qq) = jcol
              a(qq) = 0
              at = qq
              exit
            else if (colidx(qq) == 0) then
              colidx(qq) = jcol
              at = qq
              exit
            else if (colidx(qq) == jcol) then
              dups(row) = dups(row) + 1
              at = qq
              exit
            end if
          end do
          if (at == 0) then
            write (0, '(a,i0)') 'cg_f: makea: row overflowed: ', jj
            call ARMCI_Error('cg_f: makea' // c_null_char, 3)
          end if
          a(at) = a(at) + va
        end do
      end do
      size = size * ratio
    end do

    ! Split each row's entries (without the slots duplicates left empty).
    allocate(own_row(nrows + 1), oth_row(nrows + 1), own_col(nza), oth_col(nza), own_a(nza), oth_a(nza))
    nout_own = 0
    nout_oth = 0
    own_row(1) = 1
    oth_row(1) = 1
    do row = 1, nrows
      do qq = rowstr(row), rowstr(row + 1) - 1 - dups(row)
        if (colidx(qq) >= first .and. colidx(qq) <= last) then
          nout_own = nout_own + 1
          own_col(nout_own) = colidx(qq)
          own_a(nout_own) = a(qq)
        else
          nout_oth = nout_oth + 1
          oth_col(nout_oth) = colidx(qq)
          oth_a(nout_oth) = a(qq)
        end if
      end do
      own_row(row + 1) = nout_own + 1
      oth_row(row + 1) = nout_oth + 1
    end do
  end subroutine

  ! y = A p, p's own block at pfull(first:): its puts to every other rank
  ! are issued first and waited for only after the own-column product.
  subroutine matvec(y)
    real(dp), intent(out) :: y(:)
    integer :: k, rk, row, kk
    real(dp) :: s
    do k = 1, np - 1
      rk = mod(me + k, np)
      call ARMCI_INIT_HANDLE(handles(rk))
      rc = ARMCI_NbPut(c_loc(pfull(first)), armci_ptr_add(pbases(rk + 1), int(8 * (first - 1), c_intptr_t)), &
                       8 * nrows, rk, handles(rk))
      told(rk) = .false.
    end do
    call tell_arrived()
    do row = 1, nrows
      s = 0
      do kk = own_row(row), own_row(row + 1) - 1
        s = s + own_a(kk) * pfull(own_col(kk))
      end do
      y(row) = s
      if (iand(row, 1023) == 0) call tell_arrived()
    end do
    call exchange_done()
    do row = 1, nrows
      s = y(row)
      do kk = oth_row(row), oth_row(row + 1) - 1
        s = s + oth_a(kk) * pfull(oth_col(kk))
      end do
      y(row) = s
    end do
  end subroutine

  ! Peers wait on the notification: it goes to each as soon as the put to it
  ! completed (armci_notify orders itself after the put), not after the
  ! own-column product.
  subroutine tell_arrived()
    integer :: k, rk
    do k = 1, np - 1
      rk = mod(me + k, np)
      if (told(rk)) cycle
      if (ARMCI_Test(handles(rk)) /= 0) cycle
      rc = armci_notify(rk)
      told(rk) = .true.
    end do
  end subroutine

  ! Every put of this rank complete and notified; every other rank's here.
  subroutine exchange_done()
    integer :: k, rk
    do k = 1, np - 1
      rk = mod(me + k, np)
      if (told(rk)) cycle
      rc = ARMCI_Wait(handles(rk))
      rc = armci_notify(rk)
    end do
    do k = 1, np - 1
      rc = armci_notify_wait(mod(me + np - k, np), c_null_ptr)
    end do
  end subroutine

  ! Sum (or max) over every rank, identical everywhere: each rank puts its
  ! values into its slot at every other rank (two rounds of slots, so a
  ! rank one reduction ahead overwrites nothing still unread).
  subroutine allreduce(v, n, take_max)
    real(dp), intent(inout) :: v(:)
    integer, intent(in) :: n
    logical, intent(in) :: take_max
    integer :: base, k, rk, i
    if (np == 1) return
    base = mod(reduce_round, 2) * np * reduce_max
    reduce_round = reduce_round + 1
    slots(base + me * reduce_max + 1:base + me * reduce_max + n) = v(1:n)
    do k = 1, np - 1
      rk = mod(me + k, np)
      rc = ARMCI_Put(c_loc(slots(base + me * reduce_max + 1)), &
                     armci_ptr_add(sbases(rk + 1), int(8 * (base + me * reduce_max), c_intptr_t)), 8 * n, rk)
      rc = armci_notify(rk)
    end do
    do k = 1, np - 1
      rc = armci_notify_wait(mod(me + np - k, np), c_null_ptr)
    end do
    v(1:n) = slots(base + 1:base + n)
    do rk = 1, np - 1
      do i = 1, n
        if (take_max) then
          v(i) = max(v(i), slots(base + rk * reduce_max + i))
        else
          v(i) = v(i) + slots(base + rk * reduce_max + i)
        end if
      end do
    end do
  end subroutine

  ! NPB's conj_grad: 25 CG steps on A z = x, then ||x - A z||.
  subroutine conj_grad(res)
    real(dp), intent(out) :: res
    real(dp) :: rho(1), d(1), alpha, rho0, beta, sum2(1)
    integer :: cgit, last
    last = first + nrows - 1
    q = 0
    z = 0
    rr = x
    pfull(first:last) = x
    rho(1) = dot_product(rr, rr)
    call allreduce(rho, 1, .false.)
    do cgit = 1, 25
      call matvec(q)
      d(1) = dot_product(pfull(first:last), q)
      call allreduce(d, 1, .false.)
      alpha = rho(1) / d(1)
      rho0 = rho(1)
      z = z + alpha * pfull(first:last)
      rr = rr - alpha * q
      rho(1) = dot_product(rr, rr)
      call allreduce(rho, 1, .false.)
      beta = rho(1) / rho0
      pfull(first:last) = rr + beta * pfull(first:last)
    end do
    pfull(first:last) = z
    call matvec(rr)
    sum2(1) = sum((x - rr)**2)
    call allreduce(sum2, 1, .false.)
    res = sqrt(sum2(1))
  end subroutine

end program cg_f
