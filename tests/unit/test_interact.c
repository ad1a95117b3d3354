/* test_interact.c — %interact's plan (lang/interact.h: which lists become
 * which controls, the params of a run, the refusals) and the widget models'
 * states (shell/widget.h: every key ipywidgets 8 sends, references as
 * IPY_MODEL_ strings). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lang/interact.h"
#include "lang/lang.h"
#include "shell/widget.h"
#include "test_lab.h"

static void plan_ok(const char *text, interact_plan *p)
{
    error_info err;
    size_t at;
    if (interact_plan_parse(test_lab(), text, p, &err, &at) != 0)
        fail_msg("'%s' refused: %s: %s", text, err.ename, err.evalue);
}

/* The refusal of text, which must contain `says`. */
static void plan_refused(const char *text, const char *says)
{
    interact_plan p;
    error_info err;
    size_t at;
    assert_int_equal(interact_plan_parse(test_lab(), text, &p, &err, &at), -1);
    if (!strstr(err.evalue, says))
        fail_msg("'%s': '%s' does not say '%s'", text, err.evalue, says);
    interact_plan_free(&p);
}

static const char *label(const interact_control *c, size_t i)
{
    return json_string_value(json_array_get(c->labels, i));
}

static void numeric_lists_are_sliders_names_drop_downs(void **state)
{
    interact_plan p;
    plan_ok("%matmul --size 2048 --variant naive,tiled --tile 2,4,8,16,32", &p);
    assert_string_equal(p.cmd.magic->name, "matmul");
    assert_int_equal(p.nctl, 2);            /* in the order of the magic's flags: --variant before --tile */
    const interact_control *variant = &p.ctl[0], *tile = &p.ctl[1];
    assert_string_equal(tile->key, "tile");
    assert_true(tile->numeric);
    assert_int_equal(json_array_size(tile->labels), 5);
    assert_string_equal(label(tile, 0), "2");
    assert_string_equal(label(tile, 4), "32");
    assert_string_equal(variant->key, "variant");
    assert_false(variant->numeric);
    assert_string_equal(label(variant, 1), "tiled");
    interact_plan_free(&p);
}

static void a_run_has_one_value_per_list(void **state)
{
    interact_plan p;
    plan_ok("%matmul --size 64 --tile 4,8,16 --block 8x8,16x16", &p);
    int index[INTERACT_MAX_CONTROLS] = { 0 };
    int tile = strcmp(p.ctl[0].key, "tile") == 0 ? 0 : 1;
    index[tile] = 2;
    index[1 - tile] = 1;
    assert_string_equal(label(&p.ctl[1 - tile], 1), "16x16");     /* dimensions as typed */
    json_t *params = interact_params(&p, index);
    assert_int_equal(json_integer_value(json_object_get(params, "tile")), 16);
    json_t *block = json_object_get(params, "block");
    assert_true(json_is_array(block) && json_integer_value(json_array_get(block, 0)) == 16);
    assert_int_equal(json_integer_value(json_object_get(params, "size")), 64);
    /* the plan keeps its lists */
    assert_true(json_is_array(json_object_get(p.cmd.params, "tile")));
    json_decref(params);
    interact_plan_free(&p);
}

static void one_value_is_no_control(void **state)
{
    interact_plan p;
    plan_ok("%matmul --size 64,128 --block 16x16 --tile 8", &p);
    assert_int_equal(p.nctl, 1);
    assert_string_equal(p.ctl[0].key, "size");
    interact_plan_free(&p);
}

static void refusals(void **state)
{
    plan_refused("", "give the command to run");
    plan_refused("   # a comment", "give the command to run");
    plan_refused("%matmol --tile 2,4", "unknown magic %matmol");
    plan_refused("%matmul --size 64", "at least one comma list");
    plan_refused("%device", "at least one comma list");
    plan_refused("%interact %matmul --tile 2,4", "cannot wrap %interact");
    plan_refused("%assert 1 == 1", "%assert runs in the kernel");
    plan_refused("%echo a,b", "%echo runs in the kernel");
    plan_refused("%matmul?", "%help runs in the kernel");
    plan_refused("%%kernel --for matmul --name k", "cell magic");
    plan_refused("%matmul --tile 4,64", "--tile");
    char many[400] = "%matmul --size 1";
    for (int i = 2; i <= INTERACT_MAX_CHOICES + 1; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), ",%d", i);
    plan_refused(many, "takes at most 64");
    plan_refused("%matmul --m 8,16 --n 8,16 --k 8,16 --size 8,16 --tile 4,8 --variant naive,tiled "
                 "--block 8x8,16x16", "at most 6 controls");
}

