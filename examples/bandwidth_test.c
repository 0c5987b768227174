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

/* bandwidth_test: NVIDIA's cuda-samples bandwidthTest, moved onto gpumem.
 *
 * Where it comes from: Samples/1_Utilities/bandwidthTest/bandwidthTest.cu of
 * https://github.com/NVIDIA/cuda-samples at commit 685709bf (the last one that has it: the
 * repository removed it as out of date and points to NVIDIA's nvbandwidth for measurements),
 * BSD 3-Clause licence above (the repository's LICENSE).  The original measures the bandwidth
 * of host-to-device, device-to-host and device-to-device copies of 32 MB, 100 times each, from
 * pinned or pageable host memory, timed with events on the legacy default stream (pinned,
 * device to device) or with a CPU timer (pageable: each copy is synchronous and the CPU cache
 * is flushed between them).
 *
 * It has no kernel, so every call has its gpumem equivalent, one for one:
 *   cudaGetDeviceCount / cudaSetDevice / cudaGetDeviceProperties(name)
 *                             gpumem_device_count / gpumem_set_device / gpumem_device_get_info
 *   cudaHostAlloc(0 or cudaHostAllocWriteCombined) / cudaFreeHost
 *                             gpumem_host_alloc(0 or GPUMEM_HOST_WRITE_COMBINED) / gpumem_host_free
 *   cudaMalloc / cudaFree     gpumem_malloc / gpumem_free
 *   cudaMemcpy(kind)          gpumem_memcpy (the direction from the pointers)
 *   cudaMemcpyAsync(..., 0)   gpumem_memcpy_async(..., NULL): NULL is the default stream
 *   cudaEventCreate/Record/ElapsedTime/Destroy, cudaDeviceSynchronize
 *                             gpumem_event_*, gpumem_device_synchronize
 *   sdkStartTimer/StopTimer (helper_timer.h)   clock_gettime(CLOCK_MONOTONIC)
 * Added: every measurement checks what it copied (the original checks nothing), says so on a
 * mismatch and ends with "Result = FAIL"; --size and --iterations make the quick mode's copies
 * smaller and fewer, so that it runs in seconds where the "device" is the CPU (the host backend).
 * Left out: the shmoo mode (range mode measures any list of sizes), the compute-mode check
 * (gpumem reports no compute mode; a device that forbids contexts refuses the first call that
 * needs one, and CHECK says so) and two 16 MB buffers the original fills and never reads.
 * With no arguments the output is the original's, line for line.
 *
 * Usage: bandwidth_test [--help] [--csv] [--device=N|all] [--memory=pinned|pageable]
 *                       [--mode=quick|range] [--htod] [--dtoh] [--dtod] [--wc] [--cputiming]
 *                       [--start=B --end=B --increment=B] [--size=B] [--iterations=N]
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const char *sSDKsample = "CUDA Bandwidth Test";

// defines, project
#define MEMCOPY_ITERATIONS 100
#define DEFAULT_SIZE       (32 * (1e6)) // 32 M
#define DEFAULT_INCREMENT  (4 * (1e6))  // 4 M

// CPU cache flush
#define FLUSH_SIZE (256 * 1024 * 1024)
static char *flush_buf;

// enums, project
typedef enum { QUICK_MODE, RANGE_MODE } testMode;
typedef enum { DEVICE_TO_HOST, HOST_TO_DEVICE, DEVICE_TO_DEVICE } memcpyKind;
typedef enum { USER_READABLE, CSV } printMode;
typedef enum { PINNED, PAGEABLE } memoryMode;

static const char *sMemoryCopyKind[] = {"Device to Host", "Host to Device", "Device to Device", NULL};

static const char *sMemoryMode[] = {"PINNED", "PAGEABLE", NULL};

// if true, use CPU based timing for everything
static bool bDontUseGPUTiming;

// Copies per measurement (MEMCOPY_ITERATIONS unless --iterations says otherwise).
static unsigned int memcopyIterations = MEMCOPY_ITERATIONS;

// Cleared when a copy did not deliver what it was given.
static bool bDataOK = true;

/* The command line as helper_string.h reads it: "-name" or "--name", a value after '='. */
static const char *findArgument(int argc, const char **argv, const char *name)
{
    const size_t len = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        while (*a == '-')
            a++;
        if (a != argv[i] && strncmp(a, name, len) == 0 && (a[len] == '\0' || a[len] == '='))
            return a + len;
    }
    return NULL;
}

