/* `mizu compare`'s report: a table of the series compared and a verdict line that names the
 * first value that breaks the rule, or the same as one JSON object for machines. */
#include "cli/compare_result.h"
#include "util/err.h"

#include <cJSON.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static double rms(const mz_cmp_diff *df)
{
    return df->rows ? sqrt(df->sumsq / (double)df->rows) : 0;
}

static const char *component_name(int comps, int comp)
{
    static const char *const xyzw[] = {"x", "y", "z", "w"};
    static char buf[16];
    if (comp < 0)
        return "";
    if (comps <= 4)
        return xyzw[comp];
    snprintf(buf, sizeof buf, "[%d]", comp);
    return buf;
}

/* "velocity frame 2 particle 100 x: 0.1 vs 0.2 (|diff| 0.1 > tolerance 0.01)" */
static void describe_failure(mz_str *m, const mz_compare_opts *o, const char *name, bool rigid,
                             int comps, const mz_cmp_diff *df)
{
    str_addf(m, "%s frame %ld", name, df->frame);
    if (df->id >= 0)
        str_addf(m, " %s %lld", rigid ? "rigid body" : "particle", df->id);
    if (df->comp >= 0)
        str_addf(m, " %s", component_name(comps, df->comp));
    int digits = df->bytes == 4 ? 9 : 17; /* enough to tell any two floats (doubles) apart */
    str_addf(m, ": %.*g vs %.*g", digits, df->a, digits, df->b);
    double d = isnan(df->a) || isnan(df->b) ? NAN : fabs(df->a - df->b);
    if (o->tolerance)
        str_addf(m, " (|diff| %.3g > tolerance %.3g)", d, df->tol);
    else if (df->bytes)
        str_addf(m, " (|diff| %.3g; bits 0x%0*llx vs 0x%0*llx)", d,
                 2 * df->bytes, df->abits, 2 * df->bytes, df->bbits);
    else
        str_addf(m, " (|diff| %.3g)", d);
}

/* The earliest mismatch over every series: the earliest frame, the table's order in a tie. */
static void first_failure(const mz_cmp_result *r, mz_str *m)
{
    const mz_cmp_diff *best = NULL;
    size_t at = 0;
    for (size_t i = 0; i < r->ns + 2; i++) {
        const mz_cmp_diff *df = i < r->ns ? &r->s[i].df : i == r->ns ? &r->step : &r->time;
        if (df->failed && (!best || df->frame < best->frame)) {
            best = df;
            at = i;
        }
    }
    if (!best)
        return;
    if (at < r->ns)
        describe_failure(m, r->o, r->s[at].name, r->s[at].rigid, r->s[at].comps, best);
    else
        describe_failure(m, r->o, at == r->ns ? "step" : "time", false, 1, best);
}

static void mode_text(mz_str *m, const mz_compare_opts *o)
{
    if (o->tolerance)
        str_addf(m, "within atol %g, rtol %g", o->atol, o->rtol);
    else
        str_addf(m, "identical bits");
}

static void verdict_line(const mz_cmp_result *r, int rc, mz_str *m)
{
    if (rc == MZ_COMPARE_NOT_COMPARABLE) {
        str_addf(m, "not comparable: %s", r->reason);
        return;
    }
    if (rc == MZ_COMPARE_DIFFERS) {
        str_addf(m, "differs: ");
        first_failure(r, m);
        return;
    }
    size_t fields = 0, rigid = 0;
    for (size_t i = 0; i < r->ns; i++)
        r->s[i].rigid ? rigid++ : fields++;
    unsigned long long frames = r->step.frames;
    str_addf(m, "match (%zu field%s", fields, fields == 1 ? "" : "s");
    if (rigid)
        str_addf(m, ", %zu rigid-body series", rigid);
    str_addf(m, ", %llu frame%s, %llu particle%s, ", frames, frames == 1 ? "" : "s",
             (unsigned long long)r->n, r->n == 1 ? "" : "s");
    mode_text(m, r->o);
    str_addf(m, ")");
}

static void print_row(FILE *out, const char *name, const mz_cmp_diff *df)
{
    fprintf(out, "  %-16s %6llu  %-11.4g %-11.4g %-11.4g ", name, df->frames, df->max_abs,
            rms(df), df->max_rel);
    if (df->mismatches)
        fprintf(out, "differs (%llu value%s)\n", df->mismatches, df->mismatches == 1 ? "" : "s");
    else
        fputs("match\n", out);
}

static void print_table(const mz_cmp_result *r, FILE *out)
{
    mz_str m = {0};
    mode_text(&m, r->o);
    fprintf(out, "%s vs %s: %llu particles", r->o->path[0], r->o->path[1],
            (unsigned long long)r->n);
    if (r->n_rigid)
        fprintf(out, ", %llu rigid bod%s", (unsigned long long)r->n_rigid,
                r->n_rigid == 1 ? "y" : "ies");
    fprintf(out, ", frames %ld..%ld, %s\n", r->first, r->last, m.s);
    str_free(&m);
    fprintf(out, "  %-16s %6s  %-11s %-11s %-11s %s\n", "field", "frames", "max abs", "RMS",
            "max rel", "verdict");
    for (size_t i = 0; i < r->ns; i++)
        print_row(out, r->s[i].name, &r->s[i].df);
    print_row(out, "step", &r->step);
    print_row(out, "time", &r->time);
    for (int k = 0; k < 2; k++)
        if (r->only[k].n) {
            fputs("  not compared:", out);
            for (size_t i = 0; i < r->only[k].n; i++)
                fprintf(out, "%s %s", i ? "," : "", r->only[k].v[i]);
            fprintf(out, " (only in %s)\n", r->o->path[k]);
        }
}

