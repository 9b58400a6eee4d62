#!/usr/bin/python3
"""Write the example meshes under scenes/meshes/ (Wavefront OBJ, 1-based indices).

usage: scripts/make_meshes.py [OUT_DIR]
icosphere.obj  unit radius, an icosahedron subdivided twice (162 vertices, 320 triangles)
cube.obj       unit cube centred at the origin, each face 4x4 quads (98 vertices, 192 triangles)
torus.obj      major radius 1, minor 0.35, 24 x 12 quads, about z
flag.obj       open 1 x 0.6 cloth in the xy plane, centred at the origin, 16 x 10 quads
The closed meshes are welded (shared vertices) with outward, counter-clockwise faces."""
import math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "# made by scripts/make_meshes.py"


def write_obj(path, what, verts, tris):
    with open(path, "w") as f:
        f.write(f"{HEADER}: {what}\n")
        f.write(f"# {len(verts)} vertices, {len(tris)} triangles\n")
        for v in verts:
            # repr is the shortest text that reads back as the same double
            f.write("v " + " ".join(repr(0.0 if c == 0 else c) for c in v) + "\n")
        for t in tris:
            f.write("f " + " ".join(str(i + 1) for i in t) + "\n")


def icosphere(subdivisions):
    p = (1 + math.sqrt(5)) / 2
    verts = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p),
             (0, -1, -p), (0, 1, -p), (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    tris = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
            (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
            (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]

    def unit(v):
        n = math.sqrt(sum(c * c for c in v))
        return tuple(c / n for c in v)

    verts = [unit(v) for v in verts]
    for _ in range(subdivisions):
        mid = {}

        def midpoint(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                mid[key] = len(verts)
                verts.append(unit(tuple((x + y) / 2 for x, y in zip(verts[a], verts[b]))))
            return mid[key]

        new = []
        for a, b, c in tris:
            ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        tris = new
    return verts, tris


def cube(n):
    """Unit cube, each face n x n quads; lattice points on the surface are the vertices."""
    index, verts = {}, []

    def vid(p):
        if p not in index:
            index[p] = len(verts)
            verts.append(tuple(c / n - 0.5 for c in p))
        return index[p]

    tris = []
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3  # e_b x e_c = e_a
        for side in (0, n):
            for u in range(n):
                for v in range(n):
                    def corner(du, dv):
                        p = [0, 0, 0]
                        p[a], p[b], p[c] = side, u + du, v + dv
                        return vid(tuple(p))
                    q = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)]
                    if side == 0:  # the normal must point along -e_a
                        q.reverse()
                    tris += [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
    return verts, tris


def torus(R, r, nu, nv):
    verts = []
    for i in range(nu):
        phi = 2 * math.pi * i / nu
        for j in range(nv):
            th = 2 * math.pi * j / nv
            verts.append(((R + r * math.cos(th)) * math.cos(phi),
                          (R + r * math.cos(th)) * math.sin(phi), r * math.sin(th)))
    tris = []
    for i in range(nu):
        for j in range(nv):
            a, b = i * nv + j, ((i + 1) % nu) * nv + j
            c, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
            tris += [(a, b, c), (a, c, d)]
    return verts, tris


def flag(w, h, nu, nv):
    """Alternating diagonals, so the cloth has no preferred shear direction."""
    verts = [(w * u / nu - w / 2, h * v / nv - h / 2, 0.0)
             for v in range(nv + 1) for u in range(nu + 1)]
    tris = []
    for v in range(nv):
        for u in range(nu):
            a = v * (nu + 1) + u
            b, c, d = a + 1, a + nu + 1, a + nu + 2
            tris += [(a, b, d), (a, d, c)] if (u + v) % 2 == 0 else [(a, b, c), (b, d, c)]
    return verts, tris


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "scenes", "meshes")
    os.makedirs(out, exist_ok=True)
    meshes = [("icosphere.obj", "unit icosphere, 2 subdivisions", icosphere(2)),
              ("cube.obj", "unit cube centred at the origin, 4x4 quads a face", cube(4)),
              ("torus.obj", "torus about z, major radius 1, minor 0.35", torus(1.0, 0.35, 24, 12)),
              ("flag.obj", "open 1 x 0.6 cloth in the xy plane, 16x10 quads",
               flag(1.0, 0.6, 16, 10))]
    for name, what, (verts, tris) in meshes:
        write_obj(os.path.join(out, name), what, verts, tris)
        print(f"{name}: {len(verts)} vertices, {len(tris)} triangles")


if __name__ == "__main__":
    main()
