/* Copyright (c) 2022, NVIDIA CORPORATION. All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or without
 * modification, are permitted provided that the following conditions
 * are met:
 *  * Redistributions of source code must retain the above copyright
 *    notice, this list of conditions and the following disclaimer.
 *  * Redistributions in binary form must reproduce the above copyright
 *    notice, this list of conditions and the following disclaimer in the
 *    documentation and/or other materials provided with the distribution.
 *  * Neither the name of NVIDIA CORPORATION nor the names of its
 *    contributors may be used to endorse or promote products derived
 *    from this software without specific prior written permission.
 *
 * THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS ``AS IS'' AND ANY
 * EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 * IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
 * PURPOSE ARE DISCLAIMED.  IN NO EVENT SHALL THE COPYRIGHT OWNER OR
 * CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
 * EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
 * PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
 * PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY
 * OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
 * (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
 * OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
 */

/* pitch_linear_shift: NVIDIA's cuda-samples simplePitchLinearTexture, moved onto gpumem.
 *
 * Where it comes from: Samples/0_Introduction/simplePitchLinearTexture/simplePitchLinearTexture.cu
 * of https://github.com/NVIDIA/cuda-samples (commit c94ff366), BSD 3-Clause licence above (the
 * repository's LICENSE).  The original shifts a 2048 x 2048 matrix of floats with wrap-around
 * (periodic boundaries) twice, with a texture over pitched memory and with one over a CUDA
 * array, each read by a kernel.
 *
 * What changed, so that it runs on every gpumem backend with no GPU compiler: the shift is made
 * of copies instead of a kernel, since a wrap-around shift is four rectangles moved (docs/porting.md,
 * "Samples moved onto gpumem").  Each call of the original has its gpumem equivalent:
 *   cudaMallocPitch           gpumem_malloc_pitch
 *   cudaMemcpy2D              gpumem_memcpy_2d (from pageable host memory, as in the original)
 *   cudaMemset2D              gpumem_memset_2d
 *   cudaEventCreate/Record/ElapsedTime/Synchronize   gpumem_event_*
 *   (added) two non-blocking streams with priorities, forked and joined by timing-free events,
 *   carrying the four rectangles as gpumem_memcpy_2d_async, and a host function in stream order
 *   counting the repetitions done (cudaStreamCreateWithPriority, cudaEventDisableTiming,
 *   cudaLaunchHostFunc)
 *   the CUDA array and its texture (out of gpumem's scope: docs/porting.md) became the same
 *   shift made of boxes, gpumem_memcpy_3d_async with positions (cudaMemcpy3DAsync)
 * The output keeps the original's lines; "array" is now "boxes", and the texture fetch rate a
 * copy rate.  The result is compared exactly (the original allowed 15% of mismatches).
 *
 * Usage: pitch_linear_shift [repetitions]   (100 by default, as the original)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define NUM_REPS 100 // number of repetitions performed

static const char *sSDKsample = "simplePitchLinearTexture";

// Auto-Verification Code
static int bTestResult = 1;

// The repetitions the host function saw done, in stream order.
static atomic_int g_reps_done;
static void count_rep(void *user)
{
    (void)user;
    atomic_fetch_add(&g_reps_done, 1);
}

// One rectangle of the shift: `w` x `h` elements from (sx, sy) of the input to (dx, dy) of the output.
typedef struct {
    size_t dx, dy, sx, sy, w, h;
} rect_t;

static int compareData(const float *reference, const float *data, size_t len)
{
    size_t error_count = 0;
    for (size_t i = 0; i < len; ++i)
        error_count += reference[i] != data[i];
    if (error_count)
        printf("%4.2f(%%) of bytes mismatched (count=%zu)\n", (float)error_count * 100 / (float)len, error_count);
    return error_count == 0;
}

static void runTest(int reps)
{
    // Set array size
    const size_t nx = 2048;
    const size_t ny = 2048;

    // Setup shifts applied to x and y data
    const size_t x_shift = 5;
    const size_t y_shift = 7;

    // The device the program runs on (findCudaDevice in the original).
    int32_t devID = 0, backend = 0;
    CHECK(gpumem_get_device(&devID));
    CHECK(gpumem_get_backend(&backend));
    gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
    CHECK(gpumem_device_get_info(devID, &info));
    printf("GPU Device %d: \"%s\" (gpumem backend %s; rows and boxes %s)\n\n", (int)devID, info.name,
           gpumem_backend_name(backend), info.rows == GPUMEM_SUPPORT_NATIVE ? "native" : "emulated");

    // Events for timing, and timing-free ones to fork and join the two streams.
    gpumem_event_t start, stop, fork, join;
    CHECK(gpumem_event_create(&start));
    CHECK(gpumem_event_create(&stop));
    CHECK(gpumem_event_create_with_flags(&fork, GPUMEM_EVENT_DISABLE_TIMING));
    CHECK(gpumem_event_create_with_flags(&join, GPUMEM_EVENT_DISABLE_TIMING));

    // Two non-blocking streams, the first the most urgent the device has.
    int32_t least = 0, greatest = 0;
    CHECK(gpumem_device_get_stream_priority_range(&least, &greatest, devID));
    gpumem_stream_t s1, s2;
    CHECK(gpumem_stream_create_with_flags(&s1, GPUMEM_STREAM_NON_BLOCKING, greatest));
    CHECK(gpumem_stream_create_with_flags(&s2, GPUMEM_STREAM_NON_BLOCKING, least));

    // Host allocation and initialization
    float *h_idata = (float *)malloc(sizeof(float) * nx * ny);
    float *h_odata = (float *)malloc(sizeof(float) * nx * ny);
    float *gold = (float *)malloc(sizeof(float) * nx * ny);
    EXPECT(h_idata && h_odata && gold, "host memory for three %zu x %zu matrices", nx, ny);

    for (size_t i = 0; i < nx * ny; ++i)
        h_idata[i] = (float)i;

    // Device memory allocation: pitch linear input and output data
    float *d_idataPL, *d_odata;
    size_t d_pitchBytes, d_opitchBytes;
    CHECK(gpumem_malloc_pitch((void **)&d_idataPL, &d_pitchBytes, nx * sizeof(float), ny));
    CHECK(gpumem_malloc_pitch((void **)&d_odata, &d_opitchBytes, nx * sizeof(float), ny));

    // Copy host data to device
    const size_t h_pitchBytes = nx * sizeof(float);
    CHECK(gpumem_memcpy_2d(d_idataPL, d_pitchBytes, h_idata, h_pitchBytes, nx * sizeof(float), ny));

    // Reference calculation
    for (size_t j = 0; j < ny; ++j) {
        size_t jshift = (j + y_shift) % ny;
        for (size_t i = 0; i < nx; ++i) {
            size_t ishift = (i + x_shift) % nx;
            gold[j * nx + i] = h_idata[jshift * nx + ishift];
        }
    }

    // The shift with wrap-around: out(i, j) = in((i + x_shift) % nx, (j + y_shift) % ny), as four rectangles.
    const rect_t parts[4] = {
        {0, 0, x_shift, y_shift, nx - x_shift, ny - y_shift},
        {nx - x_shift, 0, 0, y_shift, x_shift, ny - y_shift},
        {0, ny - y_shift, x_shift, 0, nx - x_shift, y_shift},
        {nx - x_shift, ny - y_shift, 0, 0, x_shift, y_shift},
    };

    // Run the pitch linear shift: rectangles 0 and 1 on s1, 2 and 3 on s2.
    CHECK(gpumem_memset_2d(d_odata, d_opitchBytes, 0, nx * sizeof(float), ny));
    atomic_store(&g_reps_done, 0);
    CHECK(gpumem_event_record(start, s1));
    CHECK(gpumem_event_record(fork, s1));
    CHECK(gpumem_stream_wait_event(s2, fork));
    for (int i = 0; i < reps; ++i) {
        for (int k = 0; k < 4; ++k) {
            const rect_t *r = &parts[k];
            CHECK(gpumem_memcpy_2d_async((char *)d_odata + r->dy * d_opitchBytes + r->dx * sizeof(float),
                                         d_opitchBytes,
                                         (const char *)d_idataPL + r->sy * d_pitchBytes + r->sx * sizeof(float),
                                         d_pitchBytes, r->w * sizeof(float), r->h, k < 2 ? s1 : s2));
        }
        CHECK(gpumem_launch_host_func(s1, count_rep, NULL));
    }
    CHECK(gpumem_event_record(join, s2));
    CHECK(gpumem_stream_wait_event(s1, join));
    CHECK(gpumem_event_record(stop, s1));
    CHECK(gpumem_event_synchronize(stop));
    float timePL;
    CHECK(gpumem_event_elapsed_ms(&timePL, start, stop));
    EXPECT(atomic_load(&g_reps_done) == reps, "the host function counted %d repetitions of %d",
           atomic_load(&g_reps_done), reps);

    // Check results
    CHECK(gpumem_memcpy_2d(h_odata, h_pitchBytes, d_odata, d_opitchBytes, nx * sizeof(float), ny));
    if (!compareData(gold, h_odata, nx * ny)) {
        printf("*** shiftPitchLinear failed ***\n");
        bTestResult = 0;
    }

    // Run the shift made of boxes (the original's CUDA array and texture): four 3-D copies with positions.
    CHECK(gpumem_memset_2d(d_odata, d_opitchBytes, 0, nx * sizeof(float), ny));
    CHECK(gpumem_event_record(start, NULL));
    for (int i = 0; i < reps; ++i)
        for (int k = 0; k < 4; ++k) {
            const rect_t *r = &parts[k];
            gpumem_memcpy3d_t box = GPUMEM_MEMCPY3D_INIT;
            box.src = d_idataPL;
            box.src_pitch = d_pitchBytes;
            box.src_height = ny;
            box.src_x = r->sx * sizeof(float);
            box.src_y = r->sy;
            box.dst = d_odata;
            box.dst_pitch = d_opitchBytes;
            box.dst_height = ny;
            box.dst_x = r->dx * sizeof(float);
            box.dst_y = r->dy;
            box.width = r->w * sizeof(float);
            box.height = r->h;
            box.depth = 1;
            CHECK(gpumem_memcpy_3d_async(&box, NULL));
        }
    CHECK(gpumem_event_record(stop, NULL));
    CHECK(gpumem_event_synchronize(stop));
    float timeArray;
    CHECK(gpumem_event_elapsed_ms(&timeArray, start, stop));

    // Check results
    CHECK(gpumem_memcpy_2d(h_odata, h_pitchBytes, d_odata, d_opitchBytes, nx * sizeof(float), ny));
    if (!compareData(gold, h_odata, nx * ny)) {
        printf("*** shiftArray failed ***\n");
        bTestResult = 0;
    }

    // (A device that runs them in no time gives no rate.)
    const float msPL = timePL > 0 ? timePL : 1e-6f, msArray = timeArray > 0 ? timeArray : 1e-6f;
    float bandwidthPL = 2.f * 1000.f * nx * ny * sizeof(float) / (1.e+9f) / (msPL / reps);
    float bandwidthArray = 2.f * 1000.f * nx * ny * sizeof(float) / (1.e+9f) / (msArray / reps);

    printf("\nBandwidth (GB/s) for pitch linear: %.2e; for boxes: %.2e\n", bandwidthPL, bandwidthArray);

    float fetchRatePL = nx * ny / 1.e+6f / (msPL / (1000.0f * reps));
    float fetchRateArray = nx * ny / 1.e+6f / (msArray / (1000.0f * reps));

    printf("\nCopy rate (Mpix/s) for pitch linear: "
           "%.2e; for boxes: %.2e\n\n",
           fetchRatePL, fetchRateArray);

    // Cleanup
    free(h_idata);
    free(h_odata);
    free(gold);

    CHECK(gpumem_free(d_idataPL));
    CHECK(gpumem_free(d_odata));
    CHECK(gpumem_stream_destroy(s1));
    CHECK(gpumem_stream_destroy(s2));
    CHECK(gpumem_event_destroy(start));
    CHECK(gpumem_event_destroy(stop));
    CHECK(gpumem_event_destroy(fork));
    CHECK(gpumem_event_destroy(join));
}

int main(int argc, char **argv)
{
    printf("%s starting...\n\n", sSDKsample);

    int reps = argc > 1 ? atoi(argv[1]) : NUM_REPS;
    EXPECT(reps > 0, "repetitions must be a positive number, not %s", argv[1]);
    runTest(reps);

    printf("%s completed, returned %s\n", sSDKsample, bTestResult ? "OK" : "ERROR!");
    exit(bTestResult ? EXIT_SUCCESS : EXIT_FAILURE);
}
