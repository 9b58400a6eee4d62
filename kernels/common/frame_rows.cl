/* A frame's fields in id order, as the output file's rows (src/solvers/frame_rows.c): particle i
 * (device order) to row id[i]. The ids of one process are a permutation of 0 .. n − 1, so every
 * row is written once; plain copies, the same bits as the host's reordering. */

kernel void rows_vec3(uint n, global const uint *id, global const float4 *src, ulong first,
                      global float *rows)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 v = src[i];
    global float *r = rows + first + 3 * (ulong)id[i];
    r[0] = v.x;
    r[1] = v.y;
    r[2] = v.z;
}

kernel void rows_scalar(uint n, global const uint *id, global const float *src, ulong first,
                        global float *rows)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    rows[first + id[i]] = src[i];
}
