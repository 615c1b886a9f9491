! ft_msg: the armci_msg_* reductions and selections and the armci_domain_*
! queries called from Fortran as Global Arrays calls them from its Fortran
! side: the op name is a character argument with no c_null_char after it
! (a literal, or a longer variable whose first letters name the op).
! Values are checked against what every rank computes from the others'
! known contributions. Prints "PASS ft_msg rank N".
program ft_msg
  use armci
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int) :: me, np, rc, node, nlocal, first, l, r, best
  integer(c_int), target :: iv(4), ni
  integer(c_long) :: lv(2)
  integer(c_long_long) :: llv(2)
  character(len=13) :: selop
  type, bind(C) :: sel_record
    real(c_double) :: value
    integer(c_int) :: rank, pad
  end type
  type(sel_record), target :: rec

  rc = ARMCI_Init()
  call check(rc == 0, 'ARMCI_Init')
  me = armci_msg_me()
  np = armci_msg_nproc()

  ! Logical and bitwise reductions: every rank non-zero, rank 0 alone zero,
  ! rank 0 alone non-zero, bits of the rank.
  iv = [me + 1, merge(0, 5, me == 0), merge(7, 0, me == 0), ishft(1, me)]
  call armci_msg_igop(iv, 4_c_int, '&&')
  call check(all(iv == [1, merge(1, 0, np == 1), merge(1, 0, np == 1), 1]), 'igop &&')
  iv = [me + 1, merge(0, 5, me == 0), merge(7, 0, me == 0), ishft(1, me)]
  call armci_msg_igop(iv, 4_c_int, '||')
  call check(all(iv == [1, merge(0, 1, np == 1), 1, 1]), 'igop ||')
  iv = [me + 1, merge(0, 5, me == 0), merge(7, 0, me == 0), ishft(1, me)]
  call armci_msg_igop(iv, 4_c_int, '|')
  call check(iv(4) == ishft(1, np) - 1, 'igop |')
  lv = [int(me + 1, c_long), 0_c_long]
  call armci_msg_lgop(lv, 2_c_int, 'land')
  call check(lv(1) == 1 .and. lv(2) == 0, 'lgop land')
  llv = [int(me, c_long_long), 0_c_long_long]
  call armci_msg_llgop(llv, 2_c_int, 'lor')
  call check(llv(1) == merge(0, 1, np == 1) .and. llv(2) == 0, 'llgop lor')
  lv = [int(me, c_long), int(-me, c_long)]
  call armci_msg_lgop(lv, 2_c_int, 'max')
  call check(lv(1) == np - 1 .and. lv(2) == 0, 'lgop max')

  ! Domains: -1 is this rank's own.
  node = armci_domain_my_id(ARMCI_DOMAIN_SMP)
  nlocal = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node)
  call check(armci_domain_nprocs(ARMCI_DOMAIN_SMP, -1_c_int) == nlocal, 'armci_domain_nprocs(-1)')
  first = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, 0_c_int)
  do l = 0, nlocal - 1
    call check(armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, -1_c_int, l) == first + l, 'glob_proc_id(-1)')
  end do

  ! GA's matmul: the node's minimum; the node's ranks are consecutive.
  ni = 100 - me
  call armci_msg_gop_scope(SCOPE_NODE, c_loc(ni), 1_c_int, 'min', ARMCI_INT)
  call check(ni == 100 - (first + nlocal - 1), 'gop_scope SCOPE_NODE min')

  ! GA's select: the record of the rank with the largest value; rank 1
  ! does not take part (np > 2). The op is a longer variable, as a Fortran
  ! program's buffer followed by other text.
  selop = 'maxminibincnt'
  do r = 0, 1
    rec%value = real(mod(me * 3, np), c_double)
    if (r == 1) rec%value = -rec%value
    rec%rank = me
    best = -1
    do l = 0, np - 1
      if (np > 2 .and. l == 1) cycle
      if (best < 0) then
        best = l
      else if (mod(l * 3, np) > mod(best * 3, np)) then
        best = l
      end if
    end do
    if (r == 0) then
      call armci_msg_sel_scope(SCOPE_ALL, c_loc(rec), int(c_sizeof(rec), c_int), selop, ARMCI_DOUBLE, &
                               merge(0_c_int, 1_c_int, np > 2 .and. me == 1))
    else
      call armci_msg_sel_scope(SCOPE_ALL, c_loc(rec), int(c_sizeof(rec), c_int), 'min', ARMCI_DOUBLE, &
                               merge(0_c_int, 1_c_int, np > 2 .and. me == 1))
    end if
    call check(rec%rank == best, 'sel_scope rank')
    call check(abs(rec%value) == real(mod(best * 3, np), c_double), 'sel_scope value')
  end do

  call armci_msg_barrier()
  rc = ARMCI_Finalize()
  call check(rc == 0, 'ARMCI_Finalize')
  write (*, '(a,i0)') 'PASS ft_msg rank ', me

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write (0, '(a,i0,2a)') 'FAIL ft_msg rank ', me, ': ', what
      call ARMCI_Error('ft_msg check failed' // c_null_char, 1)
    end if
  end subroutine check

end program ft_msg
