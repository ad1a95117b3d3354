/* test_layers.c — kernel/'s folders depend one way, as README.md says.
 *
 * README.md states the order of the folders in one line, bottom first, that
 * starts with "    kernel/: " (for example "base < proto, render < magic < ...",
 * folders of one level separated by commas; main.c, the binary's entry, on top).
 * Every #include "..." of kernel/'s .c and .h files may name a header of its own
 * folder or of a folder on a lower level, never one above or beside it; a
 * header named *_internal.h only from its own folder; and every folder of
 * kernel/ has its place in the line, so a new one must be placed. The line is
 * the one statement of the order: this test reads it, it does not repeat it.
 *
 * The sources are found from the working directory (make test-unit runs from
 * the checkout) or, failing that, two folders above this binary (build/tests/).
 * A fake tree under /tmp shows that the check fails on each kind of violation.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"

#define ORDER_MARK "    kernel/: "
#define MAX_UNITS 32            /* folders of kernel/ and main.c */

typedef struct layers {
    char name[MAX_UNITS][64];
    int level[MAX_UNITS];
    int n;
    strbuf report;              /* what is wrong, a line each */
    int problems;
} layers;

static void problem(layers *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(layers *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(&l->report, fmt, ap);
    va_end(ap);
    strbuf_puts(&l->report, "\n");
    assert_false(l->report.failed);
    l->problems++;
}

/* out = the formatted path; it must fit (PATH_MAX). */
static void path_of(char out[PATH_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void path_of(char out[PATH_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, PATH_MAX, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && n < PATH_MAX);
}

static int level_of(const layers *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], name) == 0)
            return l->level[i];
    return -1;
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

/* Reads the order line of root/README.md into l. 0, or -1 with a problem said. */
static int read_order(layers *l, const char *root)
{
    char path[PATH_MAX], line[1024];
    path_of(path, "%s/README.md", root);
    FILE *f = fopen(path, "r");
    if (!f) {
        problem(l, "%s: cannot be read", path);
        return -1;
    }
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, ORDER_MARK, strlen(ORDER_MARK)) == 0;
    fclose(f);
    if (!found) {
        problem(l, "%s: no line starting \"%s\" states the order of kernel/'s folders", path, ORDER_MARK);
        return -1;
    }
    int level = 0;
    for (const char *p = line + strlen(ORDER_MARK); *p && *p != '\n';) {
        if (*p == ' ' || *p == ',' || *p == '`') {
            p++;
        } else if (*p == '<') {
            level++;
            p++;
        } else if (is_name_char(*p) && l->n < MAX_UNITS) {
            size_t k = 0;
            while (is_name_char(p[k]) && k + 1 < sizeof l->name[0])
                k++;
            memcpy(l->name[l->n], p, k);
            l->name[l->n][k] = '\0';
            l->level[l->n++] = level;
            p += k;
        } else {
            problem(l, "README.md's order line: cannot read it at \"%s\"", p);
            return -1;
        }
    }
    return 0;
}

/* The unit (folder of kernel/, or main.c) that the path relative to root is
 * in, or NULL for a path outside kernel/ (include/, the generated headers). */
static const char *unit_of(const char *rel, char *buf, size_t len)
{
    if (strncmp(rel, "kernel/", 7) != 0)
        return NULL;
    const char *s = rel + 7, *slash = strchr(s, '/');
    size_t k = slash ? (size_t)(slash - s) : strlen(s);
    if (k + 1 > len)
        k = len - 1;
    memcpy(buf, s, k);
    buf[k] = '\0';
    return buf;
}

/* Where #include "inc" of root/rel resolves, relative to root: beside the file
 * first, then under kernel/ (-Ikernel); "" when neither (include/, build/gen/). */
static void resolve(const char *root, const char *rel, const char *inc, char *out, size_t len)
{
    char dir[PATH_MAX], path[PATH_MAX], real[PATH_MAX], realroot[PATH_MAX];
    path_of(dir, "%s/%s", root, rel);
    *strrchr(dir, '/') = '\0';
    out[0] = '\0';
    if (!realpath(root, realroot))
        return;
    path_of(path, "%s/%s", dir, inc);
    if (!realpath(path, real)) {
        path_of(path, "%s/kernel/%s", root, inc);
        if (!realpath(path, real))
            return;
    }
    size_t rl = strlen(realroot);
    if (strncmp(real, realroot, rl) == 0 && real[rl] == '/')
        snprintf(out, len, "%s", real + rl + 1);
}

