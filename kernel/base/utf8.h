/* utf8.h — UTF-8 below every layer: characters counted and found by index
 * (a frontend's cursor and an error's column are in characters, a C string's
 * offsets in bytes), a code point encoded, and text cut at a character's
 * boundary (user text quoted in an error must stay valid UTF-8 for the JSON it
 * goes into). A character here is a code point: every byte but a continuation
 * byte (10xxxxxx) starts one.
 */
#ifndef CUDALAB_BASE_UTF8_H
#define CUDALAB_BASE_UTF8_H

#include <stddef.h>

/* Whether byte c starts a character (it is not a continuation byte). */
static inline int utf8_starts(char c)
{
    return ((unsigned char)c & 0xC0) != 0x80;
}

/* The bytes of the character whose first byte is lead, as its lead says (1 for
 * a byte that starts none); the bytes after it are not looked at. */
static inline size_t utf8_char_bytes(char lead)
{
    unsigned char c = (unsigned char)lead;
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* The characters of s (columns where each is one wide: "µs" and "×" line up). */
size_t utf8_chars(const char *s);
/* The characters that start in s's first n bytes (all of s when it is shorter). */
size_t utf8_chars_n(const char *s, size_t n);
/* Where character k (0-based) of s starts, in bytes: its end when s has no more. */
size_t utf8_offset(const char *s, size_t k);

/* The UTF-8 of code point cp (at most U+10FFFF; the caller refuses the rest)
 * into out; returns its bytes, 1 to 4. */
size_t utf8_encode(unsigned long cp, char out[4]);

/* The longest prefix of s of at most max bytes that ends on a UTF-8 boundary. */
int utf8_clip(const char *s, size_t max);
/* Drops an incomplete UTF-8 sequence at the end of buf (after snprintf cut it). */
void utf8_trim(char *buf);

#endif