static cJSON *json_diff(const mz_cmp_result *r, const mz_cmp_diff *df, bool rigid, int comps)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "frames", (double)df->frames);
    cJSON_AddNumberToObject(j, "max_abs", df->max_abs); /* not finite: null */
    cJSON_AddNumberToObject(j, "rms", rms(df));
    cJSON_AddNumberToObject(j, "max_rel", df->max_rel);
    cJSON_AddNumberToObject(j, "mismatches", (double)df->mismatches);
    if (rigid)
        cJSON_AddTrueToObject(j, "rigid");
    if (!df->failed) {
        cJSON_AddNullToObject(j, "first_failure");
        return j;
    }
    cJSON *f = cJSON_AddObjectToObject(j, "first_failure");
    cJSON_AddNumberToObject(f, "frame", (double)df->frame);
    if (df->id >= 0)
        cJSON_AddNumberToObject(f, "id", (double)df->id);
    else
        cJSON_AddNullToObject(f, "id");
    if (df->comp >= 0)
        cJSON_AddStringToObject(f, "component", component_name(comps, df->comp));
    else
        cJSON_AddNullToObject(f, "component");
    cJSON_AddNumberToObject(f, "a", df->a);
    cJSON_AddNumberToObject(f, "b", df->b);
    if (df->bytes) {
        char bits[2][24];
        for (int k = 0; k < 2; k++)
            snprintf(bits[k], sizeof bits[k], "0x%0*llx", 2 * df->bytes,
                     k ? df->bbits : df->abits);
        cJSON_AddStringToObject(f, "a_bits", bits[0]);
        cJSON_AddStringToObject(f, "b_bits", bits[1]);
    }
    if (r->o->tolerance)
        cJSON_AddNumberToObject(f, "tolerance", df->tol);
    return j;
}

static void print_json(const mz_cmp_result *r, int rc, const char *verdict, FILE *out)
{
    const mz_compare_opts *o = r->o;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "files", cJSON_CreateStringArray(o->path, 2));
    cJSON_AddStringToObject(j, "mode", o->tolerance ? "tolerance" : "identical bits");
    if (o->tolerance) {
        cJSON_AddNumberToObject(j, "rtol", o->rtol);
        cJSON_AddNumberToObject(j, "atol", o->atol);
    } else {
        cJSON_AddNullToObject(j, "rtol");
        cJSON_AddNullToObject(j, "atol");
    }
    if (r->compared) {
        cJSON_AddNumberToObject(j, "particles", (double)r->n);
        cJSON_AddNumberToObject(j, "rigid_bodies", (double)r->n_rigid);
        cJSON *fr = cJSON_AddObjectToObject(j, "frames");
        cJSON_AddNumberToObject(fr, "first", (double)r->first);
        cJSON_AddNumberToObject(fr, "last", (double)r->last);
        cJSON *fields = cJSON_AddObjectToObject(j, "fields");
        for (size_t i = 0; i < r->ns; i++)
            cJSON_AddItemToObject(fields, r->s[i].name,
                                  json_diff(r, &r->s[i].df, r->s[i].rigid, r->s[i].comps));
        cJSON_AddItemToObject(j, "step", json_diff(r, &r->step, false, 1));
        cJSON_AddItemToObject(j, "time", json_diff(r, &r->time, false, 1));
        for (int k = 0; k < 2; k++) {
            cJSON *only = cJSON_AddArrayToObject(j, k ? "only_in_b" : "only_in_a");
            for (size_t i = 0; i < r->only[k].n; i++)
                cJSON_AddItemToArray(only, cJSON_CreateString(r->only[k].v[i]));
        }
    }
    cJSON_AddStringToObject(j, "verdict", rc == MZ_COMPARE_MATCH     ? "match"
                                          : rc == MZ_COMPARE_DIFFERS ? "differs"
                                                                     : "not comparable");
    cJSON_AddStringToObject(j, "message", verdict);
    cJSON_AddNumberToObject(j, "exit_code", rc);
    char *text = cJSON_Print(j);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(j);
}

void compare_report(const mz_cmp_result *r, int rc, FILE *out)
{
    mz_str verdict = {0};
    verdict_line(r, rc, &verdict);
    if (rc == MZ_COMPARE_NOT_COMPARABLE)
        mz_error("%s", verdict.s);
    if (r->o->json)
        print_json(r, rc, verdict.s, out);
    else if (rc != MZ_COMPARE_NOT_COMPARABLE) {
        print_table(r, out);
        fprintf(out, "mizu compare: %s\n", verdict.s);
    }
    str_free(&verdict);
}
