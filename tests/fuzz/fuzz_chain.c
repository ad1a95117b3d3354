/* fuzz_chain.c — libFuzzer target that grows chains of every operator of the
 * %assert/%score language far past anything a person writes (a 16 KB
 * "1+1+..." once killed the kernel: eval() recursed once per term), and runs
 * the result through the expression and the cell language.
 *
 * The input is a header and up to three texts:
 *   byte 0     how to grow: mode % 3 (below); with bit 7 set N may be up to
 *              65535, else it is taken modulo 8192 (twice the term limit,
 *              and quick: most inputs need no more)
 *   bytes 1-2  N, little endian
 *   byte 3     a unit of the table below (modulo its size), or a nesting pair
 *   then       PREFIX \0 UNIT \0 SUFFIX, each optional; a missing or empty
 *              UNIT means the table's
 *   mode 0     PREFIX + UNIT * N + SUFFIX                   one operator, grown
 *   mode 1     PREFIX + N units picked from the table by the bytes of UNIT
 *              in turn (or the whole table in turn) + SUFFIX   a mix
 *   mode 2     PREFIX + OPEN * N + UNIT + CLOSE * N + SUFFIX   nesting grown
 * The repetitions stop at TEXT_MAX bytes.
 *
 * The text is then, on a thread with a 1 MiB stack, so that any recursion
 * per term overflows it: parsed, checked (%assert), scored (%score) and
 * completed (expr_names) over fuzz_results.h, and parsed as the cells
 * "%score TEXT" (whose completeness is asked too) and "%echo TEXT".
 * Properties (abort() on violation): no crash, leak or undefined behaviour;
 * an expression longer than EXPR_MAX_BYTES is refused as too long; every
 * error has a name and a message; a one-line text that expr_parse refuses is
 * refused by the cell parser as well.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "magic/magic.h"
#include "grade/expr.h"
#include "fuzz_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STACK (1 << 20)
/* The grown text stops growing here: four times EXPR_MAX_BYTES, past the
 * word cap too, and still quick under ASan (a megabyte took seconds). */
#define TEXT_MAX (4 * EXPR_MAX_BYTES)

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_chain: property violated: %s\n", what);
        abort();
    }
}

/* Every operator and every construct that chains or nests, with an operand. */
static const char *const units[] = {
    "+1", "-1", "*1", "/1", "%7", "+ 1", " - 1", " and 1", " or 0", "&&1", "||0", " and true", " or false",
    "==1", "!=1", "<1", "<=1", ">1", ">=1", "not ", "!", "-", "+", ".x", ".devices", ".check", "[0]",
    "[-1]", "['a-d']", "[variant=tiled]", "(", ")", "abs(", "min(1,", "max(", ",1", ",", "[", "]",
    "matmul[variant=tiled", ",tile=8", "=8", "'a'", "+'a'", "\"b\"", "'\\x41'", "'\\u00e9'", "'\\q'",
    "'\\x00'", "1e308", "*1e308", "*10", "2^63", "2^62", "18446744073709551616", "1.8e19",
    "9223372036854775807", "-9223372036854775807-1", " # c", "histo.bins", "histo.big", "matmul.gflops",
    "matmul", "device.devices[0].sms", "sum(", "mean(", "round(", "count(", "len(", "all(", "any(",
    " ", "1", "0", "true", "null", "x", "%", "/0", "1/", "round(1.7e308,-308)", "sum(histo.big)",
};
#define UNITS (sizeof units / sizeof units[0])

static const struct { const char *open, *close; } nests[] = {
    {"(", ")"}, {"abs(", ")"}, {"min(1,", ")"}, {"not ", ""}, {"!", ""}, {"-", ""}, {"+", ""},
    {"- (", ")"}, {"not (", ")"}, {"histo.big[", "]"}, {"(1+", ")"}, {"(1 and ", ")"}, {"[", "]"},
    {"matmul[variant=", "]"}, {"count(matmul[tile=", "])"}, {"'", "'"},
};
#define NESTS (sizeof nests / sizeof nests[0])