static bool checkCmdLineFlag(int argc, const char **argv, const char *name)
{
    return findArgument(argc, argv, name) != NULL;
}

static bool getCmdLineArgumentString(int argc, const char **argv, const char *name, const char **value)
{
    const char *a = findArgument(argc, argv, name);
    if (a == NULL || *a != '=')
        return false;
    *value = a + 1;
    return true;
}

static int getCmdLineArgumentInt(int argc, const char **argv, const char *name)
{
    const char *value = NULL;
    return getCmdLineArgumentString(argc, argv, name, &value) ? atoi(value) : 0;
}

static double nowMs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Says whether `got` holds the pattern the measurement copied; prints the first difference. */
static void checkCopy(const char *what, const unsigned char *expected, const unsigned char *got, unsigned int memSize)
{
    for (unsigned int i = 0; i < memSize; i++)
        if (expected[i] != got[i]) {
            printf("%s of %u bytes: byte %u is %u, expected %u\n", what, memSize, i, got[i], expected[i]);
            bDataOK = false;
            return;
        }
}

/* Bytes per second as the original reports them, from the bytes moved and the time they took.
 * A backend whose timer saw no time pass (a tiny copy on the host) gives no rate. */
static float toGBs(double bytes, float elapsedTimeInMs)
{
    double time_s = elapsedTimeInMs / 1e3;
    return time_s > 0 ? (float)(bytes / 1e9 / time_s) : 0.0f;
}

static void allocHost(unsigned char **p, unsigned int memSize, memoryMode memMode, bool wc)
{
    if (PINNED == memMode) {
        // pinned memory mode - use special function to get OS-pinned memory
        CHECK(gpumem_host_alloc((void **)p, memSize, wc ? GPUMEM_HOST_WRITE_COMBINED : 0));
    }
    else {
        // pageable memory mode - use malloc
        *p = (unsigned char *)malloc(memSize);
        EXPECT(*p != NULL, "Not enough memory available on host to run test!");
    }
}

static void freeHost(unsigned char *p, memoryMode memMode)
{
    if (PINNED == memMode)
        CHECK(gpumem_host_free(p));
    else
        free(p);
}

/* The copies of one measurement, timed: with events around async copies on the default stream
 * (pinned memory) or with the CPU timer around each synchronous copy, the CPU cache flushed in
 * between (pageable memory, whose copies the driver stages through its own buffers). */
static float timeCopies(unsigned char *dst, const unsigned char *src, unsigned int memSize, memoryMode memMode)
{
    float elapsedTimeInMs = 0.0f;
    if (PINNED == memMode) {
        gpumem_event_t start, stop;
        CHECK(gpumem_event_create(&start));
        CHECK(gpumem_event_create(&stop));
        double cpuStart = nowMs();
        CHECK(gpumem_event_record(start, NULL));
        for (unsigned int i = 0; i < memcopyIterations; i++)
            CHECK(gpumem_memcpy_async(dst, src, memSize, NULL));
        CHECK(gpumem_event_record(stop, NULL));
        CHECK(gpumem_device_synchronize());
        CHECK(gpumem_event_elapsed_ms(&elapsedTimeInMs, start, stop));
        if (bDontUseGPUTiming)
            elapsedTimeInMs = (float)(nowMs() - cpuStart);
        CHECK(gpumem_event_destroy(stop));
        CHECK(gpumem_event_destroy(start));
    }
    else {
        for (unsigned int i = 0; i < memcopyIterations; i++) {
            double cpuStart = nowMs();
            CHECK(gpumem_memcpy(dst, src, memSize));
            elapsedTimeInMs += (float)(nowMs() - cpuStart);
            memset(flush_buf, (int)i, FLUSH_SIZE);
        }
    }
    return elapsedTimeInMs;
}