/* Checks every #include "..." of one file, root/rel. */
static void check_file(layers *l, const char *root, const char *rel)
{
    char from_buf[64], to_buf[64], path[PATH_MAX], line[2048], target[PATH_MAX];
    const char *from = unit_of(rel, from_buf, sizeof from_buf);
    int from_level = level_of(l, from);
    path_of(path, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (!f) {
        problem(l, "%s: cannot be read", rel);
        return;
    }
    for (int no = 1; fgets(line, sizeof line, f); no++) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p++ != '#')
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "include", 7) != 0)
            continue;
        p += 7;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '"')
            continue;           /* <system> headers */
        const char *end = strchr(p + 1, '"');
        if (!end)
            continue;
        char inc[PATH_MAX];
        snprintf(inc, sizeof inc, "%.*s", (int)(end - p - 1), p + 1);
        resolve(root, rel, inc, target, sizeof target);
        const char *to = unit_of(target, to_buf, sizeof to_buf);
        if (!to || strcmp(to, from) == 0)
            continue;
        const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
        size_t bl = strlen(base), il = strlen("_internal.h");
        if (bl >= il && strcmp(base + bl - il, "_internal.h") == 0)
            problem(l, "%s:%d includes %s: a header of kernel/%s/ that only its own folder includes", rel, no, inc,
                    to);
        int to_level = level_of(l, to);
        if (from_level >= 0 && to_level >= from_level)
            problem(l, "%s:%d includes %s: %s is %s %s in README.md's order", rel, no, inc, to,
                    to_level == from_level ? "beside" : "above", from);
    }
    fclose(f);
}

static bool is_source(const char *name)
{
    size_t k = strlen(name);
    return k > 2 && name[k - 2] == '.' && (name[k - 1] == 'c' || name[k - 1] == 'h');
}

/* Every .c and .h under root/rel, recursively. */
static void check_dir(layers *l, const char *root, const char *rel)
{
    char path[PATH_MAX];
    path_of(path, "%s/%s", root, rel);
    DIR *d = opendir(path);
    if (!d) {
        problem(l, "%s: cannot be listed", rel);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        struct stat st;
        path_of(sub, "%s/%s", rel, e->d_name);
        path_of(path, "%s/%s", root, sub);
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            check_dir(l, root, sub);
        else if (is_source(e->d_name))
            check_file(l, root, sub);
    }
    closedir(d);
}

/* The whole check of the tree at root: the problems it found (their lines in l->report). */
static int check_tree(const char *root, layers *l)
{
    memset(l, 0, sizeof *l);
    if (read_order(l, root) != 0)
        return l->problems;
    /* every folder of kernel/ (and every .c beside them) is placed; every name placed exists */
    char path[PATH_MAX];
    path_of(path, "%s/kernel", root);
    DIR *d = opendir(path);
    if (!d) {
        problem(l, "%s: cannot be listed", path);
        return l->problems;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && level_of(l, e->d_name) < 0) {
            struct stat st;
            path_of(path, "%s/kernel/%s", root, e->d_name);
            if (stat(path, &st) == 0 && (S_ISDIR(st.st_mode) || is_source(e->d_name)))
                problem(l, "kernel/%s has no place in README.md's order", e->d_name);
        }
    closedir(d);
    for (int i = 0; i < l->n; i++) {
        struct stat st;
        path_of(path, "%s/kernel/%s", root, l->name[i]);
        if (stat(path, &st) != 0)
            problem(l, "README.md's order names %s, which kernel/ does not have", l->name[i]);
    }
    check_dir(l, root, "kernel");
    return l->problems;
}

/* The checkout: the working directory, or two folders above this binary. */
static const char *source_root(void)
{
    static char root[PATH_MAX];
    if (access("README.md", R_OK) == 0 && access("kernel", R_OK) == 0)
        return ".";
    ssize_t n = readlink("/proc/self/exe", root, sizeof root - 1);
    assert_true(n > 0);
    root[n] = '\0';
    for (int up = 0; up < 3; up++)
        *strrchr(root, '/') = '\0';
    return root;
}

