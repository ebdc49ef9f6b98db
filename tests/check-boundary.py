#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-boundary.py SOURCE_ROOT BUILD_ROOT - the library boundary, checked on the
built tree (docs/architecture.md, "Layers and what may include what"):

1. the functions declared in include/tiercache.h and include/tiercache-test.h are
   exactly the names listed in src/libtiercache.map, and exactly the functions
   libtiercache.so exports;
2. every object of a front end (the command, the plugin, the control library, the
   replay library, the benchmark programs, the integration test programs) calls only
   tc_ functions of tiercache.h, or of tiercache-test.h where the object is a test,
   a benchmark or one of the testing hooks listed in TEST_API_USERS (nm -u);
3. no source file of a front end includes a header of the library's inside
   (src/*.h, src/cache/, src/dev/).

Prints each violation with the file and the name, and exits 1 if there is any (0 when
all hold, 77 when nm is not installed).
"""
import glob
import os
import re
import shutil
import subprocess
import sys

FRONT_END_SRC = ["src/cli", "src/nbd", "src/ctl", "src/replay", "bench", "tests/integration"]
# Front-end sources that may use the test API: the benchmarks and test programs, and
# the testing hooks a server offers only when started with --testing.
TEST_API_USERS = [r"^bench/", r"^tests/", r"^src/cli/cmd_debug\.c$", r"^src/nbd/plugin\.c$",
                  r"^src/ctl/ctl(_ops)?\.c$",
                  # the replay abandons a cache whose requests never complete (a stall)
                  r"^src/replay/replay\.c$"]


def declared(path):
    """Function names declared at file scope in a header (comments and macros dropped)."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"^#.*$", "", text, flags=re.M)
    names = set()
    for m in re.finditer(r"\b(tc_[a-z0-9_]+)\s*\(", text):
        start = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start()),
                    text.rfind("{", 0, m.start()))
        before = text[start + 1:m.start()]
        if before.strip() and "typedef" not in before and "(" not in before \
                and "=" not in before:
            names.add(m.group(1))
    return names


def map_names(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    return set(re.findall(r"^\s*(tc_[a-z0-9_]+)\s*;", text, flags=re.M))


def nm(args, path):
    out = subprocess.run(["nm"] + args + [path], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit("check-boundary: nm %s: %s" % (path, out.stderr.strip()))
    return out.stdout.splitlines()


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    src, build = sys.argv[1], sys.argv[2]
    if not shutil.which("nm"):
        print("check-boundary: nm not installed; skipped")
        return 77
    bad = []
    public = declared(os.path.join(src, "include/tiercache.h"))
    test_api = declared(os.path.join(src, "include/tiercache-test.h"))
    both = public & test_api
    for n in sorted(both):
        bad.append("%s: declared in both tiercache.h and tiercache-test.h" % n)

    # 1. headers = map = exports
    listed = map_names(os.path.join(src, "src/libtiercache.map"))
    for n in sorted((public | test_api) - listed):
        bad.append("src/libtiercache.map: %s is declared in a public header but not listed" % n)
    for n in sorted(listed - (public | test_api)):
        bad.append("src/libtiercache.map: %s is listed but declared in no public header" % n)
    libs = sorted((f for f in glob.glob(os.path.join(build, "libtiercache.so*"))
                   if os.path.isfile(f) and not f.endswith(".p")), key=len)
    if not libs:
        raise SystemExit("check-boundary: no libtiercache.so* in %s" % build)
    so = libs[-1]   # the real file (libtiercache.so.X.Y.Z), not a link
    exported = set()
    for line in nm(["-D", "--defined-only"], so):
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtDdBbRr":
            exported.add(parts[2].split("@")[0])
    for n in sorted(listed - exported):
        bad.append("libtiercache.so: %s is listed in the map but not defined" % n)
    for n in sorted(e for e in exported - listed if e.startswith("tc_")):
        bad.append("libtiercache.so: exports %s, which no public header declares" % n)

    # 2. front-end objects call only the public API
    checked = 0
    for obj in glob.glob(os.path.join(build, "**", "*.o"), recursive=True):
        rel = os.path.relpath(obj, build)
        # meson names objects DIR/TARGET.p/FILE.c.o (the source's path, / as _, when
        # the source is in another folder); the folder of the target tells the part.
        target_dir = os.path.dirname(os.path.dirname(rel))
        if not any(target_dir == d or target_dir.startswith(d + "/") for d in FRONT_END_SRC):
            continue
        source = os.path.join(target_dir, os.path.basename(rel)[:-2])
        may_test = any(re.search(p, source) for p in TEST_API_USERS)
        checked += 1
        for line in nm(["-u"], obj):
            name = line.split()[-1]
            if not name.startswith("tc_"):
                continue
            if name in public or (may_test and name in test_api):
                continue
            where = "tiercache-test.h" if name in test_api else "no public header"
            bad.append("%s: calls %s (%s)" % (source, name, where))
    if checked == 0:
        bad.append("%s: no front-end objects found: is it a built tree?" % build)

    # 3. front-end sources include no header of the library's inside
    inside = set()
    for d in ["src", "src/cache", "src/dev"]:
        inside |= {os.path.basename(h) for h in glob.glob(os.path.join(src, d, "*.h"))}
    for d in FRONT_END_SRC:
        for f in glob.glob(os.path.join(src, d, "**", "*.[ch]"), recursive=True):
            for i, line in enumerate(open(f, errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m and os.path.basename(m.group(1)) in inside and \
                        not os.path.exists(os.path.join(os.path.dirname(f), m.group(1))):
                    bad.append("%s:%d: includes %s, a header of the library's inside"
                               % (os.path.relpath(f, src), i, m.group(1)))

    for b in bad:
        print("check-boundary: " + b)
    print("check-boundary: %d public and %d test functions, %d front-end objects, %s"
          % (len(public), len(test_api), checked, "%d violations" % len(bad) if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
