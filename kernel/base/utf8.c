/* utf8.c — the UTF-8 helpers of utf8.h. */
#include <string.h>

#include "base/utf8.h"

size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += utf8_starts(*s);
    return n;
}

size_t utf8_chars_n(const char *s, size_t n)
{
    size_t chars = 0;
    for (size_t i = 0; i < n && s[i]; i++)
        chars += utf8_starts(s[i]);
    return chars;
}

size_t utf8_offset(const char *s, size_t k)
{
    size_t i = 0;
    for (size_t chars = 0; s[i]; i++)
        if (utf8_starts(s[i]) && chars++ == k)
            break;
    return i;
}

size_t utf8_encode(unsigned long cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int utf8_clip(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    while (n > 0 && !utf8_starts(s[n]))
        n--;
    return (int)n;
}

void utf8_trim(char *buf)
{
    size_t len = strlen(buf), j = len;
    while (j > 0 && len - j < 3 && !utf8_starts(buf[j - 1]))
        j--;
    if (j == 0)
        return;
    if ((unsigned char)buf[j - 1] < 0xC0)
        return;                         /* ASCII, or a continuation byte without its lead */
    if (len - (j - 1) < utf8_char_bytes(buf[j - 1]))
        buf[j - 1] = '\0';
}
