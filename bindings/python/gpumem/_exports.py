"""Zero-copy exports of a memory object, and the free that close() leaves to the last of them.

A NumPy array, a DLPack tensor or a memoryview made from gpumem memory points into it with no
reference the library knows of.  Freeing the memory under it would leave a view that crashes
the interpreter (the pages unmapped) or, worse, writes into the next allocation that reuses
them (the pinned cache hands the block back).  So each memory object counts what it exported,
and close() (or the end of a ``with`` block) frees at once only when nothing is exported; else
the object is closed (every use of it raises GpumemError) and the free runs when the last export
is released: the array collected, the consumer's DLPack deleter called, the memoryview released.

Counted: memoryviews (``as_memoryview``, ``as_numpy``, the buffer protocol), the buffer that
``__array_interface__`` gives NumPy (NumPy keeps it as the array's base), DLPack capsules
until their deleter runs, and ``CudaArrayView`` objects (CuPy and Numba keep them as the owner).

SPDX-License-Identifier: MIT
"""
import threading


class Exports:
    """The live exports of one memory object and the release waiting for them."""

    __slots__ = ("_lock", "_count", "_pending")

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0
        self._pending = None

    @property
    def count(self):
        """Exports not yet released."""
        return self._count

    def acquire(self):
        """One more export."""
        with self._lock:
            self._count += 1

    def release(self):
        """One export fewer; the last one runs the release close() left waiting.  Called from
        finalisers and DLPack deleters, so it never raises (the release reports its own errors)."""
        with self._lock:
            self._count -= 1
            run = self._pending if self._count == 0 else None
            if run is not None:
                self._pending = None
        if run is not None:
            try:
                run()
            except Exception:  # noqa: BLE001  (a finaliser or a C callback must not raise)
                pass

    def defer(self, run):
        """``run()`` later, at the last export's release, when exports are alive (True); False
        when there are none, and the caller releases now."""
        with self._lock:
            if self._count == 0:
                return False
            self._pending = run
            return True