typedef struct buf {
    char *s;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        check(b->s != NULL, "out of memory building the input");
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_n(buf *b, const char *s, size_t times)
{
    for (size_t i = 0; i < times && b->len < TEXT_MAX; i++)
        put(b, s, strlen(s));
}

/* The text to try: see the top of the file. NULL for an input too short. */
static char *grow(const uint8_t *data, size_t size)
{
    if (size < 4)
        return NULL;
    int mode = data[0] % 3;
    size_t n = (size_t)data[1] | (size_t)data[2] << 8;
    if (!(data[0] & 0x80))
        n %= 2 * EXPR_MAX_TERMS;
    const char *rest = (const char *)data + 4, *end = (const char *)data + size;
    const char *parts[3] = {"", "", ""};
    size_t lens[3] = {0, 0, 0};
    for (int k = 0; k < 3 && rest <= end; k++) {
        const char *nul = memchr(rest, '\0', (size_t)(end - rest));
        parts[k] = rest;
        lens[k] = (size_t)((nul ? nul : end) - rest);
        rest += lens[k] + 1;
    }
    const char *table_unit = units[data[3] % UNITS];
    buf b = {0};
    put(&b, "", 0);
    put(&b, parts[0], lens[0]);
    if (mode == 0 && lens[1]) {
        for (size_t i = 0; i < n && b.len < TEXT_MAX; i++)
            put(&b, parts[1], lens[1]);
    } else if (mode == 0) {
        puts_n(&b, table_unit, n);
    } else if (mode == 1) {
        for (size_t i = 0; i < n; i++)
            puts_n(&b, units[(lens[1] ? (uint8_t)parts[1][i % lens[1]] : i) % UNITS], 1);
    } else {
        size_t k = data[3] % NESTS;
        n = n < TEXT_MAX / 2 / strlen(nests[k].open) ? n : TEXT_MAX / 2 / strlen(nests[k].open);
        puts_n(&b, nests[k].open, n);
        put(&b, lens[1] ? parts[1] : "1", lens[1] ? lens[1] : 1);
        puts_n(&b, nests[k].close, n);
    }
    put(&b, parts[2], lens[2]);
    return b.s;
}

static void check_cell(const char *magic, const char *text, bool expr_refused)
{
    size_t len = strlen(magic) + strlen(text) + 2;
    char *cell = malloc(len);
    check(cell != NULL, "out of memory");
    snprintf(cell, len, "%s %s", magic, text);
    command *cmds = NULL;
    parse_error err;
    int n = cell_parse(NULL, cell, &cmds, &err);
    if (n < 0) {
        check(err.error.ename[0] && err.error.evalue[0], "a cell error without a name or a message");
    } else {
        check(!expr_refused || strchr(text, '\n') || strcmp(magic, "%echo") == 0,
              "a cell accepts an expression that expr_parse refuses");
        commands_free(cmds, n);
    }
    if (strcmp(magic, "%score") == 0) {
        const char *c = cell_completeness(NULL, cell);
        check(c && (strcmp(c, "complete") == 0 || strcmp(c, "incomplete") == 0 || strcmp(c, "invalid") == 0),
              "is_complete without an answer");
    }
    free(cell);
}

static void check_report(const expr_report *rep)
{
    check(rep->error.ename[0] != '\0', "an error without a name");
    check(rep->error.evalue[0] != '\0', "an error without a message");
}

/* Length of the expression as expr_parse sees it, when plain: no quote, no comment. */
static bool plain_length(const char *text, size_t *len)
{
    if (strpbrk(text, "'\"#"))
        return false;
    size_t a = strspn(text, " \t\r\n\v\f"), b = strlen(text);
    while (b > a && strchr(" \t\r\n\v\f", text[b - 1]))
        b--;
    *len = b - a;
    return true;
}

static void *run(void *arg)
{
    const char *text = arg;
    const result_store *rs = fuzz_results();
    json_decref(expr_names(text, rs));
    char msg[400] = "";
    size_t at = 0, len;
    expr *e = expr_parse(text, msg, sizeof msg, &at);
    bool refused = e == NULL;
    if (plain_length(text, &len) && len > EXPR_MAX_BYTES)
        check(refused && strstr(msg, "too long"), "an expression past EXPR_MAX_BYTES is not refused as too long");
    if (refused) {
        check(msg[0] != '\0', "a syntax error without a message");
    } else {
        expr_report rep;
        if (expr_check(e, rs, &rep) != 1)
            check_report(&rep);
        json_decref(rep.lines);
        double v;
        if (expr_number(e, rs, &v, &rep) != 0)
            check_report(&rep);
        json_decref(rep.lines);
        expr_free(e);
    }
    check_cell("%score", text, refused);      /* %assert parses the same way (assert.c) */
    check_cell("%echo", text, refused);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = grow(data, size);
    if (!text)
        return 0;
    pthread_attr_t attr;
    pthread_t t;
    check(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, STACK) == 0, "thread attributes");
    check(pthread_create(&t, &attr, run, text) == 0, "a thread with a small stack");
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    free(text);
    return 0;
}