///////////////////////////////////////////////////////////////////////////////
//  test the bandwidth of a device to host memcopy of a specific size
///////////////////////////////////////////////////////////////////////////////
static float testDeviceToHostTransfer(unsigned int memSize, memoryMode memMode, bool wc)
{
    unsigned char *h_idata = NULL, *h_odata = NULL;
    allocHost(&h_idata, memSize, memMode, wc);
    allocHost(&h_odata, memSize, memMode, wc);

    // initialize the memory
    for (unsigned int i = 0; i < memSize; i++)
        h_idata[i] = (unsigned char)(i & 0xff);
    memset(h_odata, 0, memSize);

    // allocate device memory
    unsigned char *d_idata;
    CHECK(gpumem_malloc((void **)&d_idata, memSize));

    // initialize the device memory
    CHECK(gpumem_memcpy(d_idata, h_idata, memSize));

    // copy data from GPU to Host
    float elapsedTimeInMs = timeCopies(h_odata, d_idata, memSize, memMode);
    checkCopy("Device to Host", h_idata, h_odata, memSize);

    // calculate bandwidth in GB/s
    float bandwidthInGBs = toGBs((double)memSize * memcopyIterations, elapsedTimeInMs);

    freeHost(h_idata, memMode);
    freeHost(h_odata, memMode);
    CHECK(gpumem_free(d_idata));
    return bandwidthInGBs;
}

///////////////////////////////////////////////////////////////////////////////
//! test the bandwidth of a host to device memcopy of a specific size
///////////////////////////////////////////////////////////////////////////////
static float testHostToDeviceTransfer(unsigned int memSize, memoryMode memMode, bool wc)
{
    unsigned char *h_odata = NULL;
    allocHost(&h_odata, memSize, memMode, wc);

    // initialize the memory
    for (unsigned int i = 0; i < memSize; i++)
        h_odata[i] = (unsigned char)(i & 0xff);

    // allocate device memory
    unsigned char *d_idata;
    CHECK(gpumem_malloc((void **)&d_idata, memSize));
    CHECK(gpumem_memset(d_idata, 0, memSize));

    // copy host memory to device memory
    float elapsedTimeInMs = timeCopies(d_idata, h_odata, memSize, memMode);

    // read what arrived back through plain memory
    unsigned char *h_check = (unsigned char *)malloc(memSize);
    EXPECT(h_check != NULL, "Not enough memory available on host to run test!");
    CHECK(gpumem_memcpy(h_check, d_idata, memSize));
    checkCopy("Host to Device", h_odata, h_check, memSize);
    free(h_check);

    // calculate bandwidth in GB/s
    float bandwidthInGBs = toGBs((double)memSize * memcopyIterations, elapsedTimeInMs);

    freeHost(h_odata, memMode);
    CHECK(gpumem_free(d_idata));
    return bandwidthInGBs;
}

