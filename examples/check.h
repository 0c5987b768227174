/*
 * Shared by the examples: stop at the first failure, saying what failed.
 *
 * CHECK(call) runs a gpumem call and, unless it returns GPUMEM_SUCCESS,
 * prints the call, its status name and gpumem's own explanation
 * (gpumem_last_error_message: what was asked, what failed, what to do),
 * then exits with status 1.  A feature the device lacks, with its fallback
 * refused (GPUMEM_FALLBACK=deny), is GPUMEM_ERROR_NOT_SUPPORTED: the example
 * then says so and exits with 77, "skipped".  EXPECT(cond, fmt, ...) stops
 * with status 1 on a result that is not what it should be.
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
            fprintf(stderr, "%s:%d: %s %s: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    st_ == GPUMEM_ERROR_NOT_SUPPORTED ? "is not available here (skipped)" : "failed",   \
                    gpumem_status_string(st_), gpumem_last_error_message());                       \
            exit(st_ == GPUMEM_ERROR_NOT_SUPPORTED ? 77 : 1);                                      \
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
