/* test_highlight.c — unit tests for the HTML syntax highlighter of "code" view
 * blocks (kernel/render/highlight.c): every byte comes out escaped, each kind
 * of token gets its class, and unclosed comments and strings lose nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

/* The highlighted HTML with every <span ...> and </span> taken out. */
static char *strip_spans(const char *html)
{
    char *out = malloc(strlen(html) + 1), *o = out;
    while (*html) {
        if (strncmp(html, "<span ", 6) == 0 || strncmp(html, "</span>", 7) == 0)
            html = strchr(html, '>') + 1;
        else
            *o++ = *html++;
    }
    *o = '\0';
    return out;
}

/* Whether html has `word` as a whole span of class cls. */
static int has_span(const char *html, const char *cls, const char *word)
{
    char open[64];
    snprintf(open, sizeof open, "<span class=\"%s\"", cls);
    for (const char *p = strstr(html, open); p; p = strstr(p + 1, open)) {
        const char *text = strchr(p, '>') + 1;
        size_t n = strlen(word);
        if (strncmp(text, word, n) == 0 && strncmp(text + n, "</span>", 7) == 0)
            return 1;
    }
    return 0;
}

static void test_classes(void **state)
{
    (void)state;
    const char *src = "#include <stdio.h>\n"
                      "template <int TILE>\n"
                      "__global__ void k(const float *a, unsigned n) // one \"thread\"\n"
                      "{\n"
                      "    __shared__ float s[TILE];\n"
                      "    if (threadIdx.x < n) s[0] = a[0] * 1.5e-3f + 0x1F;\n"
                      "    __syncthreads();\n"
                      "    /* a <b> & c */ char c = '<';\n"
                      "    const char *t = \"x < y\";\n"
                      "}\n";
    char *h = highlight_html(src);
    assert_non_null(h);
    assert_true(has_span(h, "cl-pp", "#include &lt;stdio.h&gt;"));
    assert_true(has_span(h, "cl-kw", "template"));
    assert_true(has_span(h, "cl-kw", "const"));
    assert_true(has_span(h, "cl-kw", "if"));
    assert_true(has_span(h, "cl-ty", "int"));
    assert_true(has_span(h, "cl-ty", "float"));
    assert_true(has_span(h, "cl-ty", "unsigned"));
    assert_true(has_span(h, "cl-cuda", "__global__"));
    assert_true(has_span(h, "cl-cuda", "__shared__"));
    assert_true(has_span(h, "cl-cuda", "__syncthreads"));
    assert_true(has_span(h, "cl-cuda", "threadIdx"));
    assert_true(has_span(h, "cl-num", "1.5e-3f"));
    assert_true(has_span(h, "cl-num", "0x1F"));
    assert_true(has_span(h, "cl-num", "0"));
    assert_true(has_span(h, "cl-com", "// one &quot;thread&quot;"));
    assert_true(has_span(h, "cl-com", "/* a &lt;b&gt; &amp; c */"));
    assert_true(has_span(h, "cl-str", "&#39;&lt;&#39;"));
    assert_true(has_span(h, "cl-str", "&quot;x &lt; y&quot;"));
    /* names that are none of these stay plain */
    assert_false(has_span(h, "cl-ty", "k"));
    assert_null(strstr(h, ">TILE</span>"));
    free(h);
}

/* Taking the spans away and unescaping gives the source back, byte for byte. */
static void test_every_byte_escaped_once(void **state)
{
    (void)state;
    const char *src = "a<b && c>d \"q\" 'x' // é < ü\n  #define X 1 /* <tag> */\n";
    char *h = highlight_html(src);
    char *plain = strip_spans(h);
    assert_null(strchr(plain, '<'));
    assert_null(strchr(plain, '>'));
    assert_string_equal(plain, "a&lt;b &amp;&amp; c&gt;d &quot;q&quot; &#39;x&#39; // é &lt; ü\n"
                               "  #define X 1 /* &lt;tag&gt; */\n");
    /* a directive indented by blanks is one; a # after code is not */
    assert_true(has_span(h, "cl-pp", "#define X 1 "));
    free(plain);
    free(h);
}

static void test_unclosed_and_empty(void **state)
{
    (void)state;
    char *h = highlight_html("x /* never closed <");
    assert_true(has_span(h, "cl-com", "/* never closed &lt;"));
    free(h);
    h = highlight_html("s = \"open\nnext");
    assert_true(has_span(h, "cl-str", "&quot;open"));
    char *plain = strip_spans(h);
    assert_string_equal(plain, "s = &quot;open\nnext");
    free(plain);
    free(h);
    h = highlight_html("");
    assert_string_equal(h, "");
    free(h);
    h = highlight_html("a = b # c");
    assert_null(strstr(h, "cl-pp"));
    free(h);
}

/* A "code" block: verbatim in text/plain, highlighted in text/html. */
static void test_code_block(void **state)
{
    (void)state;
    json_t *view = view_new(NULL);
    json_array_append_new(json_object_get(view, "blocks"),
                          json_pack("{s:s, s:s, s:s}", "type", "code", "language", "cuda", "text",
                                    "__global__ void k()\n{\n    int i = 1;\n}\n"));
    char *text = render_text(view), *html = render_html(view);
    assert_string_equal(text, "__global__ void k()\n{\n    int i = 1;\n}\n");
    assert_non_null(strstr(html, "<pre class=\"cudalab-code\""));
    assert_true(has_span(html, "cl-cuda", "__global__"));
    free(text);
    free(html);
    json_decref(view);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_every_byte_escaped_once),
        cmocka_unit_test(test_unclosed_and_empty),
        cmocka_unit_test(test_code_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