///////////////////////////////////////////////////////////////////////////////
//! test the bandwidth of a device to device memcopy of a specific size
///////////////////////////////////////////////////////////////////////////////
static float testDeviceToDeviceTransfer(unsigned int memSize)
{
    // allocate host memory
    unsigned char *h_idata = (unsigned char *)malloc(memSize);
    EXPECT(h_idata != NULL, "Not enough memory available on host to run test!");

    // initialize the host memory
    for (unsigned int i = 0; i < memSize; i++)
        h_idata[i] = (unsigned char)(i & 0xff);

    // allocate device memory
    unsigned char *d_idata, *d_odata;
    CHECK(gpumem_malloc((void **)&d_idata, memSize));
    CHECK(gpumem_malloc((void **)&d_odata, memSize));

    // initialize memory
    CHECK(gpumem_memcpy(d_idata, h_idata, memSize));
    CHECK(gpumem_memset(d_odata, 0, memSize));

    gpumem_event_t start, stop;
    CHECK(gpumem_event_create(&start));
    CHECK(gpumem_event_create(&stop));

    // run the memcopy
    double cpuStart = nowMs();
    CHECK(gpumem_event_record(start, NULL));
    for (unsigned int i = 0; i < memcopyIterations; i++)
        CHECK(gpumem_memcpy(d_odata, d_idata, memSize));
    CHECK(gpumem_event_record(stop, NULL));

    // A device-to-device copy may return before it is done (CUDA's do): wait for the
    // copies before reading the time.
    CHECK(gpumem_device_synchronize());

    // get the total elapsed time in ms
    float elapsedTimeInMs = 0.0f;
    CHECK(gpumem_event_elapsed_ms(&elapsedTimeInMs, start, stop));
    if (bDontUseGPUTiming)
        elapsedTimeInMs = (float)(nowMs() - cpuStart);

    unsigned char *h_check = (unsigned char *)malloc(memSize);
    EXPECT(h_check != NULL, "Not enough memory available on host to run test!");
    CHECK(gpumem_memcpy(h_check, d_odata, memSize));
    checkCopy("Device to Device", h_idata, h_check, memSize);
    free(h_check);

    // calculate bandwidth in GB/s: each byte is read once and written once
    float bandwidthInGBs = toGBs(2.0 * memSize * memcopyIterations, elapsedTimeInMs);

    free(h_idata);
    CHECK(gpumem_event_destroy(stop));
    CHECK(gpumem_event_destroy(start));
    CHECK(gpumem_free(d_idata));
    CHECK(gpumem_free(d_odata));
    return bandwidthInGBs;
}

/////////////////////////////////////////////////////////
// print results in an easily read format
////////////////////////////////////////////////////////
static void printResultsReadable(const unsigned int *memSizes, const double *bandwidths, unsigned int count,
                                 memcpyKind kind, memoryMode memMode, int iNumDevs, bool wc)
{
    printf(" %s Bandwidth, %i Device(s)\n", sMemoryCopyKind[kind], iNumDevs);
    printf(" %s Memory Transfers\n", sMemoryMode[memMode]);

    if (wc) {
        printf(" Write-Combined Memory Writes are Enabled");
    }

    printf("   Transfer Size (Bytes)\tBandwidth(GB/s)\n");
    unsigned int i;

    for (i = 0; i < (count - 1); i++) {
        printf("   %u\t\t\t%s%.1f\n", memSizes[i], (memSizes[i] < 10000) ? "\t" : "", bandwidths[i]);
    }

    printf("   %u\t\t\t%s%.1f\n\n", memSizes[i], (memSizes[i] < 10000) ? "\t" : "", bandwidths[i]);
}

///////////////////////////////////////////////////////////////////////////
// print results in a database format
///////////////////////////////////////////////////////////////////////////
static void printResultsCSV(const unsigned int *memSizes, const double *bandwidths, unsigned int count,
                            memcpyKind kind, memoryMode memMode, int iNumDevs, bool wc)
{
    // log config information
    const char *sConfig;
    if (kind == DEVICE_TO_DEVICE)
        sConfig = "D2D";
    else if (memMode == PAGEABLE)
        sConfig = kind == DEVICE_TO_HOST ? "D2H-Paged" : "H2D-Paged";
    else if (wc)
        sConfig = kind == DEVICE_TO_HOST ? "D2H-Pinned-WriteCombined" : "H2D-Pinned-WriteCombined";
    else
        sConfig = kind == DEVICE_TO_HOST ? "D2H-Pinned" : "H2D-Pinned";

    for (unsigned int i = 0; i < count; i++) {
        double dSeconds = bandwidths[i] > 0 ? (double)memSizes[i] / (bandwidths[i] * (double)(1e9)) : 0.0;
        printf("bandwidthTest-%s, Bandwidth = %.1f GB/s, Time = %.5f s, Size = %u "
               "bytes, NumDevsUsed = %d\n",
               sConfig, bandwidths[i], dSeconds, memSizes[i], iNumDevs);
    }
}

