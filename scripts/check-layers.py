#!/usr/bin/env python3
"""Check that every #include in src/ and kernels/ points down the layer order of
docs/ARCHITECTURE.md, and that no file includes itself through others.

    src:     cli > io > solvers > dist > {build, device} > {scene, render} > util
    kernels: {sph, pbd, flip} > grid > common

A file may include headers of its own folder and of folders below its own; folders of one rank
(build and device; sph, pbd and flip) may not include each other. Inside src/solvers/, one
solver's folder may include the solver interface (src/solvers/*.h) but not another solver, and
the interface may not include a solver. A header whose opening comment starts "Inside F/:" may
be included only from folder F. Includes are written from the tree's root ("scene/scene.h"),
so the path says the layer.

Usage: scripts/check-layers.py [ROOT]   (ROOT: the repository, default: this script's parent)
       scripts/check-layers.py --self-test
Exit 0 when the tree keeps the rules, 1 (listing each break) when not.
"""
import os
import re
import sys
import tempfile

SRC_RANKS = {"util": 0, "scene": 1, "render": 1, "build": 2, "device": 2, "dist": 3, "solvers": 4,
             "io": 5,             "cli": 6}
KERNEL_RANKS = {"common": 0, "grid": 1, "sph": 2, "pbd": 2, "flip": 2}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
INSIDE = re.compile(r"^/\*\s*Inside ([a-z_/]+)/:")


def sources(root, tree, endings):
    for folder, _, files in sorted(os.walk(os.path.join(root, tree))):
        for f in sorted(files):
            if f.endswith(endings):
                path = os.path.join(folder, f)
                yield os.path.relpath(path, os.path.join(root, tree)).replace(os.sep, "/"), path


def parse(path):
    """The quoted includes of a file (line number, target), and its "Inside F/:" folder."""
    includes, inside = [], None
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if number == 1:
                m = INSIDE.match(line)
                inside = m.group(1) if m else None
            m = INCLUDE.match(line)
            if m:
                includes.append((number, m.group(1)))
    return includes, inside


def allowed(ranks, src, dst):
    """None when src may include dst (both paths under their tree), else the reason."""
    a, b = src.split("/"), dst.split("/")
    if len(a) < 2 or a[0] not in ranks:
        return "%s is not in a layer folder (%s)" % (src, ", ".join(sorted(ranks)))
    if len(b) < 2 or b[0] not in ranks:
        return "it names no layer folder (write the path from the tree's root, e.g. util/err.h)"
    if a[0] == b[0]:
        # one family's folder inside a layer (src/solvers/sph/): the layer's own top-level
        # headers are its interface; the families stay apart
        fam_a = a[1] if len(a) > 2 else None
        fam_b = b[1] if len(b) > 2 else None
        if fam_b is not None and fam_a != fam_b:
            where = "the interface" if fam_a is None else "%s/%s/" % (a[0], fam_a)
            return "%s includes the %s/%s/ family's header" % (where, b[0], fam_b)
        return None
    if ranks[b[0]] < ranks[a[0]]:
        return None
    if ranks[b[0]] == ranks[a[0]]:
        return "%s/ and %s/ are one rank: neither includes the other" % (a[0], b[0])
    return "%s/ is a layer above %s/" % (b[0], a[0])


def check(root):
    """A list of problems ("file:line: ..."), and counts for the summary."""
    problems, graph, n_files, n_includes = [], {}, 0, 0
    trees = (("src", (".c", ".h"), SRC_RANKS), ("kernels", (".cl", ".clh"), KERNEL_RANKS))
    for tree, endings, ranks in trees:
        files = dict(sources(root, tree, endings))
        parsed = {rel: parse(path) for rel, path in files.items()}
        for rel, (includes, _) in parsed.items():
            n_files += 1
            graph[tree + "/" + rel] = []
            for line, target in includes:
                n_includes += 1
                where = "%s/%s:%d: #include \"%s\"" % (tree, rel, line, target)
                if target not in files:
                    problems.append("%s: no such file under %s/" % (where, tree))
                    continue
                graph[tree + "/" + rel].append(tree + "/" + target)
                why = allowed(ranks, rel, target)
                inside = parsed[target][1]
                if why is None and inside and not rel.startswith(inside + "/"):
                    why = "%s is for use inside %s/ only" % (target, inside)
                if why:
                    problems.append("%s: %s" % (where, why))
    problems += ["include cycle: " + " -> ".join(c) for c in cycles(graph)]
    return problems, n_files, n_includes


