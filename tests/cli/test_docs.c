/* The documentation keeps up with the code: every scene key is documented under its full dotted
 * path in docs/scene.md and in the man page's SCENE FILE section; every command and long option
 * is in the man page; the complete scenes shown in docs/scene.md are valid. Runs from the
 * repository root (as `make test` does). */
#include "test_util.h"

#include "scene/scene.h"

#include <ctype.h>
#include <stdbool.h>

#define SCENE_MD "docs/scene.md"
#define MAN_PAGE "man/mizu.1"
#define MAIN_C "src/cli/main.c"

static const char *const commands[] = {"run", "check", "devices", "info", "compare", "render",
                                       "keys", NULL};
static const char *const long_options[] = {"--output",  "--frames", "--device",
                                           "--set",     "--quiet",  "--profile",
                                           "--kernel-dir", "--help", "--version",
                                           "--checkpoint-every", "--checkpoint", "--resume",
                                           "--fields", "--rtol", "--atol", "--json", "--until",
                                           "--every", "--preview", "--frame", "--field",
                                           "--view", "--size", "--range", NULL};

static char *slurp(const char *path)
{
    char *text = read_file(path, NULL);
    if (!text)
        fail_msg("cannot read %s (tests run from the repository root)", path);
    return text;
}

/* Characters that continue a key path ("fluids[].box.min") or an option ("--kernel-dir"). */
static bool path_char(char c) { return isalnum((unsigned char)c) || strchr("_.[]", c); }
static bool option_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

/* tok occurs in text as a whole token: not inside a longer name, so "fluids[].box" is not found
 * in "fluids[].box.min" and "--set" not in "--settings". A '.' right after the token counts as
 * the end of a sentence when no name character follows it. */
static bool has_token(const char *text, const char *tok, bool (*name_char)(char))
{
    size_t n = strlen(tok);
    for (const char *p = strstr(text, tok); p; p = strstr(p + 1, tok)) {
        if (p > text && name_char(p[-1]))
            continue;
        char after = p[n];
        if (after == '.' && !(p[n + 1] && name_char(p[n + 1]) && p[n + 1] != '.'))
            return true;
        if (!after || !name_char(after))
            return true;
    }
    return false;
}

/* The key is documented in Markdown: it appears as code, `path`, somewhere in the text. */
static bool md_has_key(const char *md, const char *path)
{
    mz_str code = {0};
    str_addf(&code, "`%s`", path);
    bool found = strstr(md, code.s) != NULL;
    str_free(&code);
    return found;
}

/* The key has an entry of its own in the (escape-free) man text: a line ".B path", ".BR path
 * ...", ".BI path ..." (the path may be quoted), as the tag of a .TP paragraph is written. */
static bool man_has_entry(const char *man, const char *path)
{
    size_t n = strlen(path);
    for (const char *line = man; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, ".B", 2))
            continue;
        const char *p = line + 2;
        if (*p == 'R' || *p == 'I')
            p++;
        if (*p != ' ')
            continue;
        while (*p == ' ')
            p++;
        if (*p == '"')
            p++;
        if (!strncmp(p, path, n) && !path_char(p[n]))
            return true;
    }
    return false;
}

/* roff source → plain text for searching: "\-" → "-", "\e" → "\", "\(aq" → "'", font changes
 * ("\fB", "\f(CR", "\f[B]") and zero-width escapes ("\&", "\:", "\%", "\/", "\,", "\|", "\^")
 * dropped, any other escape replaced by a space. Request lines (".TP") are kept as they are. */
static char *roff_to_text(const char *in)
{
    static const struct {
        const char *name, *text;
    } glyphs[] = {{"aq", "'"}, {"dq", "\""}, {"ga", "`"}, {"ha", "^"}, {"ti", "~"},
                  {"em", "-"}, {"en", "-"}, {"hy", "-"}, {"mi", "-"}};
    char *out = malloc(strlen(in) + 1), *o = out;
    assert_non_null(out);
    for (const char *p = in; *p;) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        char c = p[1];
        if (!c) {
            p++;
        } else if (c == '-') {
            *o++ = '-';
            p += 2;
        } else if (c == 'e') {
            *o++ = '\\';
            p += 2;
        } else if (strchr("&:%/,|^", c)) {
            p += 2;
        } else if (c == 'f') { /* \fB, \f(CR, \f[CR] */
            p += 2;
            if (*p == '(')
                p += (p[1] && p[2]) ? 3 : strlen(p);
            else if (*p == '[')
                p += strcspn(p, "]") + (strchr(p, ']') ? 1 : 0);
            else if (*p)
                p++;
        } else if (c == '(' && p[2] && p[3]) { /* \(xx glyph */
            const char *g = " ";
            for (size_t i = 0; i < sizeof glyphs / sizeof *glyphs; i++)
                if (!strncmp(p + 2, glyphs[i].name, 2))
                    g = glyphs[i].text;
            *o++ = *g;
            p += 4;
        } else {
            *o++ = ' ';
            p += 2;
        }
    }
    *o = '\0';
    return out;
}

