#!/usr/bin/env python3
"""What the CUDA driver does with cuMemPoolTrimTo(pool, UINT64_MAX): keep everything, or release it?

    python3 tools/device/pool-trim-probe.py

The device's default pool keeps what is freed (release threshold UINT64_MAX); 8 MiB is
allocated, freed and synchronised, then the pool is trimmed to UINT64_MAX, then to SIZE_MAX/2.
Prints the reserved bytes after each step.  The driver is loaded with ctypes; no gpumem code.
SPDX-License-Identifier: MIT
"""
import ctypes

cu = ctypes.CDLL("libcuda.so.1")
u64 = ctypes.c_uint64


def ok(r, what):
    if r != 0:
        raise SystemExit("%s failed: CUresult %d" % (what, r))


ok(cu.cuInit(0), "cuInit")
dev, ctx, pool = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
ok(cu.cuDeviceGetDefaultMemPool(ctypes.byref(pool), dev), "cuDeviceGetDefaultMemPool")
RELEASE_THRESHOLD, RESERVED_CURRENT = 4, 5
ok(cu.cuMemPoolSetAttribute(pool, RELEASE_THRESHOLD, ctypes.byref(u64(2**64 - 1))), "cuMemPoolSetAttribute")


def reserved():
    v = u64()
    ok(cu.cuMemPoolGetAttribute(pool, RESERVED_CURRENT, ctypes.byref(v)), "cuMemPoolGetAttribute")
    return v.value


p = ctypes.c_uint64()
ok(cu.cuMemAllocAsync(ctypes.byref(p), ctypes.c_size_t(8 << 20), None), "cuMemAllocAsync")
ok(cu.cuMemFreeAsync(p, None), "cuMemFreeAsync")
ok(cu.cuStreamSynchronize(None), "cuStreamSynchronize")
print("reserved after free and synchronize, threshold UINT64_MAX: %d" % reserved())
ok(cu.cuMemPoolTrimTo(pool, ctypes.c_size_t(2**63)), "cuMemPoolTrimTo(2^63)")
print("reserved after cuMemPoolTrimTo(pool, 2^63): %d" % reserved())
ok(cu.cuMemPoolTrimTo(pool, ctypes.c_size_t(2**64 - 1)), "cuMemPoolTrimTo(UINT64_MAX)")
print("reserved after cuMemPoolTrimTo(pool, UINT64_MAX): %d" % reserved())