def cycles(graph):
    """Each include cycle once, as the list of files around it."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def self_test():
    """The checker must catch each kind of break and pass a tree that keeps the rules."""
    good = {
        "src/util/err.h": "",
        "src/scene/scene.h": '#include "util/err.h"\n',
        "src/build/build.h": '#include "scene/scene.h"\n',
        "src/device/grid.h": '#include "util/err.h"\n',
        "src/solvers/sim.h": '#include "build/build.h"\n#include "device/grid.h"\n',
        "src/solvers/sph/sph.c": '#include "solvers/sim.h"\n#include "solvers/sph/sph.h"\n',
        "src/solvers/sph/sph.h": '#include "solvers/sim.h"\n',
        "src/solvers/flip/flip.h": '#include "solvers/sim.h"\n',
        "src/io/h5_file.h": "/* Inside io/: the handle. */\n#include \"solvers/sim.h\"\n",
        "src/io/h5_out.c": '#include "io/h5_file.h"\n',
        "src/cli/main.c": '#include "io/h5_out.h"\n#include "solvers/sim.h"\n',
        "src/io/h5_out.h": "",
        "kernels/common/common.clh": "",
        "kernels/grid/grid.clh": '#include "common/common.clh"\n',
        "kernels/sph/sph.cl": '#include "grid/grid.clh"\n#include "sph/k.clh"\n',
        "kernels/sph/k.clh": "",
    }
    bad = {
        "upward": ("src/scene/parse.c", '#include "build/build.h"\n', "a layer above"),
        "sibling": ("src/build/build.c", '#include "device/grid.h"\n', "one rank"),
        "family": ("src/solvers/sph/x.c", '#include "solvers/flip/flip.h"\n', "family"),
        "interface": ("src/solvers/sim.c", '#include "solvers/sph/sph.h"\n', "family"),
        "inside": ("src/cli/run.c", '#include "io/h5_file.h"\n', "inside io/ only"),
        "missing": ("src/cli/x.c", '#include "cli/nothere.h"\n', "no such file"),
        "bare name": ("src/cli/y.c", '#include "sim.h"\n', "no such file"),
        "no layer": ("src/misc.c", '#include "util/err.h"\n', "not in a layer folder"),
        "kernel up": ("kernels/common/walls.clh", '#include "grid/grid.clh"\n', "a layer above"),
        "kernel sibling": ("kernels/pbd/p.cl", '#include "sph/k.clh"\n', "one rank"),
        "cycle": ("src/util/a.h", '#include "util/b.h"\n', "include cycle"),
    }
    extra = {"cycle": {"src/util/b.h": '#include "util/a.h"\n'}}
    failures = []

    def run(files):
        with tempfile.TemporaryDirectory() as root:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w", encoding="utf-8") as fh:
                    fh.write(text)
            return check(root)[0]

    if run(good):
        failures.append("a tree that keeps the rules was refused: %s" % run(good))
    for name, (rel, text, expect) in bad.items():
        files = dict(good, **{rel: text}, **extra.get(name, {}))
        problems = run(files)
        if not any(expect in p for p in problems):
            failures.append("%s: expected a problem saying '%s', got %s" % (name, expect, problems))
    return failures


def main(argv):
    if argv[1:] == ["--self-test"]:
        failures = self_test()
        for f in failures:
            print("check-layers self-test: " + f)
        return 1 if failures else 0
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    failures = self_test()
    if failures:
        for f in failures:
            print("check-layers self-test: " + f)
        return 1
    problems, n_files, n_includes = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check-layers: %d include(s) break the layer order (docs/ARCHITECTURE.md, Layers)"
              % len(problems))
        return 1
    print("check-layers: %d files, %d includes, all down the layer order, no cycles"
          % (n_files, n_includes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
