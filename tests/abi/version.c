/* Prints the header's version and the run-time library's, for check_versions.py.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>

#include <gpumem/gpumem.h>

int main(void)
{
    printf("header %d.%d.%d %d\n", GPUMEM_VERSION_MAJOR, GPUMEM_VERSION_MINOR, GPUMEM_VERSION_PATCH,
           GPUMEM_VERSION);
    printf("runtime %d\n", (int)gpumem_version());
    return 0;
}
