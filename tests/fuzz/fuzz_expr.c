/* fuzz_expr.c — libFuzzer target for the %assert/%score language: expr_parse,
 * then expr_check and expr_number over a fixed set of results (fuzz_results.h:
 * a sweep, an older run, a histogram with bins, a device list).
 *
 * The input is the expression text (cut at its first NUL). Properties checked
 * (abort() on violation): every allocation is freed; a parse error has a
 * message and an offset inside the text; an evaluation that fails names the
 * error and explains it; messages and "where" lines of valid UTF-8 input are
 * valid UTF-8 (they become a Jupyter error's JSON); the two evaluations agree
 * (a number for %score is a true or false %assert).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/results.h"
#include "grade/expr.h"
#include "fuzz_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_expr: property violated: %s\n", what);
        abort();
    }
}

static bool utf8_valid(const char *s)
{
    json_t *j = json_string(s);     /* jansson refuses invalid UTF-8, as the kernel's replies would */
    json_decref(j);
    return j != NULL;
}

static bool input_utf8(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    json_decref(j);
    return j != NULL;
}

static void check_report(const expr_report *rep, bool utf8)
{
    check(rep->error.ename[0] != '\0', "an error without a name");
    check(rep->error.evalue[0] != '\0', "an error without a message");
    if (!utf8)
        return;
    check(utf8_valid(rep->error.evalue), "an error message that is not UTF-8");
    size_t i;
    json_t *l;
    json_array_foreach(rep->lines, i, l)
        check(json_is_string(l), "a where line that is not UTF-8");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const result_store *rs = fuzz_results();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    bool utf8 = input_utf8(text, strlen(text));
    json_t *names = expr_names(text, rs);      /* completion after "text." */
    check(json_is_array(names), "completion without a list");
    json_decref(names);
    char msg[400];
    size_t at = 0;
    expr *e = expr_parse(text, msg, sizeof msg, &at);
    if (!e) {
        check(msg[0] != '\0', "a syntax error without a message");
        check(at == SIZE_MAX || at <= strlen(text), "a syntax error offset past the text");
        check(!utf8 || utf8_valid(msg), "a syntax error message that is not UTF-8");
        free(text);
        return 0;
    }
    expr_report rep;
    int holds = expr_check(e, rs, &rep);
    if (holds != 1)
        check_report(&rep, utf8);
    json_decref(rep.lines);
    double v;
    int rc = expr_number(e, rs, &v, &rep);
    if (rc != 0)
        check_report(&rep, utf8);
    else
        check(holds == (v != 0), "%score and %assert disagree about the same value");
    json_decref(rep.lines);
    expr_free(e);
    free(text);
    return 0;
}