/* The text of the man page section whose .SH heading contains `name`, up to the next .SH
 * (a malloc'd copy). Fails the test when there is no such section. */
static char *man_section(const char *man, const char *name)
{
    for (const char *p = man; (p = strstr(p, ".SH")); p += 3) {
        if (p != man && p[-1] != '\n')
            continue;
        const char *eol = strchr(p, '\n');
        if (!eol)
            break;
        const char *hit = strstr(p, name);
        if (!hit || hit > eol)
            continue;
        const char *end = strstr(eol, "\n.SH");
        size_t len = end ? (size_t)(end - eol) : strlen(eol);
        char *s = malloc(len + 1);
        assert_non_null(s);
        memcpy(s, eol, len);
        s[len] = '\0';
        return s;
    }
    fail_msg("%s has no .SH section named %s", MAN_PAGE, name);
    return NULL;
}

static void test_keys_in_scene_md(void **state)
{
    (void)state;
    char *md = slurp(SCENE_MD);
    size_t n = 0, missing = 0;
    for (const char *const *k = scene_key_paths(); *k; k++, n++)
        if (!md_has_key(md, *k)) {
            print_error("%s: scene key %s is not documented (write its full path as `%s`)\n",
                        SCENE_MD, *k, *k);
            missing++;
        }
    free(md);
    assert_true(n > 20); /* the key list itself is not empty or truncated */
    assert_int_equal(missing, 0);
}

static void test_keys_in_man_page(void **state)
{
    (void)state;
    char *src = slurp(MAN_PAGE);
    char *man = roff_to_text(src);
    char *scene = man_section(man, "SCENE FILE");
    size_t missing = 0;
    for (const char *const *k = scene_key_paths(); *k; k++)
        if (!man_has_entry(scene, *k)) {
            print_error("%s: scene key %s has no entry (.TP / .B %s) in the SCENE FILE section\n",
                        MAN_PAGE, *k, *k);
            missing++;
        }
    free(scene);
    free(man);
    free(src);
    assert_int_equal(missing, 0);
}

/* Long options named in src/cli/main.c: the getopt table ({"name", required_argument, ...}). */
static void options_in_main(char ***out, size_t *n)
{
    char *src = slurp(MAIN_C);
    *out = NULL;
    *n = 0;
    for (const char *p = strstr(src, "{\""); p; p = strstr(p + 2, "{\"")) {
        const char *name = p + 2, *q = strchr(name, '"');
        if (!q || strncmp(q, "\", ", 3) ||
            (strncmp(q + 3, "required_argument", 17) && strncmp(q + 3, "no_argument", 11) &&
             strncmp(q + 3, "optional_argument", 17)))
            continue;
        *out = realloc(*out, (*n + 1) * sizeof **out);
        assert_non_null(*out);
        mz_str opt = {0};
        str_addf(&opt, "--%.*s", (int)(q - name), name);
        (*out)[(*n)++] = opt.s;
    }
    free(src);
}

