/* widget.c — the widget models' states (widget.h), key for key as ipywidgets
 * 8.1 sends them. */
#include "shell/widget.h"

#include <stdbool.h>

#define BASE "@jupyter-widgets/base"
#define CONTROLS "@jupyter-widgets/controls"
#define OUTPUT "@jupyter-widgets/output"
#define MODULES_VERSION "2.0.0"
#define OUTPUT_VERSION "1.0.0"

json_t *widget_ref(const char *id)
{
    return json_sprintf("IPY_MODEL_%s", id);
}

/* The keys every model has: which class on either side, and its view count. */
static json_t *model(const char *module, const char *version, const char *name, const char *view_module,
                     const char *view_version, const char *view)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:n}", "_model_module", module, "_model_module_version",
                     version, "_model_name", name, "_view_module", view_module, "_view_module_version",
                     view_version, "_view_name", view, "_view_count");
}

/* The keys of a DOMWidget (a control, the output, the box). */
static json_t *dom_widget(const char *module, const char *version, const char *name, const char *view,
                          const char *layout)
{
    json_t *s = model(module, version, name, module, version, view);
    json_object_set_new(s, "_dom_classes", json_array());
    json_object_set_new(s, "layout", widget_ref(layout));
    json_object_set_new(s, "tabbable", json_null());
    json_object_set_new(s, "tooltip", json_null());
    return s;
}

static const char *const layout_keys[] = {
    "align_content", "align_items", "align_self", "border_bottom", "border_left", "border_right", "border_top",
    "bottom", "display", "flex", "flex_flow", "grid_area", "grid_auto_columns", "grid_auto_flow",
    "grid_auto_rows", "grid_column", "grid_gap", "grid_row", "grid_template_areas", "grid_template_columns",
    "grid_template_rows", "height", "justify_content", "justify_items", "left", "margin", "max_height",
    "max_width", "min_height", "min_width", "object_fit", "object_position", "order", "overflow", "padding",
    "right", "top", "visibility", "width", NULL,
};

json_t *widget_layout(void)
{
    json_t *s = model(BASE, MODULES_VERSION, "LayoutModel", BASE, MODULES_VERSION, "LayoutView");
    for (int i = 0; layout_keys[i]; i++)
        json_object_set_new(s, layout_keys[i], json_null());
    return s;
}

/* "initial": the description takes the width of its text, so "variant" is not cut. */
static json_t *style(const char *name)
{
    json_t *s = model(CONTROLS, MODULES_VERSION, name, BASE, MODULES_VERSION, "StyleView");
    json_object_set_new(s, "description_width", json_string("initial"));
    return s;
}

json_t *widget_slider_style(void)
{
    json_t *s = style("SliderStyleModel");
    json_object_set_new(s, "handle_color", json_null());
    return s;
}

json_t *widget_description_style(void)
{
    return style("DescriptionStyleModel");
}

/* What a selection control (a slider or a drop-down) shares. */
static json_t *selection(const char *name, const char *view, const char *description, const json_t *labels,
                         int index, const char *layout, const char *style_id)
{
    json_t *s = dom_widget(CONTROLS, MODULES_VERSION, name, view, layout);
    json_object_set_new(s, "_options_labels", json_deep_copy(labels));
    json_object_set_new(s, "index", json_integer(index));
    json_object_set_new(s, "description", json_string(description));
    json_object_set_new(s, "description_allow_html", json_false());
    json_object_set_new(s, "disabled", json_false());
    json_object_set_new(s, "style", widget_ref(style_id));
    return s;
}

json_t *widget_selection_slider(const char *description, const json_t *labels, int index, const char *layout,
                                const char *style_id)
{
    json_t *s = selection("SelectionSliderModel", "SelectionSliderView", description, labels, index, layout,
                          style_id);
    json_object_set_new(s, "behavior", json_string("drag-tap"));
    /* a run takes a while: re-run where the slider is let go, not at every
     * value it passes while dragged */
    json_object_set_new(s, "continuous_update", json_false());
    json_object_set_new(s, "orientation", json_string("horizontal"));
    json_object_set_new(s, "readout", json_true());
    return s;
}

json_t *widget_dropdown(const char *description, const json_t *labels, int index, const char *layout,
                        const char *style_id)
{
    return selection("DropdownModel", "DropdownView", description, labels, index, layout, style_id);
}

json_t *widget_output(const char *layout)
{
    json_t *s = dom_widget(OUTPUT, OUTPUT_VERSION, "OutputModel", "OutputView", layout);
    json_object_set_new(s, "msg_id", json_string(""));
    json_object_set_new(s, "outputs", json_array());
    return s;
}

json_t *widget_vbox(const char *const *children, int n, const char *layout)
{
    json_t *s = dom_widget(CONTROLS, MODULES_VERSION, "VBoxModel", "VBoxView", layout);
    json_t *kids = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(kids, widget_ref(children[i]));
    json_object_set_new(s, "children", kids);
    json_object_set_new(s, "box_style", json_string(""));
    return s;
}