///////////////////////////////////////////////////////////////////////
//  Run a range mode bandwidth test (quick mode: a range of one size)
//////////////////////////////////////////////////////////////////////
static void testBandwidthRange(unsigned int start, unsigned int end, unsigned int increment, memcpyKind kind,
                               printMode printmode, memoryMode memMode, int startDevice, int endDevice, bool wc)
{
    // count the number of copies we're going to run
    unsigned int count = 1 + ((end - start) / increment);

    unsigned int *memSizes = (unsigned int *)malloc(count * sizeof(unsigned int));
    double *bandwidths = (double *)calloc(count, sizeof(double));
    EXPECT(memSizes && bandwidths, "host memory for %u results", count);

    // Use the device asked by the user
    for (int currentDevice = startDevice; currentDevice <= endDevice; currentDevice++) {
        CHECK(gpumem_set_device(currentDevice));

        // run each of the copies
        for (unsigned int i = 0; i < count; i++) {
            memSizes[i] = start + i * increment;

            switch (kind) {
            case DEVICE_TO_HOST:
                bandwidths[i] += testDeviceToHostTransfer(memSizes[i], memMode, wc);
                break;

            case HOST_TO_DEVICE:
                bandwidths[i] += testHostToDeviceTransfer(memSizes[i], memMode, wc);
                break;

            case DEVICE_TO_DEVICE:
                bandwidths[i] += testDeviceToDeviceTransfer(memSizes[i]);
                break;
            }
        }
    } // Complete the bandwidth computation on all the devices

    // print results
    if (printmode == CSV) {
        printResultsCSV(memSizes, bandwidths, count, kind, memMode, (1 + endDevice - startDevice), wc);
    }
    else {
        printResultsReadable(memSizes, bandwidths, count, kind, memMode, (1 + endDevice - startDevice), wc);
    }

    free(memSizes);
    free(bandwidths);
}

///////////////////////////////////////////////////////////////////////////
// Print help screen
///////////////////////////////////////////////////////////////////////////
static void printHelp(void)
{
    printf("Usage:  bandwidth_test [OPTION]...\n");
    printf("Test the bandwidth for device to host, host to device, and device to "
           "device transfers\n");
    printf("\n");
    printf("Example:  measure the bandwidth of device to host pinned memory copies "
           "in the range 1024 Bytes to 102400 Bytes in 1024 Byte increments\n");
    printf("./bandwidth_test --memory=pinned --mode=range --start=1024 --end=102400 "
           "--increment=1024 --dtoh\n");

    printf("\n");
    printf("Options:\n");
    printf("--help\tDisplay this help menu\n");
    printf("--csv\tPrint results as a CSV\n");
    printf("--device=[deviceno]\tSpecify the device device to be used\n");
    printf("  all - compute cumulative bandwidth on all the devices\n");
    printf("  0,1,2,...,n - Specify any particular device to be used\n");
    printf("--memory=[MEMMODE]\tSpecify which memory mode to use\n");
    printf("  pageable - pageable memory\n");
    printf("  pinned   - non-pageable system memory\n");
    printf("--mode=[MODE]\tSpecify the mode to use\n");
    printf("  quick - performs a quick measurement\n");
    printf("  range - measures a user-specified range of values\n");

    printf("--htod\tMeasure host to device transfers\n");
    printf("--dtoh\tMeasure device to host transfers\n");
    printf("--dtod\tMeasure device to device transfers\n");
    printf("--wc\tAllocate pinned memory as write-combined\n");
    printf("--cputiming\tForce CPU-based timing always\n");

    printf("Range mode options\n");
    printf("--start=[SIZE]\tStarting transfer size in bytes\n");
    printf("--end=[SIZE]\tEnding transfer size in bytes\n");
    printf("--increment=[SIZE]\tIncrement size in bytes\n");

    printf("Quick mode options (gpumem's port)\n");
    printf("--size=[SIZE]\tTransfer size in bytes (32000000)\n");
    printf("--iterations=[N]\tCopies per measurement (100)\n");
}