static void test_cli_in_man_page(void **state)
{
    (void)state;
    char *src = slurp(MAN_PAGE);
    char *man = roff_to_text(src);
    assert_non_null(strstr(src, ".TH MIZU 1 "));
    char *cmds = man_section(man, "COMMANDS");
    char *opts = man_section(man, "OPTIONS");
    size_t missing = 0;
    for (const char *const *c = commands; *c; c++)
        if (!has_token(cmds, *c, path_char)) {
            print_error("%s: command %s is not in the COMMANDS section\n", MAN_PAGE, *c);
            missing++;
        }
    for (const char *const *o = long_options; *o; o++)
        if (!has_token(opts, *o, option_char)) {
            print_error("%s: option %s is not in the OPTIONS section\n", MAN_PAGE, *o);
            missing++;
        }
    /* Options added to main.c's getopt table later must be documented too. */
    char **found;
    size_t n_found;
    options_in_main(&found, &n_found);
    assert_true(n_found >= 8);
    for (size_t i = 0; i < n_found; i++) {
        if (!has_token(opts, found[i], option_char)) {
            print_error("%s: option %s (from %s) is not in the OPTIONS section\n", MAN_PAGE,
                        found[i], MAIN_C);
            missing++;
        }
        free(found[i]);
    }
    free(found);
    /* An unescaped "--" in the source renders as typographic dashes in some formatters. */
    for (const char *const *o = long_options; *o; o++) {
        char raw[64];
        snprintf(raw, sizeof raw, " %s", *o);
        if (strstr(src, raw)) {
            print_error("%s: write %s with escaped hyphens (\\-\\-)\n", MAN_PAGE, *o);
            missing++;
        }
    }
    assert_true(has_token(man, "MIZU_DEVICE", path_char));
    free(opts);
    free(cmds);
    free(man);
    free(src);
    assert_int_equal(missing, 0);
}

/* Every ```json block in docs/scene.md that holds a complete scene ("mizu_scene") must load. */
static void test_scene_md_examples_load(void **state)
{
    (void)state;
    char *md = slurp(SCENE_MD);
    size_t blocks = 0;
    for (char *p = strstr(md, "```json\n"); p; p = strstr(p, "```json\n")) {
        char *body = p + strlen("```json\n");
        char *end = strstr(body, "\n```");
        assert_non_null(end);
        size_t len = (size_t)(end - body);
        p = end + 4;
        char *text = malloc(len + 1);
        assert_non_null(text);
        memcpy(text, body, len);
        text[len] = '\0';
        if (strstr(text, "\"mizu_scene\"")) {
            mz_scene s;
            mz_diag d = {0};
            int rc = scene_load_text(text, len, "docs/example.json", NULL, 0, &s, &d);
            if (rc != 0)
                fail_msg("%s: example scene %zu does not load: %s", SCENE_MD, blocks + 1,
                         d.count ? d.msgs[0] : "?");
            diag_free(&d);
            scene_free(&s);
            blocks++;
        }
        free(text);
    }
    free(md);
    assert_true(blocks >= 1);
}

/* The checker itself: tokens, roff escapes and sections. */
static void test_helpers(void **state)
{
    (void)state;
    assert_true(has_token("see `fluids[].box`.", "fluids[].box", path_char));
    assert_false(has_token("`fluids[].box.min`", "fluids[].box", path_char));
    assert_false(has_token("fluids[0].spacing", "fluids", path_char));
    assert_true(has_token("the key output.level.", "output.level", path_char));
    assert_false(has_token("xoutput.level", "output.level", path_char));
    assert_false(has_token("--settings", "--set", option_char));
    assert_true(has_token("-s, --set PATH", "--set", option_char));
    char *t = roff_to_text(".B \\-\\-kernel\\-dir\n\\fBsimulation.fps\\fR\\&.\n\\(aqx\\(aq\n");
    assert_string_equal(t, ".B --kernel-dir\nsimulation.fps.\n'x'\n");
    assert_true(has_token(t, "simulation.fps", path_char));
    free(t);
    assert_true(md_has_key("| `output.level` | integer |", "output.level"));
    assert_false(md_has_key("--set output.level=6", "output.level"));
    assert_true(man_has_entry(".TP\n.B fluids[].box\nobject\n", "fluids[].box"));
    assert_true(man_has_entry(".BR \"fluids[].box\" \" (optional)\"\n", "fluids[].box"));
    assert_false(man_has_entry(".B fluids[].box.min\n", "fluids[].box"));
    assert_false(man_has_entry("see\n.BR fluids[].positions .\n", "fluids[].box"));
    assert_false(man_has_entry("the fluids[].box key\n", "fluids[].box"));
    char *sec = man_section(".TH X 1\n.SH A\na\n.SH SCENE FILE\nkey\n.SH B\nb\n", "SCENE FILE");
    assert_string_equal(sec, "\nkey");
    free(sec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_keys_in_scene_md),
        cmocka_unit_test(test_keys_in_man_page),
        cmocka_unit_test(test_cli_in_man_page),
        cmocka_unit_test(test_scene_md_examples_load),
    };
    return cmocka_run_group_tests_name("docs", tests, NULL, NULL);
}
