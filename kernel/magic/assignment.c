/* assignment.c — the session's graded families (assignment.h), the part
 * LAB_ASSIGNMENT of its lab, seeded from ASSIGNMENT_ENV when first made.
 */
#include "magic/assignment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/text.h"
#include "magic/families.h"

#define GRADED_MAX 32                   /* more than there are families */

typedef struct graded {
    const char *family;                 /* the family_spec's magic: static */
    char name[ASSIGNMENT_NAME_MAX];     /* the assignment that grades it */
} graded;

typedef struct assignment_part {
    size_t count;
    graded at[GRADED_MAX];
} assignment_part;

int assignment_name_check(const char *name, char *why, size_t len)
{
    size_t n = strlen(name);
    if (n == 0 || n >= ASSIGNMENT_NAME_MAX)
        return fail_into(why, len, "an assignment's name has 1 to %d characters", ASSIGNMENT_NAME_MAX - 1);
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_-.", *p)))
            return fail_into(why, len, "'%s': an assignment's name has letters, digits, '_', '-' and '.' only", name);
    return 0;
}

void assignment_gradable(char *buf, size_t len)
{
    size_t at = 0, used = 0;
    buf[0] = '\0';
    for (const family_spec *g; (g = family_next_taking_kernels(&at)) && used < len;)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", g->magic);
}

/* Adds (name, f) unless f is graded already. */
static int add(assignment_part *a, const char *name, const family_spec *f, char *why, size_t len)
{
    for (size_t i = 0; i < a->count; i++)
        if (a->at[i].family == f->magic)
            return 0;
    if (a->count == GRADED_MAX)
        return fail_into(why, len, "%s", "too many graded families");
    a->at[a->count].family = f->magic;
    snprintf(a->at[a->count].name, sizeof a->at[a->count].name, "%s", name);
    a->count++;
    return 0;
}

static int declare_in(assignment_part *a, const char *name, const char *family, char *why, size_t len)
{
    if (assignment_name_check(name, why, len) != 0)
        return -1;
    const family_spec *f = family_find(family);
    if (!f || !f->student) {
        char have[256];
        assignment_gradable(have, sizeof have);
        return fail_into(why, len, "'%s' is not a family that takes students' kernels (%s)", family, have);
    }
    return add(a, name, f, why, len);
}

/* One "NAME:FAMILY,FAMILY" of the environment's value, len bytes at s. */
static int declare_env_item(assignment_part *a, const char *s, size_t len, char *why, size_t wlen)
{
    const char *colon = memchr(s, ':', len);
    if (!colon || colon == s || (size_t)(colon - s) >= ASSIGNMENT_NAME_MAX)
        return fail_into(why, wlen, "%s", "an item is not NAME:FAMILY,...");
    char name[ASSIGNMENT_NAME_MAX], family[64];
    snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
    const char *end = s + len;
    for (const char *p = colon + 1; p <= end;) {
        size_t n = strcspn(p, ",;");
        if (p + n > end)
            n = (size_t)(end - p);
        if (n == 0 || n >= sizeof family)
            return fail_into(why, wlen, "%s", "an empty or overlong family");
        snprintf(family, sizeof family, "%.*s", (int)n, p);
        if (declare_in(a, name, family, why, wlen) != 0)
            return -1;
        p += n + 1;
    }
    return 0;
}

/* The deployment's declaration; a malformed one grades every family. */
static void declare_env(assignment_part *a)
{
    const char *env = getenv(ASSIGNMENT_ENV);
    if (!env || !env[0])
        return;
    char why[300] = "";
    for (const char *p = env; *p;) {
        size_t n = strcspn(p, ";");
        if (n > 0 && declare_env_item(a, p, n, why, sizeof why) != 0) {
            klog("%s=%s: %s; every family that takes students' kernels is graded", ASSIGNMENT_ENV, env, why);
            size_t at = 0;
            for (const family_spec *g; (g = family_next_taking_kernels(&at));)
                add(a, "this course", g, why, sizeof why);
            return;
        }
        p += n + (p[n] == ';');
    }
}

/* The session's part, made (and seeded from the environment) on first use; NULL when out of memory. */
static assignment_part *part_of(lab_session *lab)
{
    assignment_part *a = lab_part(lab, LAB_ASSIGNMENT);
    if (!a && (a = lab_part_make(lab, LAB_ASSIGNMENT, sizeof *a, NULL)))
        declare_env(a);
    return a;
}

int assignment_declare(lab_session *lab, const char *name, const char *family, char *why, size_t len)
{
    assignment_part *a = part_of(lab);
    if (!a)
        return fail_into(why, len, "%s", lab ? "out of memory" : "no session to hold an assignment");
    return declare_in(a, name, family, why, len);
}

const char *assignment_graded_at(lab_session *lab, size_t i, const char **name)
{
    assignment_part *a = part_of(lab);
    if (!a || i >= a->count)
        return NULL;
    if (name)
        *name = a->at[i].name;
    return a->at[i].family;
}

const char *assignment_grading(lab_session *lab, const char *family)
{
    const char *name, *f;
    for (size_t i = 0; (f = assignment_graded_at(lab, i, &name)); i++)
        if (strcmp(f, family) == 0)
            return name;
    /* no part to hold it (out of memory, no session): the environment alone, read each time */
    if (!lab_part(lab, LAB_ASSIGNMENT) && getenv(ASSIGNMENT_ENV) && getenv(ASSIGNMENT_ENV)[0]) {
        static _Thread_local assignment_part env_only;
        env_only.count = 0;
        declare_env(&env_only);
        for (size_t i = 0; i < env_only.count; i++)
            if (strcmp(env_only.at[i].family, family) == 0)
                return env_only.at[i].name;
    }
    return NULL;
}
