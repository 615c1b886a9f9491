/* ARMCI-MPI 0.3.1's values (Debian's libarmci-mpi-dev headers, found in
 * /usr/include: this file is built without the project's include path). */
#include <stddef.h>

#include <armci.h>
#include <message.h>

#include "abi_fields.h"

#define ABI_VALUE(e) (long)(e),
#define ABI_NAME(e) #e,
const long armci_mpi_abi_values[] = {ABI_FIELDS(ABI_VALUE)};
const char *const armci_mpi_abi_names[] = {ABI_FIELDS(ABI_NAME)};
const int armci_mpi_abi_count = sizeof armci_mpi_abi_values / sizeof armci_mpi_abi_values[0];
