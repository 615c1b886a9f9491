/* The C side of the handle-layout check of ft_calls.f90: the size and field
 * offsets of armci_hdl_t as the C compiler lays it out. */
#include <armci.h>
#include <stddef.h>

int ft_c_hdl_size(void) { return (int)sizeof(armci_hdl_t); }
int ft_c_hdl_tag_offset(void) { return (int)offsetof(armci_hdl_t, tag); }
