! armci.f90: the Fortran interface of libarmci (`use armci`).
!
! Every routine is the C function of include/armci.h itself, reached through
! bind(C): no wrapper code runs between Fortran and the library, so the
! semantics and error messages are exactly those documented in armci.h.
!
! Addresses are type(c_ptr): local buffers are passed as c_loc(buf) (buf
! needs the target attribute); remote addresses come from the table filled
! by ARMCI_Malloc, moved within a remote array by armci_ptr_add.
! Integers are the C int (integer(c_int)) and armci_size_t is c_long, so the
! module does not depend on the default Fortran integer kind (-fdefault-integer-8
! builds work too).
module armci
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_int, c_long, c_long_long, c_float, c_double, c_ptr, c_char, c_intptr_t

  ! Data types of ARMCI_Acc (armci.h's values).
  integer(c_int), parameter :: ARMCI_ACC_INT = 0, ARMCI_ACC_LNG = 1, ARMCI_ACC_FLT = 2, &
                               ARMCI_ACC_DBL = 3, ARMCI_ACC_CPL = 4, ARMCI_ACC_DCP = 5
  ! Scopes and element types of the armci_msg_* calls (message.h's values),
  ! and the one domain of armci_domain_*.
  integer(c_int), parameter :: SCOPE_ALL = 0, SCOPE_NODE = 1, SCOPE_MASTERS = 2
  integer(c_int), parameter :: ARMCI_INT = 0, ARMCI_LONG = 1, ARMCI_LONG_LONG = 2, &
                               ARMCI_FLOAT = 3, ARMCI_DOUBLE = 4
  integer(c_int), parameter :: ARMCI_DOMAIN_SMP = 0
  ! Operations of ARMCI_Rmw.
  integer(c_int), parameter :: ARMCI_FETCH_AND_ADD = 0, ARMCI_FETCH_AND_ADD_LONG = 1, &
                               ARMCI_SWAP = 2, ARMCI_SWAP_LONG = 3

  ! The C armci_hdl_t (two ints, 8 bytes): opaque, initialise it with
  ! ARMCI_INIT_HANDLE before its first use.
  type, bind(C) :: armci_hdl_t
    integer(c_int), private :: request = -1
    integer(c_int), private :: tag = 0
  end type armci_hdl_t

  interface
    ! ---------------------------------------------------- start-up and shutdown
    integer(c_int) function ARMCI_Init() bind(C, name='ARMCI_Init')
      import :: c_int
    end function
    integer(c_int) function ARMCI_Initialized() bind(C, name='ARMCI_Initialized')
      import :: c_int
    end function
    integer(c_int) function ARMCI_Finalize() bind(C, name='ARMCI_Finalize')
      import :: c_int
    end function
    subroutine ARMCI_Cleanup() bind(C, name='ARMCI_Cleanup')
    end subroutine
    ! msg must end with c_null_char.
    subroutine ARMCI_Error(msg, code) bind(C, name='ARMCI_Error')
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: msg(*)
      integer(c_int), value :: code
    end subroutine

    ! ---------------------------------------------------------------- memory
    ! base_ptrs(1:nproc) receives every rank's base address (rank r at r+1).
    integer(c_int) function ARMCI_Malloc(base_ptrs, bytes) bind(C, name='ARMCI_Malloc')
      import :: c_int, c_long, c_ptr
      type(c_ptr), intent(out) :: base_ptrs(*)
      integer(c_long), value :: bytes
    end function
    integer(c_int) function ARMCI_Free(ptr) bind(C, name='ARMCI_Free')
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function
    type(c_ptr) function ARMCI_Malloc_local(bytes) bind(C, name='ARMCI_Malloc_local')
      import :: c_long, c_ptr
      integer(c_long), value :: bytes
    end function
    integer(c_int) function ARMCI_Free_local(ptr) bind(C, name='ARMCI_Free_local')
      import :: c_int, c_ptr
      type(c_ptr), value :: ptr
    end function

    ! ---------------------------------------------------------- contiguous
    integer(c_int) function ARMCI_Put(src, dst, bytes, proc) bind(C, name='ARMCI_Put')
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), value :: bytes, proc
    end function
    integer(c_int) function ARMCI_Get(src, dst, bytes, proc) bind(C, name='ARMCI_Get')
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), value :: bytes, proc
    end function
    ! scale: c_loc of one element of datatype.
    integer(c_int) function ARMCI_Acc(datatype, scale, src, dst, bytes, proc) bind(C, name='ARMCI_Acc')
      import :: c_int, c_ptr
      integer(c_int), value :: datatype
      type(c_ptr), value :: scale, src, dst
      integer(c_int), value :: bytes, proc
    end function

    ! ---------------------------------------------------------- nonblocking
    subroutine ARMCI_INIT_HANDLE(handle) bind(C, name='ARMCI_INIT_HANDLE')
      import :: armci_hdl_t
      type(armci_hdl_t), intent(inout) :: handle
    end subroutine
    subroutine ARMCI_SET_AGGREGATE_HANDLE(handle) bind(C, name='ARMCI_SET_AGGREGATE_HANDLE')
      import :: armci_hdl_t
      type(armci_hdl_t), intent(inout) :: handle
    end subroutine
    subroutine ARMCI_UNSET_AGGREGATE_HANDLE(handle) bind(C, name='ARMCI_UNSET_AGGREGATE_HANDLE')
      import :: armci_hdl_t
      type(armci_hdl_t), intent(inout) :: handle
    end subroutine
    ! An absent handle is C's NULL: an implicit handle, completed by
    ! ARMCI_WaitProc, ARMCI_WaitAll or ARMCI_Fence.
    integer(c_int) function ARMCI_NbPut(src, dst, bytes, proc, handle) bind(C, name='ARMCI_NbPut')
      import :: c_int, c_ptr, armci_hdl_t
      type(c_ptr), value :: src, dst
      integer(c_int), value :: bytes, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function
    integer(c_int) function ARMCI_NbGet(src, dst, bytes, proc, handle) bind(C, name='ARMCI_NbGet')
      import :: c_int, c_ptr, armci_hdl_t
      type(c_ptr), value :: src, dst
      integer(c_int), value :: bytes, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function
    integer(c_int) function ARMCI_NbAcc(datatype, scale, src, dst, bytes, proc, handle) &
        bind(C, name='ARMCI_NbAcc')
      import :: c_int, c_ptr, armci_hdl_t
      integer(c_int), value :: datatype
      type(c_ptr), value :: scale, src, dst
      integer(c_int), value :: bytes, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function
    integer(c_int) function ARMCI_Wait(handle) bind(C, name='ARMCI_Wait')
      import :: c_int, armci_hdl_t
      type(armci_hdl_t), intent(inout) :: handle
    end function
    ! 0: complete; 1: still in progress.
    integer(c_int) function ARMCI_Test(handle) bind(C, name='ARMCI_Test')
      import :: c_int, armci_hdl_t
      type(armci_hdl_t), intent(inout) :: handle
    end function
    integer(c_int) function ARMCI_WaitProc(proc) bind(C, name='ARMCI_WaitProc')
      import :: c_int
      integer(c_int), value :: proc
    end function
    integer(c_int) function ARMCI_WaitAll() bind(C, name='ARMCI_WaitAll')
      import :: c_int
    end function

    ! ------------------------------------------------------ synchronisation
    subroutine ARMCI_Fence(proc) bind(C, name='ARMCI_Fence')
      import :: c_int
      integer(c_int), value :: proc
    end subroutine
    subroutine ARMCI_AllFence() bind(C, name='ARMCI_AllFence')
    end subroutine
    subroutine ARMCI_Barrier() bind(C, name='ARMCI_Barrier')
    end subroutine

    ! ------------------------------------------------------------- strided
    ! ARMCI's layout: count(1) bytes per piece, count(i+1) blocks at level i,
    ! stride arrays in bytes (see armci.h).
    integer(c_int) function ARMCI_PutS(src, src_stride, dst, dst_stride, count, levels, proc) &
        bind(C, name='ARMCI_PutS')
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
    end function
    integer(c_int) function ARMCI_GetS(src, src_stride, dst, dst_stride, count, levels, proc) &
        bind(C, name='ARMCI_GetS')
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
    end function
    integer(c_int) function ARMCI_AccS(datatype, scale, src, src_stride, dst, dst_stride, count, levels, proc) &
        bind(C, name='ARMCI_AccS')
      import :: c_int, c_ptr
      integer(c_int), value :: datatype
      type(c_ptr), value :: scale, src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
    end function
    integer(c_int) function ARMCI_NbPutS(src, src_stride, dst, dst_stride, count, levels, proc, handle) &
        bind(C, name='ARMCI_NbPutS')
      import :: c_int, c_ptr, armci_hdl_t
      type(c_ptr), value :: src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function
    integer(c_int) function ARMCI_NbGetS(src, src_stride, dst, dst_stride, count, levels, proc, handle) &
        bind(C, name='ARMCI_NbGetS')
      import :: c_int, c_ptr, armci_hdl_t
      type(c_ptr), value :: src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function
    integer(c_int) function ARMCI_NbAccS(datatype, scale, src, src_stride, dst, dst_stride, count, levels, &
        proc, handle) bind(C, name='ARMCI_NbAccS')
      import :: c_int, c_ptr, armci_hdl_t
      integer(c_int), value :: datatype
      type(c_ptr), value :: scale, src, dst
      integer(c_int), intent(in) :: src_stride(*), dst_stride(*), count(*)
      integer(c_int), value :: levels, proc
      type(armci_hdl_t), intent(inout), optional :: handle
    end function

    ! ------------------------------------------------------- single values
    integer(c_int) function ARMCI_PutValueInt(src, dst, proc) bind(C, name='ARMCI_PutValueInt')
      import :: c_int, c_ptr
      integer(c_int), value :: src
      type(c_ptr), value :: dst
      integer(c_int), value :: proc
    end function
    integer(c_int) function ARMCI_PutValueLong(src, dst, proc) bind(C, name='ARMCI_PutValueLong')
      import :: c_int, c_long, c_ptr
      integer(c_long), value :: src
      type(c_ptr), value :: dst
      integer(c_int), value :: proc
    end function
    integer(c_int) function ARMCI_PutValueDouble(src, dst, proc) bind(C, name='ARMCI_PutValueDouble')
      import :: c_int, c_double, c_ptr
      real(c_double), value :: src
      type(c_ptr), value :: dst
      integer(c_int), value :: proc
    end function
    integer(c_int) function ARMCI_GetValueInt(src, proc) bind(C, name='ARMCI_GetValueInt')
      import :: c_int, c_ptr
      type(c_ptr), value :: src
      integer(c_int), value :: proc
    end function
    integer(c_long) function ARMCI_GetValueLong(src, proc) bind(C, name='ARMCI_GetValueLong')
      import :: c_int, c_long, c_ptr
      type(c_ptr), value :: src
      integer(c_int), value :: proc
    end function
    real(c_double) function ARMCI_GetValueDouble(src, proc) bind(C, name='ARMCI_GetValueDouble')
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: src
      integer(c_int), value :: proc
    end function

    ! -------------------------------------------------- atomics and mutexes
    ! ploc: c_loc of a local int (or long for the _LONG forms); prem: remote.
    integer(c_int) function ARMCI_Rmw(op, ploc, prem, value, proc) bind(C, name='ARMCI_Rmw')
      import :: c_int, c_ptr
      integer(c_int), value :: op
      type(c_ptr), value :: ploc, prem
      integer(c_int), value :: value, proc
    end function
    integer(c_int) function ARMCI_Create_mutexes(count) bind(C, name='ARMCI_Create_mutexes')
      import :: c_int
      integer(c_int), value :: count
    end function
    integer(c_int) function ARMCI_Destroy_mutexes() bind(C, name='ARMCI_Destroy_mutexes')
      import :: c_int
    end function
    subroutine ARMCI_Lock(mutex, proc) bind(C, name='ARMCI_Lock')
      import :: c_int
      integer(c_int), value :: mutex, proc
    end subroutine
    subroutine ARMCI_Unlock(mutex, proc) bind(C, name='ARMCI_Unlock')
      import :: c_int
      integer(c_int), value :: mutex, proc
    end subroutine
    integer(c_int) function armci_notify(proc) bind(C, name='armci_notify')
      import :: c_int
      integer(c_int), value :: proc
    end function
    ! pval: c_loc of an int, or c_null_ptr.
    integer(c_int) function armci_notify_wait(proc, pval) bind(C, name='armci_notify_wait')
      import :: c_int, c_ptr
      integer(c_int), value :: proc
      type(c_ptr), value :: pval
    end function
    integer(c_int) function ARMCI_Put_flag(src, dst, bytes, flag, value, proc) bind(C, name='ARMCI_Put_flag')
      import :: c_int, c_ptr
      type(c_ptr), value :: src, dst
      integer(c_int), value :: bytes
      type(c_ptr), value :: flag
      integer(c_int), value :: value, proc
    end function

    ! ------------------------------------------------------------- process
    integer(c_int) function ARMCI_Same_node(proc) bind(C, name='ARMCI_Same_node')
      import :: c_int
      integer(c_int), value :: proc
    end function
    integer(c_int) function armci_msg_me() bind(C, name='armci_msg_me')
      import :: c_int
    end function
    integer(c_int) function armci_msg_nproc() bind(C, name='armci_msg_nproc')
      import :: c_int
    end function
    subroutine armci_msg_barrier() bind(C, name='armci_msg_barrier')
    end subroutine
    ! Reductions over every rank, in place. op begins with one of '+', '*',
    ! 'max', 'min', 'absmax', 'absmin', and for integers 'or', '&&', '||',
    ! '&', '|', 'land', 'lor', 'band', 'bor': the name is matched by its
    ! start, so a Fortran character argument needs no c_null_char.
    subroutine armci_msg_igop(x, n, op) bind(C, name='armci_msg_igop')
      import :: c_int, c_char
      integer(c_int), intent(inout) :: x(*)
      integer(c_int), value :: n
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    subroutine armci_msg_lgop(x, n, op) bind(C, name='armci_msg_lgop')
      import :: c_int, c_long, c_char
      integer(c_long), intent(inout) :: x(*)
      integer(c_int), value :: n
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    subroutine armci_msg_fgop(x, n, op) bind(C, name='armci_msg_fgop')
      import :: c_int, c_float, c_char
      real(c_float), intent(inout) :: x(*)
      integer(c_int), value :: n
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    subroutine armci_msg_dgop(x, n, op) bind(C, name='armci_msg_dgop')
      import :: c_int, c_double, c_char
      real(c_double), intent(inout) :: x(*)
      integer(c_int), value :: n
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    subroutine armci_msg_llgop(x, n, op) bind(C, name='armci_msg_llgop')
      import :: c_int, c_long_long, c_char
      integer(c_long_long), intent(inout) :: x(*)
      integer(c_int), value :: n
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    ! n elements of type (ARMCI_INT...) at x over scope (SCOPE_ALL...).
    subroutine armci_msg_gop_scope(scope, x, n, op, type) bind(C, name='armci_msg_gop_scope')
      import :: c_int, c_ptr, c_char
      integer(c_int), value :: scope, n, type
      type(c_ptr), value :: x
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    ! The n bytes at x of the contributing rank whose leading element of
    ! type is the 'max' or 'min' (ties: the lowest rank) replace every rank's.
    subroutine armci_msg_sel_scope(scope, x, n, op, type, contribute) bind(C, name='armci_msg_sel_scope')
      import :: c_int, c_ptr, c_char
      integer(c_int), value :: scope, n, type, contribute
      type(c_ptr), value :: x
      character(kind=c_char), intent(in) :: op(*)
    end subroutine
    ! Domains (nodes): id -1 is this rank's own.
    integer(c_int) function armci_domain_count(domain) bind(C, name='armci_domain_count')
      import :: c_int
      integer(c_int), value :: domain
    end function
    integer(c_int) function armci_domain_my_id(domain) bind(C, name='armci_domain_my_id')
      import :: c_int
      integer(c_int), value :: domain
    end function
    integer(c_int) function armci_domain_id(domain, proc) bind(C, name='armci_domain_id')
      import :: c_int
      integer(c_int), value :: domain, proc
    end function
    integer(c_int) function armci_domain_nprocs(domain, id) bind(C, name='armci_domain_nprocs')
      import :: c_int
      integer(c_int), value :: domain, id
    end function
    integer(c_int) function armci_domain_glob_proc_id(domain, id, loc_proc_id) &
        bind(C, name='armci_domain_glob_proc_id')
      import :: c_int
      integer(c_int), value :: domain, id, loc_proc_id
    end function
    ! len bytes from root's buffer to every rank's.
    subroutine armci_msg_bcast(buffer, len, root) bind(C, name='armci_msg_bcast')
      import :: c_ptr, c_int
      type(c_ptr), value :: buffer
      integer(c_int), value :: len, root
    end subroutine
  end interface

contains

  ! The address `bytes` bytes past p (for an element inside a remote array:
  ! C pointer arithmetic, which Fortran's c_ptr does not have).
  pure function armci_ptr_add(p, bytes) result(q)
    type(c_ptr), intent(in) :: p
    integer(c_intptr_t), intent(in) :: bytes
    type(c_ptr) :: q
    q = transfer(transfer(p, 0_c_intptr_t) + bytes, q)
  end function armci_ptr_add

end module armci
