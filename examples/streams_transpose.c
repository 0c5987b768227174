// MIT License
//
// Copyright (c) 2015-2023 Advanced Micro Devices, Inc. All rights reserved.
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all
// copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
// SOFTWARE.

/* streams_transpose: AMD's rocm-examples HIP-Basic/streams, moved onto gpumem.
 *
 * Where it comes from: HIP-Basic/streams/main.hip of https://github.com/ROCm/rocm-examples
 * (commit 7dfb7d40), MIT licence above (the repository's LICENSE.md).  The original transposes
 * a 32 x 32 matrix of floats twice, on two streams at once: each stream copies the pinned input
 * to its own device buffer, runs its transpose kernel (one with static, one with dynamic shared
 * memory) and copies the result back to its own pinned output, and the host waits for the device.
 *
 * What changed, so that it runs on every gpumem backend with no GPU compiler: each kernel became
 * the same transpose made of 2-D copies, out(y, x) = in(x, y), one element wide.  A copy whose
 * source pitch is a row and whose destination pitch is one element turns a column into a row;
 * the first stream moves the input's columns to the output's rows, the second the input's rows
 * to the output's columns, so that the two streams still do the work two different ways.
 *   hipHostMalloc / hipHostFree      gpumem_host_alloc / gpumem_host_free
 *   hipMalloc / hipFree              gpumem_malloc / gpumem_free
 *   hipStreamCreate / Destroy        gpumem_stream_create / gpumem_stream_destroy
 *   hipMemcpyAsync                   gpumem_memcpy_async (the direction from the pointers)
 *   matrix_transpose_static_shared   32 gpumem_memcpy_2d_async, column to row (first stream)
 *   matrix_transpose_dynamic_shared  32 gpumem_memcpy_2d_async, row to column (second stream)
 *   hipDeviceSynchronize             gpumem_device_synchronize
 *   (added) a host function on each stream, after its copy back, that compares the pinned
 *   output with the transpose the CPU computes (hipLaunchHostFunc); the original checks nothing.
 * The output is the original's one line, "streams completed!"; a mismatch is reported instead,
 * with exit status 1.
 *
 * Usage: streams_transpose
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"

// Dimension of the input square matrix is width x width
#define WIDTH 32
#define SIZE (WIDTH * WIDTH)

// Number of streams to be used. It is 2 as this example demonstrates
// only two transposes and their management.
#define NUM_STREAMS 2

// What a stream's host function found in that stream's output, once the copy back was done.
typedef struct {
    const float *h_in;
    const float *h_out;
    atomic_int checked;    // 1 once the host function ran
    atomic_int mismatches; // elements that are not the transpose
} stream_check_t;

// Runs on the host in stream order, after the stream's copy back: reads the pinned output
// and counts the elements that differ from the transpose of the input.  It calls no gpumem.
static void check_transpose(void *user)
{
    stream_check_t *c = (stream_check_t *)user;
    int mismatches = 0;
    for (unsigned int y = 0; y < WIDTH; y++)
        for (unsigned int x = 0; x < WIDTH; x++)
            mismatches += c->h_out[y * WIDTH + x] != c->h_in[x * WIDTH + y];
    atomic_store(&c->mismatches, mismatches);
    atomic_store(&c->checked, 1);
}

// The transpose of one width x width matrix as 2-D copies of one element per row.
// by_columns: each column of `in` becomes a row of `out` (source pitch a row, destination pitch
// one element); otherwise each row of `in` becomes a column of `out` (the other way round).
static void transpose_async(float *out, const float *in, int by_columns, gpumem_stream_t stream)
{
    const size_t elem = sizeof(float), row = WIDTH * sizeof(float);
    for (unsigned int k = 0; k < WIDTH; k++) {
        if (by_columns)
            CHECK(gpumem_memcpy_2d_async(out + k * WIDTH, elem, in + k, row, elem, WIDTH, stream));
        else
            CHECK(gpumem_memcpy_2d_async(out + k, row, in + k * WIDTH, elem, elem, WIDTH, stream));
    }
}

static void deploy_multiple_stream(const float *h_in, float *h_transpose_matrix[NUM_STREAMS],
                                   stream_check_t checks[NUM_STREAMS])
{
    // Create streams
    gpumem_stream_t streams[NUM_STREAMS];
    for (int i = 0; i < NUM_STREAMS; i++)
        CHECK(gpumem_stream_create(&streams[i]));

    // Size in bytes for memory management
    const size_t size_in_bytes = sizeof(float) * SIZE;

    // Allocate device input and output memory
    float *d_in[NUM_STREAMS];
    float *d_transpose_matrix[NUM_STREAMS];
    for (int i = 0; i < NUM_STREAMS; i++) {
        CHECK(gpumem_malloc((void **)&d_in[i], size_in_bytes));
        CHECK(gpumem_malloc((void **)&d_transpose_matrix[i], size_in_bytes));
    }

    // The copy in and the transpose are on the same stream, so the transpose starts only once
    // the copy is done: no synchronisation is needed in between.  The input is pinned, so the
    // copies are really asynchronous.
    for (int i = 0; i < NUM_STREAMS; i++)
        CHECK(gpumem_memcpy_async(d_in[i], h_in, size_in_bytes, streams[i]));

    // The transpose on each stream, made two ways
    transpose_async(d_transpose_matrix[0], d_in[0], 1, streams[0]);
    transpose_async(d_transpose_matrix[1], d_in[1], 0, streams[1]);

    // Asynchronously copy the results from device to host, then check each in stream order
    for (int i = 0; i < NUM_STREAMS; i++) {
        CHECK(gpumem_memcpy_async(h_transpose_matrix[i], d_transpose_matrix[i], size_in_bytes, streams[i]));
        checks[i].h_in = h_in;
        checks[i].h_out = h_transpose_matrix[i];
        atomic_store(&checks[i].checked, 0);
        atomic_store(&checks[i].mismatches, 0);
        CHECK(gpumem_launch_host_func(streams[i], check_transpose, &checks[i]));
    }

    // Wait for all tasks in both the streams to complete on the device
    CHECK(gpumem_device_synchronize());

    // Destroy the streams
    for (int i = 0; i < NUM_STREAMS; i++)
        CHECK(gpumem_stream_destroy(streams[i]));

    // Free device memory
    for (int i = 0; i < NUM_STREAMS; i++) {
        CHECK(gpumem_free(d_in[i]));
        CHECK(gpumem_free(d_transpose_matrix[i]));
    }
}

int main(void)
{
    // Size in bytes for memory management
    const size_t size_in_bytes = sizeof(float) * SIZE;

    // Allocate host input and output memory as pinned memory, so that the memory copies
    // are performed asynchronously with gpumem_memcpy_async.
    float *h_in = NULL;
    CHECK(gpumem_host_alloc((void **)&h_in, size_in_bytes, 0));

    // Two streams, therefore two separate outputs, one for each stream.
    float *h_transpose_matrix[NUM_STREAMS];
    for (int i = 0; i < NUM_STREAMS; i++)
        CHECK(gpumem_host_alloc((void **)&h_transpose_matrix[i], size_in_bytes, 0));

    // Initialize the host input matrix
    for (unsigned int i = 0; i < SIZE; i++)
        h_in[i] = (float)i;

    static stream_check_t checks[NUM_STREAMS];
    deploy_multiple_stream(h_in, h_transpose_matrix, checks);

    int failed = 0;
    for (int i = 0; i < NUM_STREAMS; i++) {
        if (!atomic_load(&checks[i].checked)) {
            printf("stream %d: its host function did not run before the device was idle\n", i);
            failed = 1;
        }
        else if (atomic_load(&checks[i].mismatches) != 0) {
            printf("stream %d: %d of %d elements are not the transpose\n", i, atomic_load(&checks[i].mismatches),
                   SIZE);
            failed = 1;
        }
    }

    // Free host memory
    CHECK(gpumem_host_free(h_in));
    for (int i = 0; i < NUM_STREAMS; i++)
        CHECK(gpumem_host_free(h_transpose_matrix[i]));

    if (failed)
        return EXIT_FAILURE;
    printf("streams completed!\n");
    return EXIT_SUCCESS;
}
