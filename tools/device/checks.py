"""What the device scripts written in Python share: each check prints one line, "PASS: ...",
"FAIL: ..." or "SKIP: ... (why)", and the script's last line and exit status say whether any
failed.

SPDX-License-Identifier: MIT
"""
FAILED = []


def report(ok, what):
    """Prints PASS or FAIL for `what`; a failure is remembered for verdict()."""
    print("%s: %s" % ("PASS" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILED.append(what)
    return ok


def skip(what, why):
    print("SKIP: %s (%s)" % (what, why), flush=True)


def verdict(name):
    """Prints "<name>: PASS" or "<name>: FAIL" and answers the exit status (0 or 1)."""
    print("%s: %s" % (name, "FAIL" if FAILED else "PASS"), flush=True)
    return 1 if FAILED else 0
