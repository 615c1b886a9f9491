/* Built by a CMake project against the installed library: one process (no
 * launcher), a put to itself and a get back, checked byte for byte. */
#include <armci.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  ARMCI_Init_args(&argc, &argv);
  void *bases[1];
  if (ARMCI_Malloc(bases, 64) != 0) return 1;
  char src[64], back[64];
  for (int i = 0; i < 64; ++i) src[i] = (char)(i * 7 + 1);
  ARMCI_Put(src, bases[0], 64, 0);
  memset(back, 0, sizeof back);
  ARMCI_Get(bases[0], back, 64, 0);
  const int same = memcmp(src, back, sizeof src) == 0;
  ARMCI_Free(bases[0]);
  ARMCI_Finalize();
  printf("%s armci_cmake_user: put and get through the imported target\n", same ? "PASS" : "FAIL");
  return same ? 0 : 1;
}
