/* Blow-up detection after a frame (src/solvers/health.c): the smallest particle id with a non-finite
 * position or velocity, or a speed above the bound. atomic_min on integers: the answer does
 * not depend on the order the work-items run in. */

kernel void health_scan(uint n, float max_speed, global const float4 *x,
                        global const float4 *v, global const uint *id, global uint *worst)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 p = x[i], u = v[i];
    bool finite = isfinite(p.x) && isfinite(p.y) && isfinite(p.z) && isfinite(u.x) &&
                  isfinite(u.y) && isfinite(u.z);
    /* hypot, not the squares: 1e30 m/s squared is no longer a float, and must still compare
     * as 1e30 against a bound such as 1e31. Only where a component passes half the bound: below
     * that the speed is at most 0.87 of it, and PoCL's hypot cost 2% of a DFSPH run. */
    float largest = fmax(fabs(u.x), fmax(fabs(u.y), fabs(u.z)));
    if (!finite || (largest > 0.5f * max_speed && hypot(hypot(u.x, u.y), u.z) > max_speed))
        atomic_min(worst, id[i]);
}

/* The particle health_scan found: position, velocity and body into out[0..8]. */
kernel void health_detail(uint n, global const float4 *x, global const float4 *v,
                          global const uint *id, global const uint *body,
                          global const uint *worst, global uint *out)
{
    uint i = get_global_id(0);
    if (i >= n || id[i] != worst[0])
        return;
    float4 p = x[i], u = v[i];
    out[0] = as_uint(p.x);
    out[1] = as_uint(p.y);
    out[2] = as_uint(p.z);
    out[3] = as_uint(u.x);
    out[4] = as_uint(u.y);
    out[5] = as_uint(u.z);
    out[6] = body[i];
}
