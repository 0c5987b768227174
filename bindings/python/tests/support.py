"""Shared by the tests: the source tree and the feature switches of this run."""
import os
import unittest

import gpumem

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("GPUMEM_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DISABLED = {x.strip() for x in os.environ.get("GPUMEM_DISABLE", "").split(",") if x.strip()}

try:
    import numpy  # noqa: F401
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False


def source_file(*parts):
    p = os.path.join(SOURCE_ROOT, *parts)
    if not os.path.isfile(p):
        raise unittest.SkipTest("%s not found (set GPUMEM_SOURCE_ROOT)" % p)
    with open(p, encoding="utf-8") as f:
        return f.read()


class GpumemTestCase(unittest.TestCase):
    def assertStatus(self, status, fn, *args, **kw):
        with self.assertRaises(gpumem.GpumemError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.status, status, str(cm.exception))
        self.assertEqual(cm.exception.status_name, gpumem.STATUS_NAMES[status])
        return cm.exception