///////////////////////////////////////////////////////////////////////////////
// Parse args, run the appropriate tests
///////////////////////////////////////////////////////////////////////////////
static int runTest(const int argc, const char **argv)
{
    int start = (int)DEFAULT_SIZE;
    int end = (int)DEFAULT_SIZE;
    int startDevice = 0;
    int endDevice = 0;
    int increment = (int)DEFAULT_INCREMENT;
    testMode mode = QUICK_MODE;
    bool htod = false;
    bool dtoh = false;
    bool dtod = false;
    bool wc = false;
    const char *modeStr;
    const char *device = NULL;
    printMode printmode = USER_READABLE;
    const char *memModeStr = NULL;
    memoryMode memMode = PINNED;

    // process command line args
    if (checkCmdLineFlag(argc, argv, "help")) {
        printHelp();
        return 0;
    }

    if (checkCmdLineFlag(argc, argv, "csv")) {
        printmode = CSV;
    }

    if (getCmdLineArgumentString(argc, argv, "memory", &memModeStr)) {
        if (strcmp(memModeStr, "pageable") == 0) {
            memMode = PAGEABLE;
        }
        else if (strcmp(memModeStr, "pinned") == 0) {
            memMode = PINNED;
        }
        else {
            printf("Invalid memory mode - valid modes are pageable or pinned\n");
            printf("See --help for more information\n");
            return -1000;
        }
    }

    if (getCmdLineArgumentString(argc, argv, "device", &device)) {
        int32_t deviceCount = 0;
        CHECK(gpumem_device_count(&deviceCount));

        if (deviceCount == 0) {
            printf("!!!!!No devices found!!!!!\n");
            return -2000;
        }

        if (strcmp(device, "all") == 0) {
            printf("\n!!!!!Cumulative Bandwidth to be computed from all the devices "
                   "!!!!!!\n\n");
            startDevice = 0;
            endDevice = deviceCount - 1;
        }
        else {
            startDevice = endDevice = atoi(device);

            if (startDevice >= deviceCount || startDevice < 0) {
                printf("\n!!!!!Invalid GPU number %d given hence default gpu %d will be "
                       "used !!!!!\n",
                       startDevice, 0);
                startDevice = endDevice = 0;
            }
        }
    }

    printf("Running on...\n\n");

    for (int currentDevice = startDevice; currentDevice <= endDevice; currentDevice++) {
        gpumem_device_info_t info = GPUMEM_DEVICE_INFO_INIT;
        CHECK(gpumem_device_get_info(currentDevice, &info));
        printf(" Device %d: %s\n", currentDevice, info.name);
    }

    if (getCmdLineArgumentString(argc, argv, "mode", &modeStr)) {
        // figure out the mode
        if (strcmp(modeStr, "quick") == 0) {
            printf(" Quick Mode\n\n");
            mode = QUICK_MODE;
        }
        else if (strcmp(modeStr, "range") == 0) {
            printf(" Range Mode\n\n");
            mode = RANGE_MODE;
        }
        else {
            printf("Invalid mode - valid modes are quick or range\n");
            printf("See --help for more information\n");
            return -3000;
        }
    }
    else {
        // default mode - quick
        printf(" Quick Mode\n\n");
        mode = QUICK_MODE;
    }

    if (checkCmdLineFlag(argc, argv, "htod")) {
        htod = true;
    }

    if (checkCmdLineFlag(argc, argv, "dtoh")) {
        dtoh = true;
    }

    if (checkCmdLineFlag(argc, argv, "dtod")) {
        dtod = true;
    }

    if (checkCmdLineFlag(argc, argv, "wc")) {
        wc = true;
    }

    if (checkCmdLineFlag(argc, argv, "cputiming")) {
        bDontUseGPUTiming = true;
    }

    if (!htod && !dtoh && !dtod) {
        // default:  All
        htod = true;
        dtoh = true;
        dtod = true;
    }

    if (RANGE_MODE == mode) {
        if (checkCmdLineFlag(argc, argv, "start")) {
            start = getCmdLineArgumentInt(argc, argv, "start");

            if (start <= 0) {
                printf("Illegal argument - start must be greater than zero\n");
                return -4000;
            }
        }
        else {
            printf("Must specify a starting size in range mode\n");
            printf("See --help for more information\n");
            return -5000;
        }

        if (checkCmdLineFlag(argc, argv, "end")) {
            end = getCmdLineArgumentInt(argc, argv, "end");

            if (end <= 0) {
                printf("Illegal argument - end must be greater than zero\n");
                return -6000;
            }

            if (start > end) {
                printf("Illegal argument - start is greater than end\n");
                return -7000;
            }
        }
        else {
            printf("Must specify an end size in range mode.\n");
            printf("See --help for more information\n");
            return -8000;
        }

        if (checkCmdLineFlag(argc, argv, "increment")) {
            increment = getCmdLineArgumentInt(argc, argv, "increment");

            if (increment <= 0) {
                printf("Illegal argument - increment must be greater than zero\n");
                return -9000;
            }
        }
        else {
            printf("Must specify an increment in user mode\n");
            printf("See --help for more information\n");
            return -10000;
        }
    }
    else if (checkCmdLineFlag(argc, argv, "size")) {
        start = end = getCmdLineArgumentInt(argc, argv, "size");

        if (start <= 0) {
            printf("Illegal argument - size must be greater than zero\n");
            return -11000;
        }
    }

    if (checkCmdLineFlag(argc, argv, "iterations")) {
        int iterations = getCmdLineArgumentInt(argc, argv, "iterations");

        if (iterations <= 0) {
            printf("Illegal argument - iterations must be greater than zero\n");
            return -12000;
        }
        memcopyIterations = (unsigned int)iterations;
    }

    // Only the pageable copies flush the CPU cache between them.
    if (PAGEABLE == memMode) {
        flush_buf = (char *)malloc(FLUSH_SIZE);
        EXPECT(flush_buf != NULL, "Not enough memory available on host to run test!");
    }

    if (htod) {
        testBandwidthRange((unsigned int)start, (unsigned int)end, (unsigned int)increment, HOST_TO_DEVICE,
                           printmode, memMode, startDevice, endDevice, wc);
    }

    if (dtoh) {
        testBandwidthRange((unsigned int)start, (unsigned int)end, (unsigned int)increment, DEVICE_TO_HOST,
                           printmode, memMode, startDevice, endDevice, wc);
    }

    if (dtod) {
        testBandwidthRange((unsigned int)start, (unsigned int)end, (unsigned int)increment, DEVICE_TO_DEVICE,
                           printmode, memMode, startDevice, endDevice, wc);
    }

    free(flush_buf);
    return bDataOK ? 0 : -13000;
}

////////////////////////////////////////////////////////////////////////////////
// Program main
////////////////////////////////////////////////////////////////////////////////
int main(int argc, char **argv)
{
    // set logfile name and start logs
    printf("[%s] - Starting...\n", sSDKsample);

    int iRetVal = runTest(argc, (const char **)argv);

    // finish
    printf("%s\n", (iRetVal == 0) ? "Result = PASS" : "Result = FAIL");

    printf("\nNOTE: The CUDA Samples are not meant for performance measurements. "
           "Results may vary when GPU Boost is enabled.\n");

    exit((iRetVal == 0) ? EXIT_SUCCESS : EXIT_FAILURE);
}
