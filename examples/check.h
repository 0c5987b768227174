/*
 * Shared by the examples: stop at the first failure, saying what failed.
 *
 * CHECK(call) runs a gpumem call and, unless it returns GPUMEM_SUCCESS,
 * prints the call, its status name and gpumem's own explanation
 * (gpumem_last_error_message: what was asked, what failed, what to do),
 * then exits with status 1.  EXPECT(cond, fmt, ...) does the same for a
 * result that is not what it should be.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GPUMEM_EXAMPLES_CHECK_H
#define GPUMEM_EXAMPLES_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <gpumem/gpumem.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        gpumem_status_t st_ = (call);                                                              \
        if (st_ != GPUMEM_SUCCESS) {                                                               \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,               \
                    gpumem_status_string(st_), gpumem_last_error_message());                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
