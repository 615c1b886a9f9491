program hello
  use, intrinsic :: iso_c_binding
  use armci
  implicit none
  integer(c_int) :: me, nproc, right, rc
  type(c_ptr), allocatable :: base(:)
  integer(c_long), pointer :: mine
  integer(c_long), target :: got
  type(armci_hdl_t) :: handle

  rc = ARMCI_Init()
  me = armci_msg_me()
  nproc = armci_msg_nproc()
  allocate(base(nproc))
  rc = ARMCI_Malloc(base, 8_c_long) ! collective: base(r + 1) is rank r's part
  call c_f_pointer(base(me + 1), mine)
  mine = 100 + me
  call ARMCI_Barrier()

  right = mod(me + 1, nproc)
  call ARMCI_INIT_HANDLE(handle)
  rc = ARMCI_NbGet(base(right + 1), c_loc(got), 8, right, handle)
  ! ... compute here while the get travels ...
  rc = ARMCI_Wait(handle)
  print '(a,i0,a,i0,a,i0,a,i0)', 'rank ', me, ' of ', nproc, ' read ', got, ' from rank ', right

  call ARMCI_Barrier()
  rc = ARMCI_Free(base(me + 1))
  rc = ARMCI_Finalize()
  if (got /= 100 + right) error stop 1
end program hello
