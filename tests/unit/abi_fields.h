/* What a library compiled against ARMCI-MPI 0.3.1's headers bakes in:
 * sizes, offsets and constant values. Expanded once against Debian's
 * headers (abi_reference.c) and once against ours (test_abi.cpp). */
#define ABI_FIELDS(X)                                   \
  X(sizeof(armci_hdl_t))                                \
  X(sizeof(armci_giov_t))                               \
  X(offsetof(armci_giov_t, src_ptr_array))              \
  X(offsetof(armci_giov_t, dst_ptr_array))              \
  X(offsetof(armci_giov_t, bytes))                      \
  X(offsetof(armci_giov_t, ptr_array_len))              \
  X(sizeof(armci_size_t))                               \
  X(sizeof(ARMCI_Group))                                \
  X(offsetof(ARMCI_Group, comm))                        \
  X(sizeof(((ARMCI_Group *)0)->comm))                   \
  X(offsetof(ARMCI_Group, noncoll_pgroup_comm))         \
  X(offsetof(ARMCI_Group, grp_to_abs))                  \
  X(offsetof(ARMCI_Group, abs_to_grp))                  \
  X(offsetof(ARMCI_Group, rank))                        \
  X(offsetof(ARMCI_Group, size))                        \
  X(ARMCI_ACC_INT) X(ARMCI_ACC_LNG) X(ARMCI_ACC_FLT)    \
  X(ARMCI_ACC_DBL) X(ARMCI_ACC_CPL) X(ARMCI_ACC_DCP)    \
  X(ARMCI_FETCH_AND_ADD) X(ARMCI_FETCH_AND_ADD_LONG)    \
  X(ARMCI_SWAP) X(ARMCI_SWAP_LONG)                      \
  X(ARMCI_INT) X(ARMCI_LONG) X(ARMCI_LONG_LONG)         \
  X(ARMCI_FLOAT) X(ARMCI_DOUBLE)                        \
  X(SCOPE_ALL) X(SCOPE_NODE) X(SCOPE_MASTERS)           \
  X(ARMCI_DOMAIN_SMP)
