/* assignment.c — %assignment NAME --graded FAMILY,...: the session's
 * assignment mode (magic/assignment.h). A problem set's locked first cell
 * declares it; from then on, until the kernel restarts, --show-source and
 * --as-kernel are refused for the graded families, so that the built-in
 * kernel the student is asked to write is not one cell away. Another
 * %assignment only adds families; nothing removes one. %assignment alone says
 * what the session grades (a deployment's CUDALAB_ASSIGNMENT included).
 */
#include <stdio.h>
#include <string.h>

#include "magic/assignment.h"
#include "magic/magic.h"

/* What the session grades, one line per assignment: "ps2 grades matmul, histo". */
static int list(magic_ctx *ctx)
{
    char text[1024] = "";
    size_t used = 0;
    const char *name, *family, *last = NULL;
    for (size_t i = 0; (family = assignment_graded_at(ctx->lab, i, &name)) && used < sizeof text; i++) {
        if (last && strcmp(last, name) == 0)
            used += (size_t)snprintf(text + used, sizeof text - used, ", %s", family);
        else
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%s grades %s", last ? "\n" : "", name,
                                     family);
        last = name;
    }
    if (!last) {
        magic_stream(ctx, "stdout", "no assignment: --show-source and --as-kernel show every family's kernels\n");
        return 0;
    }
    if (used < sizeof text)
        snprintf(text + used, sizeof text - used, "\n--show-source and --as-kernel are off for the graded "
                 "families until the kernel restarts\n");
    magic_stream(ctx, "stdout", text);
    return 0;
}

static int assignment_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const char *graded = json_string_value(json_object_get(params, "graded"));
    if (!name && !graded)
        return list(ctx);
    char why[400];
    if (!name || assignment_name_check(name, why, sizeof why) != 0)
        return magic_error(ctx, "UsageError", "%%assignment: %s", name ? why : "give the assignment's NAME");
    if (!graded)
        return magic_error(ctx, "UsageError", "%%assignment %s: --graded FAMILY,... names what it grades", name);
    for (const char *p = graded;; p++) {
        p += strspn(p, " ");
        size_t n = strcspn(p, ",");
        char family[64];
        snprintf(family, sizeof family, "%.*s", (int)(n < sizeof family ? n : sizeof family - 1), p);
        family[strcspn(family, " ")] = '\0';
        if (assignment_declare(ctx->lab, name, family, why, sizeof why) != 0)
            return magic_error(ctx, "UsageError", "%%assignment %s --graded: %s", name, why);
        p += n;
        if (!*p)
            break;
    }
    return list(ctx);
}

static const flag_spec assignment_flags[] = {
    {.name = "graded", .type = FLAG_STRING,
     .help = "the families whose kernels the assignment grades (a comma list): their --show-source and "
             "--as-kernel are refused from now until the kernel restarts"},
    {.name = NULL},
};

static const char *const assignment_examples[] = {
    "%assignment ps2 --graded matmul,histo,reduce",
    "%assignment",
    NULL,
};

const magic_spec magic_assignment = {
    MAGIC_LOCAL_LINE(assignment),
    .summary = "Declare a graded assignment: the built-in kernels of its families are not shown",
    .description =
        "Declares that the assignment NAME grades the students' kernels of the families given to "
        "--graded. From then on, until the kernel restarts, --show-source and --as-kernel are refused "
        "for those families (AssignmentError), so that the built-in kernel a student is asked to write "
        "cannot be pasted in as theirs; the other families still show their sources. Another "
        "%assignment adds families, never removes them. A problem set declares it in a locked cell; a "
        "deployment declares it for every session with the environment variable "
        "CUDALAB_ASSIGNMENT=NAME:FAMILY,FAMILY (several assignments separated by ';'), in the "
        "kernelspec's env, so that deleting the cell does not lift it. %assignment alone says what the "
        "session grades.\n\n"
        "The instructor's side: cudalab --similarity compares the graded kernels of the submitted "
        "notebooks with the built-in variants and with each other (README, \"Assignments\").",
    .flags = assignment_flags,
    .positional = "NAME",
    .positional_help = "the assignment's name (letters, digits, '_', '-', '.'), as its error messages say it; "
                       "none: say what the session grades",
};