static void an_error_points_into_the_command(void **state)
{
    interact_plan p;
    error_info err;
    size_t at;
    assert_int_equal(interact_plan_parse(test_lab(), "%matmul --size 64 --tiel 4,8", &p, &err, &at), -1);
    assert_string_equal(err.ename, "UsageError");
    assert_int_equal(at, strlen("%matmul --size 64 "));
    interact_plan_free(&p);
}

static void the_cell_language_checks_it_at_parse_time(void **state)
{
    command *cmds;
    parse_error perr;
    int n = cell_parse(test_lab(), "%interact %matmul --size 64 --tile 4,8  # live", &cmds, &perr);
    assert_int_equal(n, 1);
    assert_true(interact_is(&cmds[0]));
    assert_non_null(strstr(json_string_value(json_object_get(cmds[0].params, "command")), "--tile 4,8"));
    commands_free(cmds, n);
    assert_int_equal(cell_parse(test_lab(), "%echo first\n%interact %matmul --size 64", &cmds, &perr), -1);
    assert_string_equal(perr.error.ename, "UsageError");
    assert_int_equal(perr.line, 2);
    assert_non_null(strstr(perr.error.evalue, "%interact: give %matmul at least one comma list"));
    n = cell_parse(test_lab(), "%echo a,b", &cmds, &perr);
    assert_false(interact_is(&cmds[0]));
    commands_free(cmds, n);
}

/* ---- widget models ---- */

static void has_keys(const json_t *state, const char *const *keys)
{
    for (; *keys; keys++)
        if (!json_object_get(state, *keys))
            fail_msg("%s lacks \"%s\"", json_string_value(json_object_get(state, "_model_name")), *keys);
}

static const char *const common_keys[] = { "_model_module", "_model_module_version", "_model_name",
                                           "_view_module", "_view_module_version", "_view_name",
                                           "_view_count", NULL };

static void model_states_have_every_key(void **state)
{
    json_t *labels = json_pack("[s,s]", "4", "8");
    json_t *layout = widget_layout(), *sstyle = widget_slider_style(), *dstyle = widget_description_style();
    json_t *slider = widget_selection_slider("tile", labels, 1, "L", "S");
    json_t *drop = widget_dropdown("variant", labels, 0, "L", "D");
    json_t *out = widget_output("L");
    const char *kids[] = { "A", "B" };
    json_t *box = widget_vbox(kids, 2, "L");
    json_t *all[] = { layout, sstyle, dstyle, slider, drop, out, box };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        has_keys(all[i], common_keys);
    static const char *const layout_keys[] = { "width", "height", "display", "margin", "grid_area", NULL };
    has_keys(layout, layout_keys);
    assert_string_equal(json_string_value(json_object_get(layout, "_model_module_version")), "2.0.0");
    static const char *const select_keys[] = { "_options_labels", "index", "description", "disabled",
                                               "layout", "style", "_dom_classes", "tabbable", "tooltip",
                                               "description_allow_html", NULL };
    has_keys(slider, select_keys);
    has_keys(drop, select_keys);
    static const char *const slider_keys[] = { "behavior", "continuous_update", "orientation", "readout", NULL };
    has_keys(slider, slider_keys);
    assert_string_equal(json_string_value(json_object_get(slider, "_model_name")), "SelectionSliderModel");
    assert_int_equal(json_integer_value(json_object_get(slider, "index")), 1);
    assert_string_equal(json_string_value(json_object_get(slider, "layout")), "IPY_MODEL_L");
    assert_string_equal(json_string_value(json_object_get(slider, "style")), "IPY_MODEL_S");
    assert_string_equal(json_string_value(json_object_get(drop, "_model_name")), "DropdownModel");
    static const char *const out_keys[] = { "msg_id", "outputs", "layout", NULL };
    has_keys(out, out_keys);
    assert_string_equal(json_string_value(json_object_get(out, "_model_module")), "@jupyter-widgets/output");
    assert_string_equal(json_string_value(json_object_get(out, "_model_module_version")), "1.0.0");
    assert_string_equal(json_string_value(json_array_get(json_object_get(box, "children"), 1)), "IPY_MODEL_B");
    static const char *const style_keys[] = { "description_width", "handle_color", NULL };
    has_keys(sstyle, style_keys);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        json_decref(all[i]);
    json_decref(labels);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numeric_lists_are_sliders_names_drop_downs),
        cmocka_unit_test(a_run_has_one_value_per_list),
        cmocka_unit_test(one_value_is_no_control),
        cmocka_unit_test(refusals),
        cmocka_unit_test(an_error_points_into_the_command),
        cmocka_unit_test(the_cell_language_checks_it_at_parse_time),
        cmocka_unit_test(model_states_have_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
