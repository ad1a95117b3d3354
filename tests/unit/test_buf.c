/* test_buf.c — kernel/base's growable memory (buf.h) and UTF-8 helpers (utf8.h):
 * appends of bytes, strings and printf, ownership handed over by strbuf_take, a
 * failed append that keeps what was there and drops what follows (sizes past
 * SIZE_MAX, and one no allocator grants), a typed array's doubling, and
 * characters counted, found, encoded and cut on their boundaries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/utf8.h"

/* A request no allocator grants (an exabyte), yet not past SIZE_MAX. */
#define UNGRANTABLE (SIZE_MAX / 8)

static void appends_and_takes(void **state)
{
    (void)state;
    strbuf b = STRBUF_INIT;
    char *empty = strbuf_take(&b);          /* nothing appended: "", still the caller's to free */
    assert_string_equal(empty, "");
    free(empty);
    assert_int_equal(strbuf_puts(&b, "ab"), 0);
    assert_int_equal(strbuf_append(&b, "c\0d", 3), 0);      /* bytes, a NUL among them */
    assert_int_equal(strbuf_printf(&b, "[%d %s]", 42, "x"), 0);
    assert_int_equal(b.len, 11);
    assert_memory_equal(b.data, "abc\0d[42 x]", 12);      /* and a NUL after them */
    char *s = strbuf_take(&b);
    assert_memory_equal(s, "abc\0d[42 x]", 12);
    assert_null(b.data);                                  /* handed over: the buffer is empty */
    assert_int_equal(b.len, 0);
    free(s);
}

static void grows_past_many_doublings(void **state)
{
    (void)state;
    strbuf b = STRBUF_INIT;
    for (int i = 0; i < 100000; i++)
        assert_int_equal(strbuf_printf(&b, "%05d", i), 0);
    assert_int_equal(b.len, 500000);
    assert_true(b.cap > b.len);
    assert_memory_equal(b.data + 5 * 99999, "99999", 6);
    /* a printf longer than any stack buffer */
    strbuf_reset(&b);
    assert_int_equal(strbuf_printf(&b, "%*s|", 100000, "x"), 0);
    assert_int_equal(b.len, 100001);
    assert_string_equal(b.data + 99999, "x|");
    strbuf_free(&b);
    assert_null(b.data);
}

static void reserve_for_a_read(void **state)
{
    (void)state;
    strbuf b = STRBUF_INIT;
    strbuf_puts(&b, "head:");
    assert_int_equal(strbuf_reserve(&b, 1000), 0);
    assert_true(b.cap >= b.len + 1000 + 1);
    memset(b.data + b.len, 'r', 700);                    /* what a read() wrote */
    strbuf_put_end(&b, 700);
    assert_int_equal(b.len, 705);
    assert_int_equal(strlen(b.data), 705);
    strbuf_free(&b);
}

static void reset_keeps_memory_and_forgets_failure(void **state)
{
    (void)state;
    strbuf b = STRBUF_INIT;
    strbuf_puts(&b, "first");
    char *mem = b.data;
    strbuf_reserve(&b, SIZE_MAX);
    assert_true(b.failed);
    strbuf_reset(&b);
    assert_false(b.failed);
    assert_ptr_equal(b.data, mem);
    assert_string_equal(b.data, "");
    assert_int_equal(strbuf_puts(&b, "second"), 0);
    assert_string_equal(b.data, "second");
    strbuf_free(&b);
}

/* Past SIZE_MAX, or more than an allocator grants: the append fails, what was
 * there stays, what follows is dropped, and strbuf_take says so with NULL. */
static void a_failed_append_keeps_what_was_there(void **state)
{
    (void)state;
    const size_t absurd[] = { SIZE_MAX, SIZE_MAX - 3, UNGRANTABLE };
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        strbuf b = STRBUF_INIT;
        strbuf_puts(&b, "abc");
        size_t cap = b.cap;
        assert_int_equal(strbuf_reserve(&b, absurd[i]), -1);
        assert_true(b.failed);
        assert_int_equal(b.cap, cap);
        assert_string_equal(b.data, "abc");
        assert_int_equal(strbuf_puts(&b, "more"), -1);       /* dropped, even though it would fit */
        assert_int_equal(strbuf_printf(&b, "%d", 1), -1);
        assert_string_equal(b.data, "abc");
        assert_null(strbuf_take(&b));                        /* freed, and said */
        assert_null(b.data);
        assert_false(b.failed);
    }
    strbuf b = STRBUF_INIT;
    strbuf_puts(&b, "x");
    assert_int_equal(strbuf_append(&b, "y", SIZE_MAX - 1), -1);   /* len + n + NUL past SIZE_MAX */
    assert_string_equal(b.data, "x");
    strbuf_free(&b);
}

static void array_grows_by_doubling(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_int_equal(array_grow(&v, &cap, 1, sizeof *v), 0);
    assert_int_equal(cap, 8);
    assert_int_equal(array_grow(&v, &cap, 8, sizeof *v), 0);
    assert_int_equal(cap, 8);                             /* room already */
    for (size_t n = 0; n < 1000; n++) {
        assert_int_equal(array_grow(&v, &cap, n + 1, sizeof *v), 0);
        v[n] = (int)n;
    }
    assert_int_equal(cap, 1024);
    assert_int_equal(array_grow(&v, &cap, 5000, sizeof *v), 0);
    assert_int_equal(cap, 8192);
    for (int n = 0; n < 1000; n++)
        assert_int_equal(v[n], n);
    free(v);
}

