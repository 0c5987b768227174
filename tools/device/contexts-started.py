#!/usr/bin/env python3
"""Which GPUs run a primary context after gpumem starts and allocates on one device.

    GPUMEM_LIBRARY=BUILD/src/libgpumem.so PYTHONPATH=bindings/python \\
        python3 tools/device/contexts-started.py [DEVICE]

gpumem starts a device's context on first use only (docs/multi-gpu.md): after gpumem_init,
a pool allocation, a synchronisation and a snapshot on DEVICE (default 0), only DEVICE's
primary context may run.  Asks the driver (cuDevicePrimaryCtxGetState) before and after,
prints one line per device and the time gpumem_init took, and exits 1 if another device
was started.
"""
import ctypes
import sys
import time

import gpumem


def active(cuda, count):
    states = []
    for d in range(count):
        dev, flags, on = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(dev), d) != 0:
            raise SystemExit("cuDeviceGet(%d) failed" % d)
        if cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(on)) != 0:
            raise SystemExit("cuDevicePrimaryCtxGetState(%d) failed" % d)
        states.append(bool(on.value))
    return states


def main():
    device = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    cuda = ctypes.CDLL("libcuda.so.1")
    if cuda.cuInit(0) != 0:
        raise SystemExit("cuInit failed")
    count = ctypes.c_int()
    cuda.cuDeviceGetCount(ctypes.byref(count))
    before = active(cuda, count.value)
    t0 = time.perf_counter()
    gpumem.init()
    init_ms = (time.perf_counter() - t0) * 1e3
    after_init = active(cuda, count.value)
    gpumem.set_device(device)
    buf = gpumem.lib.gpumem_hook_malloc(None, 1 << 20, device)
    gpumem.lib.gpumem_hook_free(None, buf, device)
    gpumem.lib.gpumem_device_synchronize()
    gpumem.snapshot()
    after_use = active(cuda, count.value)
    gpumem.finalize()
    print("gpumem_init: %.1f ms" % init_ms)
    others = 0
    for d in range(count.value):
        print("device %d: context before %s, after init %s, after use of device %d %s"
              % (d, before[d], after_init[d], device, after_use[d]))
        others += d != device and after_use[d] and not before[d]
    print("contexts-started: %s" % ("PASS" if not others else "FAIL (%d other device(s) started)" % others))
    return 1 if others else 0


if __name__ == "__main__":
    sys.exit(main())