static void kernel_includes_go_down(void **state)
{
    (void)state;
    layers l;
    int problems = check_tree(source_root(), &l);
    if (problems)
        print_error("%s", l.report.data);
    assert_int_equal(problems, 0);
    assert_true(l.n >= 2);
    strbuf_free(&l.report);
}

/* ---- the check itself, on a tree made for it ---- */

static char fake[64];

static void put(const char *rel, const char *text)
{
    char path[PATH_MAX];
    path_of(path, "%s/%s", fake, rel);
    for (char *s = strchr(path + strlen(fake) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int make_fake(void **state)
{
    (void)state;
    snprintf(fake, sizeof fake, "/tmp/cudalab-test-layers-XXXXXX");
    assert_non_null(mkdtemp(fake));
    put("README.md", "Folders:\n\n" ORDER_MARK "`base < lang, magic < student < main.c`\n");
    put("kernel/base/text.h", "/* base */\n");
    put("kernel/lang/lex.h", "#include \"base/text.h\"\n");
    put("kernel/lang/parse_internal.h", "#include \"lang/lex.h\"\n");
    put("kernel/magic/magic.h", "#include <stdio.h>\n#include \"base/text.h\"\n#include \"cudalab/family.h\"\n");
    put("kernel/student/store.h", "#include \"magic/magic.h\"\n#include \"lang/lex.h\"\n");
    put("kernel/main.c", "#include \"student/store.h\"\n");
    return 0;
}

static int remove_fake(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake);
    return system(cmd) == 0 ? 0 : -1;
}

static int fake_problems(const char *expect)
{
    layers l;
    int n = check_tree(fake, &l);
    if (expect)
        assert_non_null(l.report.data && strstr(l.report.data, expect) ? l.report.data : NULL);
    strbuf_free(&l.report);
    return n;
}

static void a_tree_that_keeps_the_order_passes(void **state)
{
    (void)state;
    assert_int_equal(fake_problems(NULL), 0);
}

static void an_include_upward_fails(void **state)
{
    (void)state;
    put("kernel/magic/sweep.c", "#include \"magic/magic.h\"\n#  include \"student/store.h\"\n");
    assert_int_equal(fake_problems("kernel/magic/sweep.c:2 includes student/store.h: student is above magic"), 1);
}

static void an_include_beside_fails(void **state)
{
    (void)state;
    put("kernel/magic/sweep.c", "#include \"lang/lex.h\"\n");
    assert_int_equal(fake_problems("lang is beside magic"), 1);
}

static void a_relative_include_is_resolved(void **state)
{
    (void)state;
    put("kernel/base/log.c", "#include \"../magic/magic.h\"\n");
    assert_int_equal(fake_problems("kernel/base/log.c:1 includes ../magic/magic.h: magic is above base"), 1);
}

static void an_internal_header_stays_home(void **state)
{
    (void)state;
    put("kernel/student/compile.c", "#include \"lang/parse_internal.h\"\n");
    assert_int_equal(fake_problems("only its own folder includes"), 1);
}

static void a_folder_out_of_the_order_fails(void **state)
{
    (void)state;
    put("kernel/extra/x.h", "/* nowhere */\n");
    assert_int_equal(fake_problems("kernel/extra has no place"), 1);
}

static void a_readme_without_the_order_fails(void **state)
{
    (void)state;
    put("README.md", "Folders depend one way.\n");
    assert_int_equal(fake_problems("states the order"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_includes_go_down),
        cmocka_unit_test_setup_teardown(a_tree_that_keeps_the_order_passes, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(an_include_upward_fails, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(an_include_beside_fails, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(a_relative_include_is_resolved, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(an_internal_header_stays_home, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(a_folder_out_of_the_order_fails, make_fake, remove_fake),
        cmocka_unit_test_setup_teardown(a_readme_without_the_order_fails, make_fake, remove_fake),
    };
    return cmocka_run_group_tests_name("layers", tests, NULL, NULL);
}