static void array_refuses_absurd_sizes(void **state)
{
    (void)state;
    double *v = NULL;
    size_t cap = 0;
    assert_int_equal(array_grow(&v, &cap, 4, sizeof *v), 0);
    double *before = v;
    v[0] = 1.5;
    /* need * size past SIZE_MAX, exactly at it, and more than an allocator grants */
    const size_t absurd[] = { SIZE_MAX, SIZE_MAX / sizeof *v + 1, UNGRANTABLE / sizeof *v };
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        assert_int_equal(array_grow(&v, &cap, absurd[i], sizeof *v), -1);
        assert_ptr_equal(v, before);
        assert_int_equal(cap, 8);
        assert_true(v[0] == 1.5);
    }
    free(v);
}

static void utf8_counts_and_finds_characters(void **state)
{
    (void)state;
    const char *s = "a\xC2\xB5s\xC3\x97\xE2\x82\xAC\xF0\x9F\x98\x80!";   /* a µ s × € 😀 ! */
    assert_int_equal(utf8_chars(""), 0);
    assert_int_equal(utf8_chars(s), 7);
    assert_int_equal(utf8_chars_n(s, 0), 0);
    assert_int_equal(utf8_chars_n(s, 2), 2);              /* µ starts in the first two bytes */
    assert_int_equal(utf8_chars_n(s, 3), 2);
    assert_int_equal(utf8_chars_n(s, 1000), 7);           /* past the end: all of s */
    const size_t starts[] = { 0, 1, 3, 4, 6, 9, 13, 14 };  /* then the end, for any k past it */
    for (size_t k = 0; k < 8; k++)
        assert_int_equal(utf8_offset(s, k), starts[k]);
    assert_int_equal(utf8_offset(s, 1000), strlen(s));
    assert_int_equal(utf8_offset("", 0), 0);
    assert_int_equal(utf8_char_bytes('a'), 1);
    assert_int_equal(utf8_char_bytes('\xC2'), 2);
    assert_int_equal(utf8_char_bytes('\xE2'), 3);
    assert_int_equal(utf8_char_bytes('\xF0'), 4);
    assert_int_equal(utf8_char_bytes('\x80'), 1);         /* a continuation byte starts nothing */
}

static void utf8_encodes_at_each_length(void **state)
{
    (void)state;
    const struct { unsigned long cp; const char *utf8; } cases[] = {
        { 0x41, "A" }, { 0x7F, "\x7F" }, { 0x80, "\xC2\x80" }, { 0xB5, "\xC2\xB5" }, { 0x7FF, "\xDF\xBF" },
        { 0x800, "\xE0\xA0\x80" }, { 0x20AC, "\xE2\x82\xAC" }, { 0xFFFF, "\xEF\xBF\xBF" },
        { 0x10000, "\xF0\x90\x80\x80" }, { 0x1F600, "\xF0\x9F\x98\x80" }, { 0x10FFFF, "\xF4\x8F\xBF\xBF" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[4];
        size_t n = utf8_encode(cases[i].cp, out);
        assert_int_equal(n, strlen(cases[i].utf8));
        assert_memory_equal(out, cases[i].utf8, n);
        assert_int_equal(utf8_char_bytes(out[0]), n);
    }
}

static void utf8_cuts_on_boundaries(void **state)
{
    (void)state;
    const char *s = "ab\xE2\x82\xAC" "c";                 /* a b € c */
    assert_int_equal(utf8_clip(s, 0), 0);
    assert_int_equal(utf8_clip(s, 2), 2);
    assert_int_equal(utf8_clip(s, 3), 2);                 /* inside €: back to its start */
    assert_int_equal(utf8_clip(s, 4), 2);
    assert_int_equal(utf8_clip(s, 5), 5);
    assert_int_equal(utf8_clip(s, 1000), 6);
    char cut[8];
    for (size_t keep = 3; keep <= 4; keep++) {             /* € cut after one or two of its bytes */
        memcpy(cut, s, keep);
        cut[keep] = '\0';
        utf8_trim(cut);
        assert_string_equal(cut, "ab");
    }
    strcpy(cut, "ab\xE2\x82\xAC");
    utf8_trim(cut);
    assert_string_equal(cut, "ab\xE2\x82\xAC");           /* whole: kept */
    strcpy(cut, "\xC2");
    utf8_trim(cut);
    assert_string_equal(cut, "");
    strcpy(cut, "x\x80");
    utf8_trim(cut);
    assert_string_equal(cut, "x\x80");                    /* a stray continuation byte is not a cut */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_and_takes),
        cmocka_unit_test(grows_past_many_doublings),
        cmocka_unit_test(reserve_for_a_read),
        cmocka_unit_test(reset_keeps_memory_and_forgets_failure),
        cmocka_unit_test(a_failed_append_keeps_what_was_there),
        cmocka_unit_test(array_grows_by_doubling),
        cmocka_unit_test(array_refuses_absurd_sizes),
        cmocka_unit_test(utf8_counts_and_finds_characters),
        cmocka_unit_test(utf8_encodes_at_each_length),
        cmocka_unit_test(utf8_cuts_on_boundaries),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
