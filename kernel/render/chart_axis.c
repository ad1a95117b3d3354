/* chart_axis.c — the axes of a drawn chart (declared in chart.h): a domain
 * with round ticks, linear or log2, and where a value falls on it.
 *
 * Deterministic by construction: tick steps are found by multiplying by ten
 * and log2 bounds by frexp, never by log10 or pow, so that no libm can move a
 * tick or change a label.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/chart.h"
#include "render/layout.h"

/* A step of 1, 2 or 5 times a power of ten giving at most n intervals over
 * span; 0 when there is none. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = 1;
    if (!(raw > 0) || !isfinite(raw))
        return 0;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

void chart_axis_linear(struct chart_axis *a, double lo, double hi, double min_step)
{
    if (!(lo < hi)) {
        double d = lo != 0 ? fabs(lo) / 2 : 1;
        lo -= d;
        hi = lo + 2 * d;
    }
    double step = nice_step(hi - lo, 5);
    if (step > 0 && step < min_step)
        step = min_step;                    /* 1, 2, 3 rather than 1, 1.2, 1.4, ... */
    double k0 = step > 0 ? floor(lo / step) : 0, k1 = step > 0 ? ceil(hi / step) : 0;
    a->log = 0;
    if (step > 0 && k1 > k0 && k1 - k0 < CHART_MAX_TICKS && isfinite(k0 * step)
        && isfinite(k1 * step)) {
        a->lo = k0 * step;
        a->hi = k1 * step;
        a->nticks = 0;
        for (double k = k0; k <= k1; k++)
            a->ticks[a->nticks++] = k * step + 0.0;     /* + 0.0: no "-0" */
    } else {                                /* spans near the limits of a double */
        a->lo = lo;
        a->hi = hi;
        a->ticks[0] = lo;
        a->ticks[1] = hi;
        a->nticks = 2;
    }
}

static int floor_div(int a, int b)
{
    return a / b - (a % b != 0 && a < 0);
}

/* Every power of two, or every 2nd, 4th, ..., so that about 8 are labelled.
 * floor and ceil of log2 come exactly from frexp: x = m * 2^e, 0.5 <= m < 1. */
void chart_axis_log2(struct chart_axis *a, double lo, double hi)
{
    int e = 0;
    double m = frexp(lo, &e);
    int e0 = e - 1;
    e = 0;
    m = frexp(hi, &e);
    int e1 = m == 0.5 ? e - 1 : e;
    if (e0 >= e1) {
        e0 = e1 - 1;
        e1++;
    }
    int step = 1;
    while ((e1 - e0 + step - 1) / step > 8)
        step *= 2;
    e0 = floor_div(e0, step) * step;
    e1 = -floor_div(-e1, step) * step;
    a->log = 1;
    a->lo = e0;
    a->hi = e1;
    a->nticks = 0;
    for (int k = e0; k <= e1 && a->nticks < CHART_MAX_TICKS; k += step)
        a->ticks[a->nticks++] = k;
}

/* Halved first so that no difference of two finite doubles overflows. */
double chart_axis_frac(const struct chart_axis *a, double u)
{
    double t = (u * 0.5 - a->lo * 0.5) / (a->hi * 0.5 - a->lo * 0.5);
    return isfinite(t) ? t : 0;
}

double chart_axis_value_frac(const struct chart_axis *a, double v)
{
    return chart_axis_frac(a, a->log ? log2(v) : v);
}

/* 2^e as a number ("0.125", "4096") or as 2 with a superscript exponent ("2²⁰"). */
static void pow2_label(int e, int number, char *buf, size_t len)
{
    static const char *const sup[] = { "\u2070", "\u00b9", "\u00b2", "\u00b3", "\u2074",
                                       "\u2075", "\u2076", "\u2077", "\u2078", "\u2079" };
    if (number) {
        layout_real(ldexp(1, e), buf, len);
        return;
    }
    char digits[16];
    snprintf(digits, sizeof digits, "%d", e);
    snprintf(buf, len, "2");
    for (const char *d = digits; *d; d++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s", *d == '-' ? "\u207b" : sup[*d - '0']);
    }
}

/* One style for a whole axis: numbers while every tick lies in 1/8 .. 2^19
 * (a 6-digit label at most), powers of two as soon as one does not, so that
 * an axis never reads "524288, 2²⁰". */
void chart_axis_label(const struct chart_axis *a, size_t i, char *buf, size_t len)
{
    if (!a->log) {
        layout_real(a->ticks[i], buf, len);
        return;
    }
    int numbers = a->ticks[0] >= -3 && a->ticks[a->nticks - 1] < 20;
    pow2_label((int)a->ticks[i], numbers, buf, len);
}
